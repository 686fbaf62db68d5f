/// <reference types="node" />
/**
 * Which migrations the local databases lack, and applying them, in this process
 * (scripts/lib/local-d1.ts: one workerd on wrangler's state files) the way
 * `wrangler d1 migrations apply --local` does: each database's migrations_dir's `.sql` files
 * against the names in its d1_migrations table, each missing migration's statements (split by
 * wrangler's own splitter) and its row in d1_migrations in one batch, in wrangler's order. A later
 * `wrangler d1 migrations list|apply --local` finds them applied (test/node/local-migrations.test.ts).
 *
 * Why not wrangler's apply: a process per database, each loading wrangler's 12.7 MB bundle and
 * starting a new workerd for every migration it applies (its local execute makes a Miniflare per
 * call): from empty, 119 CPU s and 303 s wall at load 11, against 15 CPU s and 29 s here (issue
 * 36), paid by every newcomer's first `npm start` and by start-demo's test. The deployed databases (--remote)
 * stay with wrangler (`npm run db:migrate`).
 */
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { closeLocalD1, localD1, localD1Exists } from "./local-d1";
import { REPO_ROOT, d1Databases } from "./wrangler-config";

/** wrangler's default migrations table (wrangler.toml sets no migrations_table). */
const MIGRATIONS_TABLE = "d1_migrations";

/** The migration files of a folder, in the order wrangler applies them (by their number, a stable sort of the listing). */
function migrationNames(migrationsDir: string): string[] {
  const dir = join(REPO_ROOT, migrationsDir);
  if (!existsSync(dir)) return [];
  const number = (name: string) => parseInt(name.split("_")[0]!);
  return readdirSync(dir)
    .filter((name) => name.endsWith(".sql"))
    .sort()
    .sort((a, b) => (number(a) < number(b) ? -1 : number(a) > number(b) ? 1 : 0));
}

/** The migrations of `migrationsDir` a local database has not applied (none yet without wrangler's table), in wrangler's order. */
async function missingMigrations(db: D1Database, migrationsDir: string): Promise<string[]> {
  const table = await db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").bind(MIGRATIONS_TABLE).first();
  const applied = new Set(table ? (await db.prepare(`SELECT name FROM ${MIGRATIONS_TABLE}`).all<{ name: string }>()).results.map((r) => r.name) : []);
  return migrationNames(migrationsDir).filter((name) => !applied.has(name));
}

/** wrangler's table, in wrangler's words (its initMigrationsTable). */
const CREATE_MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS ${MIGRATIONS_TABLE}(
		id         INTEGER PRIMARY KEY AUTOINCREMENT,
		name       TEXT UNIQUE,
		applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL
);`;

/** wrangler's SQL splitter (what its local d1 execute runs a file's statements through), loaded only when there is something to apply. */
async function splitSqlQuery(): Promise<(sql: string) => string[]> {
  const wrangler = (await import("wrangler")) as unknown as { unstable_splitSqlQuery: (sql: string) => string[] };
  return wrangler.unstable_splitSqlQuery;
}

/**
 * Applies the migrations each local database lacks, as `wrangler d1 migrations apply --local`
 * does, and returns them by binding (databases that lacked none left out). Opens the databases
 * and closes them again.
 */
export async function applyLocalMigrations(persistTo?: string): Promise<Record<string, string[]>> {
  const applied: Record<string, string[]> = {};
  let split: ((sql: string) => string[]) | undefined;
  try {
    for (const database of d1Databases()) {
      const db = await localD1(database.binding, persistTo);
      await db.prepare(CREATE_MIGRATIONS_TABLE).run();
      for (const name of await missingMigrations(db, database.migrationsDir)) {
        split ??= await splitSqlQuery();
        // wrangler appends the row to the migration's text and runs the whole as one batch: a
        // migration that fails leaves neither its changes nor its row.
        const sql = `${readFileSync(join(REPO_ROOT, database.migrationsDir, name), "utf8")}\nINSERT INTO ${MIGRATIONS_TABLE} (name) values ('${name.replaceAll("'", "''")}');\n`;
        try {
          await db.batch(split(sql).map((query) => db.prepare(query)));
        } catch (error) {
          const cause = (error as { cause?: unknown }).cause ?? error;
          throw new Error(`migration ${database.migrationsDir}/${name} failed on the local ${database.binding}: ${cause instanceof Error ? cause.message : String(cause)}`);
        }
        (applied[database.binding] ??= []).push(name);
      }
    }
  } finally {
    await closeLocalD1();
  }
  return applied;
}

/**
 * The migrations each local database lacks, by binding (databases that lack none left out).
 * Opens the databases and closes them again.
 */
export async function pendingLocalMigrations(persistTo?: string): Promise<Record<string, string[]>> {
  const databases = d1Databases();
  // A state directory without databases (a new checkout) lacks everything: no workerd needed.
  if (!localD1Exists(persistTo)) return Object.fromEntries(databases.map((d) => [d.binding, migrationNames(d.migrationsDir)]).filter(([, names]) => names!.length > 0));
  const pending: Record<string, string[]> = {};
  try {
    for (const database of databases) {
      const missing = await missingMigrations(await localD1(database.binding, persistTo), database.migrationsDir);
      if (missing.length > 0) pending[database.binding] = missing;
    }
  } finally {
    await closeLocalD1();
  }
  return pending;
}
