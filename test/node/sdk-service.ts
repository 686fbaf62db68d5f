/**
 * The real service for end-to-end tests of the `galileo` SDK: a fresh local D1 database in a
 * temporary directory (a copy of the migrations applied once per test run by `wrangler d1
 * migrations apply`, as an operator applies them: test/node/migrated-state.ts), an
 * organization, user and API key created in it with the provisioning statements the admin
 * command line uses (rendered into one `wrangler d1 execute`: three `npm run admin` calls cost
 * about ten seconds more), and `wrangler dev` on a free loopback port with its own token secret.
 * Stopped by its process group (wrangler and the workerd it starts).
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { rm } from "node:fs/promises";
import { createServer } from "node:net";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { createApiKey, createOrganization, createUser, renderSql } from "../../src/admin/provisioning";
import { d1Bindings } from "../../scripts/lib/wrangler";
import { migratedStateDir } from "./migrated-state";

const execFileAsync = promisify(execFile);

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

async function wrangler(args: string[]): Promise<string> {
  const { stdout } = await execFileAsync(WRANGLER, args, { cwd: ROOT, env: WRANGLER_ENV, maxBuffer: 64 * 1024 * 1024 });
  return stdout;
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

export async function startService(): Promise<RunningService> {
  // Every database wrangler.toml declares, migrated: the catalog and the data shards.
  const persistDir = await migratedStateDir("trace-store-sdk-");
  const d1 = ["DB", "--local", "--persist-to", persistDir];

  const unique = randomBytes(6).toString("hex");
  const organization = createOrganization(`sdk-e2e-${unique}`);
  const email = `sdk-${unique}@example.com`;
  const password = `pw-${randomBytes(12).toString("hex")}`;
  const user = await createUser({ organizationId: organization.organization_id, email, password, role: "admin" });
  const key = await createApiKey(user.user_id);
  await wrangler(["d1", "execute", ...d1, "--command", renderSql([...organization.statements, ...user.statements, ...key.statements])]);

  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const child = spawn(
    WRANGLER,
    [
      "dev",
      "--ip", "127.0.0.1",
      "--port", String(port),
      "--persist-to", persistDir,
      "--var", `TOKEN_SECRET:${randomBytes(32).toString("hex")}`,
      "--show-interactive-dev-session=false",
      "--log-level", "warn",
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
     * that may hold records, their rows concatenated (an aggregate's one row summed). One
     * wrangler call per database.
     */
    async sql<T>(query: string) {
      const statements = query.split(";").map((part) => part.trim()).filter(Boolean);
      const onCatalog = statements.map((statement) => /\b(projects|organizations|users|api_keys|org_jobs|org_job_shards|shards)\b/.test(statement) || /^SELECT [^;]* FROM runs\b/i.test(statement));
      const perDatabase = await Promise.all(
        d1Bindings().map(async (binding) => {
          const mine = statements.map((statement, i) => (binding === "DB" || !onCatalog[i] ? statement : null));
          const sent = mine.filter((m): m is string => m !== null);
          if (sent.length === 0) return mine.map(() => null);
          const output = await wrangler(["d1", "execute", binding, ...d1.slice(1), "--json", "--command", sent.join(";\n")]);
          const results = (JSON.parse(output) as { results: T[] }[]).map((r) => r.results);
          let next = 0;
          return mine.map((m) => (m === null ? null : results[next++]!));
        }),
      );
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
