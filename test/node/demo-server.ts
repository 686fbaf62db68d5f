/// <reference types="node" />
/**
 * `npm start` as a user runs it, for the browser tests: in a temporary state directory, on a free
 * loopback port, with the demo dataset it seeds. Resolves once the banner is printed, with the
 * credentials it saved; stop() ends it (SIGTERM, which it passes on to wrangler) and removes the
 * directory.
 * The directory starts with the migrated databases (test/node/migrated-state.ts), so npm start's
 * own `wrangler d1 migrations apply` finds nothing to apply, as on a user's second start;
 * test/node/start-demo.test.ts runs the first start, from an empty directory.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { freePort } from "../../scripts/lib/local-server";
import type { DemoCredentials } from "../../scripts/lib/seed-demo";
import { migratedStateDir } from "./migrated-state";

const ROOT = resolve(import.meta.dirname, "../..");

export interface DemoServer {
  origin: string;
  demo: DemoCredentials;
  output(): string;
  stop(): Promise<void>;
}

export async function startDemoServer(timeoutMs = 600_000): Promise<DemoServer> {
  const persistTo = await migratedStateDir("trace-store-ui-");
  const port = await freePort();
  // What package.json's start runs (`node --import tsx scripts/start.ts`).
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", "scripts/start.ts", "--persist-to", persistTo], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port), INSPECTOR_PORT: "0", WRANGLER_SEND_METRICS: "false" },
    stdio: ["ignore", "pipe", "pipe"],
    // Its own process group, so that a start that hangs past the SIGKILL below is still ended
    // whole (wrangler and workerd with it).
    detached: true,
  });
  let text = "";
  child.stdout!.setEncoding("utf8").on("data", (d: string) => (text += d));
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (text += d));

  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // The group is gone already.
    }
  };
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      const timer = setTimeout(() => signalGroup("SIGKILL"), 15_000);
      await exited;
      clearTimeout(timer);
    }
    // Whatever of the group outlived npm start (wrangler, workerd) goes with it.
    signalGroup("SIGKILL");
    rmSync(persistTo, { recursive: true, force: true });
  };

  try {
    await new Promise<void>((resolvePromise, reject) => {
      const deadline = Date.now() + timeoutMs;
      const timer = setInterval(() => {
        if (text.includes("Press Ctrl+C to stop.")) finish();
        else if (child.exitCode !== null) finish(new Error(`npm start exited with ${child.exitCode}:\n${text}`));
        else if (Date.now() > deadline) finish(new Error(`npm start printed no banner in ${timeoutMs / 1000} s:\n${text}`));
      }, 200);
      function finish(error?: Error) {
        clearInterval(timer);
        if (error) reject(error);
        else resolvePromise();
      }
    });
  } catch (error) {
    await stop();
    throw error;
  }
  const demo = JSON.parse(readFileSync(join(persistTo, "demo-credentials.json"), "utf8")) as DemoCredentials;
  return { origin: `http://127.0.0.1:${port}`, demo, output: () => text, stop };
}
