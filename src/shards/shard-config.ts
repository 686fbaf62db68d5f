/**
 * The data shards of a deployment (docs/sharding.md): D1 bindings declared in wrangler.toml and
 * listed, in placement order, by the `DATA_SHARDS` variable. The set is configuration: a
 * deployment with one shard works, and the catalog database itself (`DB`) may be a shard (it is
 * where projects created before sharding live, whatever the list says).
 */
import type { Env } from "../env";

/** The catalog's binding: the shard of every project whose `shard` is null. */
export const CATALOG_SHARD = "DB";

const GB = 1_000_000_000;

export interface ShardConfig {
  /** The shards new projects may be placed on, in order (ties go to the first). */
  names: readonly string[];
  /** A shard at or above this size takes no new projects (default 8 GB of D1's 10). */
  highWaterBytes: number;
  /** Ingest into a project whose shard is at or above this size is refused with a 507 (default 9.5 GB). */
  hardLimitBytes: number;
}

function bytesVar(raw: string | undefined, fallback: number, name: string): number {
  if (raw === undefined || raw.trim() === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number of bytes, got ${JSON.stringify(raw)}`);
  return value;
}

export function shardConfig(env: Env): ShardConfig {
  const names = (env.DATA_SHARDS ?? CATALOG_SHARD)
    .split(",")
    .map((name) => name.trim())
    .filter((name) => name.length > 0);
  for (const name of names) shardDatabase(env, name);
  return {
    names: names.length > 0 ? names : [CATALOG_SHARD],
    highWaterBytes: bytesVar(env.SHARD_HIGH_WATER_BYTES, 8 * GB, "SHARD_HIGH_WATER_BYTES"),
    hardLimitBytes: bytesVar(env.SHARD_HARD_LIMIT_BYTES, 9.5 * GB, "SHARD_HARD_LIMIT_BYTES"),
  };
}

function isD1(value: unknown): value is D1Database {
  return typeof (value as D1Database | undefined)?.prepare === "function" && typeof (value as D1Database).batch === "function";
}

/** The D1 binding of a shard; a shard name that names no D1 binding is a configuration error. */
export function shardDatabase(env: Env, name: string | null): D1Database {
  const binding = (env as unknown as Record<string, unknown>)[name ?? CATALOG_SHARD];
  if (!isD1(binding)) throw new Error(`shard ${JSON.stringify(name)} is not a D1 binding of this worker (wrangler.toml [[d1_databases]])`);
  return binding;
}

/** Every database that may hold records: the configured shards and the catalog. */
export function allRecordDatabases(env: Env): string[] {
  return [...new Set([...shardConfig(env).names, CATALOG_SHARD])];
}
