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

/**
 * wrangler.toml's `[triggers] crons`, read from the file itself: loading wrangler to read them
 * (`unstable_readConfig`) cost about 2 CPU s, 10 s wall at load, on every `npm start` (issue 36).
 * The table form wrangler.toml uses is read (`[triggers]`, then `crons = [...]`, on one line or
 * several, with comments and a trailing comma); a value in any other shape is refused rather than
 * read as no schedule, which would silently fire nothing.
 */
export function triggerCrons(configPath = join(REPO_ROOT, "wrangler.toml")): string[] {
  const toml = readFileSync(configPath, "utf8");
  const table = /^[ \t]*\[triggers\][ \t]*(?:#.*)?$/m.exec(toml);
  if (!table) return [];
  const body = toml.slice(table.index + table[0].length);
  const end = body.search(/^[ \t]*\[/m);
  const section = end === -1 ? body : body.slice(0, end);
  const key = /^[ \t]*crons[ \t]*=[ \t]*/m.exec(section);
  if (!key) return [];
  const crons: string[] = [];
  let i = key.index + key[0].length;
  if (section[i] !== "[") throw new Error(`wrangler.toml: [triggers] crons is not an array of strings`);
  for (i++; i < section.length; ) {
    const c = section[i]!;
    if (c === "]") return crons;
    if (/[\s,]/.test(c)) i++;
    else if (c === "#") i = section.indexOf("\n", i) === -1 ? section.length : section.indexOf("\n", i);
    else if (c === '"' || c === "'") {
      const close = section.indexOf(c, i + 1);
      const text = close === -1 ? "" : section.slice(i + 1, close);
      if (close === -1 || text.includes("\n") || (c === '"' && text.includes("\\"))) break;
      crons.push(text);
      i = close + 1;
    } else break;
  }
  throw new Error(`wrangler.toml: [triggers] crons is not an array of strings`);
}
