/// <reference types="node" />
/**
 * The wrangler commands the operator scripts need, run as child processes of the project's own
 * wrangler (node_modules/.bin) from the repository root, so they work from any directory and use
 * the same wrangler.toml, migrations folder and local state as `npm start`. SQL on a local
 * database runs in this process instead (scripts/lib/local-d1.ts: the same files, no wrangler
 * process of 4 CPU s per call).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { localD1 } from "./local-d1";
import { splitSqlStatements } from "./split-sql";
import { REPO_ROOT, d1Bindings } from "./wrangler-config";

export { REPO_ROOT, d1Bindings, d1Databases } from "./wrangler-config";
export const WRANGLER_BIN = join(REPO_ROOT, "node_modules", ".bin", "wrangler");

/** Where a D1 command runs: the local database (optionally in another directory) or the deployed one. */
export type D1Target = { remote: true } | { remote: false; persistTo?: string };

/**
 * The deployed databases are named by the deploy config `npm run provision` writes (wrangler.toml
 * keeps the placeholder ids that key npm start's local databases).
 */
export const DEPLOY_CONFIG = "wrangler.production.toml";
const DEPLOY_CONFIG_PATH = join(REPO_ROOT, DEPLOY_CONFIG);

export function d1TargetArgs(target: D1Target): string[] {
  if (target.remote) return ["--remote", ...(existsSync(DEPLOY_CONFIG_PATH) ? ["--config", DEPLOY_CONFIG_PATH] : [])];
  return ["--local", ...(target.persistTo ? ["--persist-to", resolve(target.persistTo)] : [])];
}

/** Environment for wrangler children: no telemetry prompts or uploads from operator scripts. */
export function wranglerEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return { ...process.env, WRANGLER_SEND_METRICS: "false", ...extra };
}

export interface CapturedRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The wrangler commands runWrangler started that are still running. */
const running = new Set<ChildProcess>();

/**
 * Signals every wrangler command still running (npm start stops them when it is stopped itself,
 * whatever it was doing: applying migrations, seeding).
 */
export function stopRunningWranglers(signal: NodeJS.Signals = "SIGTERM"): void {
  for (const child of running) child.kill(signal);
}

/** Runs wrangler to completion with stdin closed (non-interactive: prompts take their default). */
export function runWrangler(args: string[]): Promise<CapturedRun> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(WRANGLER_BIN, args, { cwd: REPO_ROOT, env: wranglerEnv(), stdio: ["ignore", "pipe", "pipe"] });
    running.add(child);
    child.on("exit", () => running.delete(child));
    child.on("error", () => running.delete(child));
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code) => resolvePromise({ code, stdout, stderr }));
  });
}

/** One statement's answer from `wrangler d1 execute --json`. */
export interface D1StatementResult {
  results: Record<string, unknown>[];
  success: boolean;
  meta?: Record<string, unknown>;
}

export class WranglerError extends Error {
  constructor(
    message: string,
    readonly output: string,
  ) {
    super(message);
    this.name = "WranglerError";
  }
}

/** The message of wrangler's JSON error answer (`{"error": {"text": ...}}`), if that is what it printed. */
function jsonErrorText(stdout: string): string | undefined {
  try {
    const parsed = JSON.parse(stdout) as { error?: { text?: unknown } };
    return typeof parsed.error?.text === "string" ? parsed.error.text : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Executes SQL (one or more statements separated by `;`) on a D1 database (the catalog, DB, unless
 * another binding is named) and returns one result per statement, all or nothing (one D1 batch).
 * Throws a WranglerError carrying D1's own message.
 */
export async function executeD1(sql: string, target: D1Target, binding = "DB"): Promise<D1StatementResult[]> {
  return target.remote ? executeRemoteD1(sql, target, binding) : executeLocalD1(sql, target.persistTo, binding);
}

/**
 * The local database was locked by the service's workerd beside (SQLite busy, which miniflare's
 * D1 answers as an "internal error; reference = ..." and workerd logs as SQLITE_BUSY): seen when a
 * command read the catalog while a move wrote it. The batch is one transaction that SQLite rolled
 * back, so it is tried again, for about 10 s in all; a `wrangler d1 execute` failed at once.
 */
const LOCKED = /SQLITE_BUSY|database is locked|internal error; reference =/;
const LOCKED_ATTEMPTS = 14;

/**
 * A local database's answer as `wrangler d1 execute --local --json` gives it (its executeLocally:
 * the statements in one batch; arrays, which are BLOBs, as "[1, 2]"; of the meta only the
 * duration, so a local shard's size comes from the catalog as before: scripts/lib/shard-report.ts).
 */
async function executeLocalD1(sql: string, persistTo: string | undefined, binding: string): Promise<D1StatementResult[]> {
  const db = await localD1(binding, persistTo);
  const statements = (() => {
    try {
      return splitSqlStatements(sql);
    } catch (error) {
      throw new WranglerError(error instanceof Error ? error.message : String(error), "");
    }
  })();
  let results: D1Result<Record<string, unknown>>[];
  for (let attempt = 1; ; attempt++) {
    try {
      results = await db.batch(statements.map((statement) => db.prepare(statement)));
      break;
    } catch (error) {
      const cause = (error as { cause?: unknown }).cause ?? error;
      const message = cause instanceof Error ? cause.message : String(cause);
      if (attempt < LOCKED_ATTEMPTS && LOCKED.test(message)) {
        await new Promise((r) => setTimeout(r, 100 * attempt));
        continue;
      }
      throw new WranglerError(message, "");
    }
  }
  return results.map((result) => ({
    results: (result.results ?? []).map((row) => Object.fromEntries(Object.entries(row).map(([key, value]) => [key, Array.isArray(value) ? `[${value.join(", ")}]` : value]))),
    success: result.success,
    meta: { duration: result.meta?.duration },
  }));
}

async function executeRemoteD1(sql: string, target: D1Target, binding: string): Promise<D1StatementResult[]> {
  const run = await runWrangler(["d1", "execute", binding, ...d1TargetArgs(target), "--json", "--yes", "--command", sql]);
  const output = `${run.stdout}\n${run.stderr}`.trim();
  if (run.code !== 0) {
    // Wrangler's own message says it all when it answered in JSON; otherwise show what it printed.
    const text = jsonErrorText(run.stdout);
    throw text ? new WranglerError(text, "") : new WranglerError(`wrangler d1 execute exited with code ${run.code}`, output);
  }
  try {
    const parsed = JSON.parse(run.stdout) as D1StatementResult[];
    if (!Array.isArray(parsed)) throw new Error("not an array");
    return parsed;
  } catch {
    throw new WranglerError("wrangler d1 execute printed no JSON result", output);
  }
}

/**
 * `wrangler d1 migrations apply` for every D1 binding (the catalog's folder for DB, the shards'
 * folder for each shard) on the target; idempotent (applies only what is missing).
 */
export async function applyMigrations(target: D1Target): Promise<void> {
  for (const binding of d1Bindings()) {
    const run = await runWrangler(["d1", "migrations", "apply", binding, ...d1TargetArgs(target)]);
    if (run.code !== 0) {
      throw new WranglerError(`wrangler d1 migrations apply ${binding} exited with code ${run.code}`, `${run.stdout}\n${run.stderr}`.trim());
    }
  }
}
