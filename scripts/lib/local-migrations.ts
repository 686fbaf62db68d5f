/// <reference types="node" />
/**
 * Which migrations the local databases lack, read in this process (scripts/lib/local-d1.ts) the
 * way `wrangler d1 migrations apply --local` reads them: each database's migrations_dir's `.sql`
 * files against the names in its d1_migrations table. `npm start` runs wrangler's apply (three
 * processes of about 4 CPU s, one per database) only when one lacks some, which after the first
 * start is rare: a restart costs one workerd instead (issue 36).
 */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { closeLocalD1, localD1, localD1Exists } from "./local-d1";
import { REPO_ROOT, d1Databases } from "./wrangler-config";

/** wrangler's default migrations table (wrangler.toml sets no migrations_table). */
const MIGRATIONS_TABLE = "d1_migrations";

/** The migration files of a folder, in the order wrangler applies them. */
function migrationNames(migrationsDir: string): string[] {
  const dir = join(REPO_ROOT, migrationsDir);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => name.endsWith(".sql"))
    .sort();
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
      const db = await localD1(database.binding, persistTo);
      const table = await db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").bind(MIGRATIONS_TABLE).first();
      const applied = new Set(table ? (await db.prepare(`SELECT name FROM ${MIGRATIONS_TABLE}`).all<{ name: string }>()).results.map((r) => r.name) : []);
      const missing = migrationNames(database.migrationsDir).filter((name) => !applied.has(name));
      if (missing.length > 0) pending[database.binding] = missing;
    }
  } finally {
    await closeLocalD1();
  }
  return pending;
}
