/// <reference types="node" />
/**
 * Running the worker locally with `wrangler dev` on a loopback port: port checks, start, readiness
 * and stop. Used by `npm start` and by the Node tests that need the whole service.
 */
import { type ChildProcess, type StdioOptions, spawn } from "node:child_process";
import { createServer } from "node:net";
import { resolve } from "node:path";
import { REPO_ROOT, WRANGLER_BIN, wranglerEnv } from "./wrangler";

export const LOOPBACK = "127.0.0.1";

/** Whether nothing listens on the loopback port (so a healthcheck there would reach our server). */
export function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolvePromise) => {
    const server = createServer();
    server.once("error", () => resolvePromise(false));
    server.listen(port, LOOPBACK, () => server.close(() => resolvePromise(true)));
  });
}

/** A port that was free a moment ago (the kernel's choice). */
export function freePort(): Promise<number> {
  return new Promise((resolvePromise, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, LOOPBACK, () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolvePromise(port));
    });
  });
}

export interface DevServerOptions {
  port: number;
  /** Local state directory (D1 and queues); wrangler's default is .wrangler/state. */
  persistTo?: string;
  /** Extra `--var NAME:VALUE` bindings (tests pass TOKEN_SECRET this way). */
  vars?: Record<string, string>;
  stdio?: StdioOptions;
  /**
   * The inspector's port. Unset: wrangler's own choice, 9229 when free (what a developer's
   * debugger expects). 0: one the system picks, for servers started side by side (tests): two
   * wranglers probing 9229 at the same moment both take it and one dies with "Address already in
   * use (127.0.0.1:9229)".
   */
  inspectorPort?: number;
}

export function startDevServer(options: DevServerOptions): ChildProcess {
  // --test-scheduled: GET /__scheduled runs the cron's maintenance and retention expiry by hand
  // (docs/operations.md, "Scheduled maintenance"). Not /cdn-cgi/handler/scheduled: with static assets,
  // wrangler 4.86's miniflare hands that event to the assets router, which has no scheduled
  // handler (workers-sdk#9882, fixed after our pinned version); /__scheduled is in
  // run_worker_first so that it reaches the worker.
  const args = ["dev", "--ip", LOOPBACK, "--port", String(options.port), "--show-interactive-dev-session=false", "--test-scheduled"];
  if (options.persistTo) args.push("--persist-to", resolve(options.persistTo));
  if (options.inspectorPort !== undefined) args.push("--inspector-port", String(options.inspectorPort));
  for (const [name, value] of Object.entries(options.vars ?? {})) args.push("--var", `${name}:${value}`);
  return spawn(WRANGLER_BIN, args, { cwd: REPO_ROOT, env: wranglerEnv(), stdio: options.stdio ?? "inherit" });
}

/** Resolves once GET /healthcheck answers 200; rejects if the server exits or the time runs out. */
export async function waitUntilHealthy(baseUrl: string, server: ChildProcess, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited = server.exitCode !== null || server.signalCode !== null;
  const onExit = () => (exited = true);
  server.once("exit", onExit);
  try {
    while (Date.now() < deadline) {
      if (exited) throw new Error(`wrangler dev exited (code ${server.exitCode ?? server.signalCode}) before it answered ${baseUrl}/healthcheck`);
      try {
        const response = await fetch(`${baseUrl}/healthcheck`, { signal: AbortSignal.timeout(2_000) });
        if (response.ok) return;
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`${baseUrl}/healthcheck did not answer within ${Math.round(timeoutMs / 1000)} s`);
  } finally {
    server.off("exit", onExit);
  }
}

/** Stops the server by its process id and waits for it (and its workerd) to exit. */
export async function stopDevServer(server: ChildProcess, timeoutMs = 15_000): Promise<void> {
  if (server.exitCode !== null || server.signalCode !== null) return;
  const exited = new Promise<void>((r) => server.once("exit", () => r()));
  server.kill("SIGTERM");
  const timer = setTimeout(() => server.kill("SIGKILL"), timeoutMs);
  await exited;
  clearTimeout(timer);
}

