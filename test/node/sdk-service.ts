/**
 * The real service for end-to-end tests of the `galileo` SDK: a fresh local D1 database in a
 * temporary directory (a copy of databases migrated once per set of migrations:
 * test/node/migrated-state.ts), an
 * organization, user and API key created in it with the provisioning statements the admin
 * command line uses (three `npm run admin` calls cost about ten seconds more), and `wrangler dev`
 * on a free loopback port with its own token secret. The provisioning statements and each of the
 * tests' reads go through one workerd opened on the same state directory for every database
 * (test/node/local-d1.ts), not a `wrangler d1 execute` process per read and database (those
 * were 87 CPU s of sdk-end-to-end). Stopped by its process group (wrangler and the workerd it
 * starts).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { rm } from "node:fs/promises";
import { createServer } from "node:net";
import { join, resolve } from "node:path";
import { createApiKey, createOrganization, createUser, runStatements } from "../../src/admin/provisioning";
import { openLocalD1 } from "./local-d1";
import { migratedStateDir } from "./migrated-state";

const ROOT = resolve(import.meta.dirname, "../..");
const WRANGLER = join(ROOT, "node_modules", ".bin", "wrangler");
/** Non-interactive wrangler: no prompts, no hotkeys, no update checks. */
const WRANGLER_ENV = { ...process.env, CI: "1", WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" };

export interface Tenant {
  organizationId: string;
  userId: string;
  email: string;
  password: string;
  apiKey: string;
}

export interface RunningService {
  /** http://127.0.0.1:<port> */
  origin: string;
  /** What GALILEO_API_URL is set to: the origin plus /v2. */
  apiUrl: string;
  tenant: Tenant;
  /** Runs SQL against the service's database (read-only use in tests); one result set per statement. */
  sql<T = Record<string, unknown>>(query: string): Promise<T[][]>;
  /** Everything wrangler printed, for failure messages. */
  output(): string;
  /** Where miniflare keeps the service's state (the D1 sqlite files among it); removed by stop(). */
  persistDir: string;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolvePort(address.port) : reject(new Error("no port"))));
    });
  });
}

async function waitUntilHealthy(origin: string, child: ChildProcess, output: () => string, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`wrangler dev exited (${child.exitCode}):\n${output()}`);
    try {
      const response = await fetch(`${origin}/healthcheck`);
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`wrangler dev did not become healthy in ${timeoutMs} ms:\n${output()}`);
}

/**
 * A read through the shared workerd, again when SQLite says the database was busy: the service's
 * own workerd writes the same files meanwhile, and a read whose snapshot a write overtook fails
 * with SQLITE_BUSY_SNAPSHOT (workerd reports it as an internal error); the next attempt reads a
 * fresh snapshot. (A `wrangler d1 execute` per read never met it: a new connection each time.)
 */
async function readRetryingBusy<R>(read: () => Promise<R>): Promise<R> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await read();
    } catch (error) {
      if (attempt >= 20 || !/SQLITE_BUSY|database is locked|internal error/i.test(String(error))) throw error;
      await new Promise((r) => setTimeout(r, 50 * attempt));
    }
  }
}

/**
 * `vars`: wrangler.toml [vars] overridden for this service (e.g. a lower scan time share).
 * `testScheduled`: serve `/__scheduled`, the worker's cron handler run by hand (the alerts' tests).
 */
