/**
 * An empty, migrated local state (the catalog and every data shard) for the UI bench, kept in
 * bench/data/ui-state/<key> and copied for each run. `wrangler d1 migrations apply` per binding
 * is several wrangler starts: about 3 minutes of a run on the loaded shared machine, for the same
 * result every time. The key covers what decides that result: the catalog and shard migrations
 * and the bindings (wrangler.toml); a changed key migrates anew and removes the stale copy.
 */
import { createHash } from "node:crypto";
import { cpSync, existsSync, readdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import path from "node:path";
import { applyMigrations } from "../../scripts/lib/wrangler";
import { DATA_DIR, MIGRATIONS_DIR, SERVICE_CONFIG } from "../lib/paths";

const STATE_CACHE_DIR = path.join(DATA_DIR, "ui-state");

function sqlFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((name) => name.endsWith(".sql"))
    .sort()
    .map((name) => path.join(dir, name));
}

function stateKey(): string {
  const hash = createHash("sha256");
  for (const file of [...sqlFiles(MIGRATIONS_DIR), ...sqlFiles(path.join(MIGRATIONS_DIR, "shard")), SERVICE_CONFIG]) {
    hash.update(path.relative(MIGRATIONS_DIR, file));
    hash.update("\u0000");
    hash.update(readFileSync(file));
    hash.update("\u0000");
  }
  return hash.digest("hex").slice(0, 16);
}

/** Fills `persistTo` (which must not exist) with the migrated empty state, migrating it first if no copy is kept. */
export async function copyMigratedState(persistTo: string): Promise<{ cached: boolean }> {
  const key = stateKey();
  const kept = path.join(STATE_CACHE_DIR, key);
  const cached = existsSync(kept);
  if (!cached) {
    const building = `${kept}.building-${process.pid}`;
    rmSync(building, { recursive: true, force: true });
    try {
      await applyMigrations({ remote: false, persistTo: building });
      for (const stale of existsSync(STATE_CACHE_DIR) ? readdirSync(STATE_CACHE_DIR) : []) {
        if (!stale.includes(".building-")) rmSync(path.join(STATE_CACHE_DIR, stale), { recursive: true, force: true });
      }
      renameSync(building, kept);
    } finally {
      rmSync(building, { recursive: true, force: true });
    }
  }
  cpSync(kept, persistTo, { recursive: true });
  return { cached };
}
