/// <reference types="node" />
/**
 * The local D1 databases of a state directory (wrangler's --persist-to), opened in one workerd
 * through wrangler's `getPlatformProxy`: the same SQLite files `wrangler dev` and
 * `wrangler d1 execute --local` use (wrangler.toml's ids name them). A node test reads its
 * service's databases, and the migrated template is built, through one of these instead of a
 * `wrangler d1 ...` process per call (each a new workerd, seconds of CPU: the SDK tests' reads
 * were 87 CPU s of one file, the template's `wrangler d1 migrations apply` a minute).
 */
import { readD1Migrations } from "@cloudflare/vitest-plugin";
import { join } from "node:path";
import { getPlatformProxy } from "wrangler";
import { REPO_ROOT, d1Bindings } from "../../scripts/lib/wrangler";

export interface LocalD1 {
  /** Every database wrangler.toml declares, by binding (DB, SHARD_0, ...). */
  databases: Record<string, D1Database>;
  dispose(): Promise<void>;
}

export async function openLocalD1(persistTo: string): Promise<LocalD1> {
  const proxy = await getPlatformProxy<Record<string, unknown>>({
    configPath: join(REPO_ROOT, "wrangler.toml"),
    // wrangler dev --persist-to DIR keeps its databases under DIR/v3.
    persist: { path: join(persistTo, "v3") },
    remoteBindings: false,
    envFiles: [],
  });
  const databases: Record<string, D1Database> = {};
  for (const binding of d1Bindings()) databases[binding] = proxy.env[binding] as D1Database;
  return { databases, dispose: () => proxy.dispose() };
}

/** wrangler.toml's migrations_dir of each D1 binding. */
function migrationsDirs(): Record<string, string> {
  return { DB: "migrations", ...Object.fromEntries(d1Bindings().filter((b) => b !== "DB").map((b) => [b, "migrations/shard"])) };
}

/**
 * Applies the migrations each database lacks, as `wrangler d1 migrations apply` does: each
 * migration's statements and its row in d1_migrations in one batch (the table and splitting of
 * @cloudflare/vitest-plugin's applyD1Migrations, which are wrangler's), so that a later
 * `wrangler d1 migrations apply` (npm start's) finds nothing to apply.
 */
export async function applyMigrationsLocally(d1: LocalD1): Promise<void> {
  const dirs = migrationsDirs();
  const byDir = new Map<string, Awaited<ReturnType<typeof readD1Migrations>>>();
  for (const dir of new Set(Object.values(dirs))) byDir.set(dir, await readD1Migrations(join(REPO_ROOT, dir)));
  await Promise.all(
    Object.entries(d1.databases).map(async ([binding, db]) => {
      await db.prepare(`CREATE TABLE IF NOT EXISTS d1_migrations(
		id         INTEGER PRIMARY KEY AUTOINCREMENT,
		name       TEXT UNIQUE,
		applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL
);`).run();
      const applied = new Set((await db.prepare("SELECT name FROM d1_migrations").all<{ name: string }>()).results.map((r) => r.name));
      for (const migration of byDir.get(dirs[binding]!)!) {
        if (applied.has(migration.name)) continue;
        await db.batch([...migration.queries.map((query) => db.prepare(query)), db.prepare("INSERT INTO d1_migrations (name) VALUES (?)").bind(migration.name)]);
      }
    }),
  );
}
