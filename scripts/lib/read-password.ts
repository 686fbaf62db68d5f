/// <reference types="node" />
/**
 * A password for the admin command line, never from its arguments (which shell history and the
 * process list show): typed at a prompt that does not echo when standard input is a terminal,
 * else the whole of standard input, without its final line break (`printf '%s' "$PW" | ...` or
 * `... < file`).
 */
import { createInterface } from "node:readline";
import { Writable } from "node:stream";

export async function readPassword(prompt: string): Promise<string> {
  if (!process.stdin.isTTY) {
    let text = "";
    for await (const chunk of process.stdin) text += typeof chunk === "string" ? chunk : chunk.toString("utf8");
    return passwordFromInput(text);
  }
  process.stderr.write(prompt);
  // Typed characters go nowhere: the prompt is written above, the answer never echoed.
  const silent = new Writable({ write: (_chunk, _encoding, done) => done() });
  const reader = createInterface({ input: process.stdin, output: silent, terminal: true });
  try {
    return await new Promise<string>((resolve) => reader.question("", resolve));
  } finally {
    reader.close();
    process.stderr.write("\n");
  }
}

/** The password a piped standard input holds: all of it, without its final line break. */
export function passwordFromInput(text: string): string {
  return text.replace(/\r?\n$/, "");
}