export async function startService(options: { vars?: Record<string, string>; testScheduled?: boolean } = {}): Promise<RunningService> {
  // Every database wrangler.toml declares, migrated: the catalog and the data shards.
  const persistDir = await migratedStateDir("trace-store-sdk-");

  const unique = randomBytes(6).toString("hex");
  const organization = createOrganization(`sdk-e2e-${unique}`);
  const email = `sdk-${unique}@example.com`;
  const password = `pw-${randomBytes(12).toString("hex")}`;
  const user = await createUser({ organizationId: organization.organization_id, email, password, role: "admin" });
  const key = await createApiKey(user.user_id);
  const provisioning = await openLocalD1(persistDir);
  try {
    await runStatements(provisioning.databases.DB!, [...organization.statements, ...user.statements, ...key.statements]);
  } finally {
    await provisioning.dispose();
  }

  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const child = spawn(
    WRANGLER,
    [
      "dev",
      "--ip", "127.0.0.1",
      "--port", String(port),
      // One the system picks: wrangler's 9229, probed by two servers at the same moment, is taken
      // by both and one dies (EADDRINUSE).
      "--inspector-port", "0",
      "--persist-to", persistDir,
      "--var", `TOKEN_SECRET:${randomBytes(32).toString("hex")}`,
      ...Object.entries(options.vars ?? {}).flatMap(([name, value]) => ["--var", `${name}:${value}`]),
      "--show-interactive-dev-session=false",
      "--log-level", process.env.WLOG ?? "warn",
      ...(options.testScheduled ? ["--test-scheduled"] : []),
    ],
    // Its own process group, so that stopping it stops the workerd it starts too.
    { cwd: ROOT, env: WRANGLER_ENV, detached: true, stdio: ["ignore", "pipe", "pipe"] },
  );
  let log = "";
  child.stdout!.on("data", (chunk) => (log += chunk));
  child.stderr!.on("data", (chunk) => (log += chunk));
  const output = () => log;

  const stop = async () => {
    if (child.exitCode === null && child.pid !== undefined) {
      const exited = new Promise((r) => child.once("exit", r));
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {
        // already gone
      }
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
      if (child.exitCode === null) {
        try {
          process.kill(-child.pid, "SIGKILL");
        } catch {
          // already gone
        }
      }
    }
    await rm(persistDir, { recursive: true, force: true });
  };

  try {
    await waitUntilHealthy(origin, child, output);
  } catch (error) {
    await stop();
    throw error;
  }

  return {
    origin,
    apiUrl: `${origin}/v2`,
    persistDir,
    tenant: { organizationId: organization.organization_id, userId: user.user_id, email, password, apiKey: key.api_key },
    /**
     * The rows of each `;`-separated statement. Records live on the data shards (docs/sharding.md):
     * a statement on the catalog's own tables runs on the catalog, any other on every database
     * that may hold records, their rows concatenated (an aggregate's one row summed). Each
     * statement on its own, through the shared workerd, again when SQLite was busy.
     */
    async sql<T>(query: string) {
      const statements = query.split(";").map((part) => part.trim()).filter(Boolean);
      const onCatalog = statements.map((statement) => /\b(projects|organizations|users|api_keys|org_jobs|org_job_shards|shards)\b/.test(statement) || /^SELECT [^;]* FROM runs\b/i.test(statement));
      // A workerd per read, stopped after it: one kept open beside the service's own read a
      // snapshot that never moved on (and held SQLite's lock), so streamed records never looked
      // complete. Still one process for every database instead of a wrangler per database.
      const d1 = await openLocalD1(persistDir);
      const perDatabase = await Promise.all(
        Object.entries(d1.databases).map(async ([binding, db]) => {
          const mine = statements.map((statement, i) => (binding === "DB" || !onCatalog[i] ? statement : null));
          const sent = mine.filter((m): m is string => m !== null);
          if (sent.length === 0) return mine.map(() => null);
          const results: T[][] = [];
          for (const statement of sent) results.push(await readRetryingBusy(() => db.prepare(statement).all<T>()).then((r) => r.results));
          let next = 0;
          return mine.map((m) => (m === null ? null : results[next++]!));
        }),
      ).finally(() => d1.dispose());
      return statements.map((statement, i) => {
        const rows = perDatabase.flatMap((answers) => answers[i] ?? []);
        const aggregate = /^SELECT\s+(count|sum)\(/i.test(statement) && !/\bGROUP\s+BY\b/i.test(statement);
        if (!aggregate || rows.length <= 1) return rows;
        const summed = { ...rows[0] } as Record<string, unknown>;
        for (const key of Object.keys(summed)) summed[key] = rows.reduce((sum, row) => sum + Number((row as Record<string, unknown>)[key] ?? 0), 0);
        return [summed as T];
      });
    },
    output,
    stop,
  };
}
