/**
 * What the worker knows of each shard's size. D1 reports a database's size after every query
 * (`meta.size_after`); the worker keeps the latest figure per shard in the isolate and, at most
 * once a minute per shard, writes it to the catalog's `shards` table (in the background), where
 * placement, fresh isolates and `npm run admin -- shards` read it. The scheduled maintenance
 * refreshes every shard's figure too, so a shard nobody writes to is still known.
 */
import type { Env } from "../env";
import { allRecordDatabases, shardDatabase } from "./shard-config";

interface KnownSize {
  bytes: number;
  /** When the catalog last got this shard's size from this isolate (ms). */
  persistedAt: number;
}

const known = new Map<string, KnownSize>();
const PERSIST_EVERY_MS = 60_000;

const UPSERT_SIZE = `
INSERT INTO shards (name, size_bytes, updated_at) VALUES (?1, ?2, ?3)
ON CONFLICT (name) DO UPDATE SET size_bytes = excluded.size_bytes, updated_at = excluded.updated_at`;

/** The latest size this isolate saw for the shard, if any. */
export function knownShardSize(shard: string): number | undefined {
  return known.get(shard)?.bytes;
}

/** Seeds the isolate's figure from the catalog (routing data carries it), unless a fresher one is known. */
export function learnShardSize(shard: string, bytes: number | null | undefined): void {
  if (typeof bytes === "number" && !known.has(shard)) known.set(shard, { bytes, persistedAt: Date.now() });
}

/**
 * Records the size D1 reported with a query's result; returns the catalog write to run in the
 * background when the catalog's figure is due for a refresh.
 */
export function noteShardSize(env: Env, shard: string, results: readonly D1Result[] | D1Result): Promise<void> | undefined {
  const last = Array.isArray(results) ? results[results.length - 1] : (results as D1Result);
  const bytes = (last?.meta as { size_after?: number } | undefined)?.size_after;
  if (typeof bytes !== "number") return undefined;
  const previous = known.get(shard);
  const now = Date.now();
  if (previous && now - previous.persistedAt < PERSIST_EVERY_MS) {
    previous.bytes = bytes;
    return undefined;
  }
  known.set(shard, { bytes, persistedAt: now });
  return persistShardSize(env, shard, bytes).catch((error) => {
    console.error(`shard ${shard}: could not record its size in the catalog: ${error instanceof Error ? error.message : String(error)}`);
  });
}

export async function persistShardSize(env: Env, shard: string, bytes: number): Promise<void> {
  await env.DB.prepare(UPSERT_SIZE).bind(shard, bytes, Date.now() * 1000).run();
}

/** Asks every database for its size (one cheap query each) and records it: maintenance and placement. */
export async function measureShardSizes(env: Env, shards: readonly string[] = allRecordDatabases(env)): Promise<Map<string, number>> {
  const sizes = new Map<string, number>();
  await Promise.all(
    shards.map(async (shard) => {
      const result = await shardDatabase(env, shard).prepare("SELECT 1").run();
      const bytes = (result.meta as { size_after?: number }).size_after ?? 0;
      sizes.set(shard, bytes);
      known.set(shard, { bytes, persistedAt: Date.now() });
    }),
  );
  await env.DB.batch([...sizes].map(([shard, bytes]) => env.DB.prepare(UPSERT_SIZE).bind(shard, bytes, Date.now() * 1000)));
  return sizes;
}

/** Forget every figure (tests that change sizes under the worker). */
export function forgetShardSizes(): void {
  known.clear();
}
