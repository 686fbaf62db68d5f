/// <reference types="node" />
/**
 * What the operator scripts read from the repository's wrangler.toml: its D1 databases, read from
 * the file itself, so that a shard added there is migrated and opened with no other change.
 */
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

export interface D1DatabaseConfig {
  binding: string;
  /** Keys the local SQLite file (wrangler.toml holds placeholders; the deployed ids are in the deploy config). */
  databaseId: string;
  /** Relative to the repository root. */
  migrationsDir: string;
}

/** wrangler.toml's [[d1_databases]], in order: the catalog (`DB`) first, then the data shards. */
export function d1Databases(): D1DatabaseConfig[] {
  const toml = readFileSync(join(REPO_ROOT, "wrangler.toml"), "utf8");
  const databases: D1DatabaseConfig[] = [];
  for (const block of toml.split(/^\[\[/m).slice(1)) {
    if (!block.startsWith("d1_databases]]")) continue;
    const value = (key: string) => new RegExp(`^${key}\\s*=\\s*"([^"]+)"`, "m").exec(block)?.[1];
    const binding = value("binding");
    if (!binding) continue;
    // As wrangler names a local database: its preview id, else its id, else its binding.
    databases.push({ binding, databaseId: value("preview_database_id") ?? value("database_id") ?? binding, migrationsDir: value("migrations_dir") ?? "migrations" });
  }
  return databases;
}

/** The D1 bindings wrangler.toml declares, in order: the catalog (`DB`) first, then the data shards. */
export function d1Bindings(): string[] {
  return d1Databases().map((d) => d.binding);
}
