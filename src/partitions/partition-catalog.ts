/**
 * A project's partitions as the catalog lists them (`project_partitions`), cached per isolate for
 * PARTITIONS_TTL_MS: after a roll, every isolate sends new roots to the new partition within that
 * time (contract section 13: 5 seconds). The cache is read by every write and every read that
 * needs the partitions, so one isolate asks the catalog at most once per project per TTL.
 *
 * Callers prove the project is the caller's first (projectRoute, a run lookup): this module
 * reads by project id only.
 */
import { nowMicros } from "../db/client";
import type { Env } from "../env";
import { CATALOG_SHARD } from "../shards/shard-config";

export interface PartitionRoute {
  id: string;
  projectId: string;
  /** 1, 2, ... in the order the partitions opened: what the records carry (`records.partition_seq`). */
  seq: number;
  /** The D1 binding that holds the partition. */
  shard: string;
  state: "open" | "closed";
  /** µs */
  openedAt: number;
  closedAt: number | null;
}

/** 4 s, so that with the catalog's own write a roll is seen everywhere within 5 s. */
export const PARTITIONS_TTL_MS = 4_000;
const MAX_ENTRIES = 10_000;
const cache = new Map<string, { partitions: PartitionRoute[]; expiresAt: number }>();

interface PartitionRow {
  id: string;
  project_id: string;
  seq: number;
  shard: string;
  state: "open" | "closed";
  opened_at: number;
  closed_at: number | null;
}

const LIST = `SELECT id, project_id, seq, shard, state, opened_at, closed_at FROM project_partitions WHERE project_id = ?1 ORDER BY seq`;

/**
 * The first partition of a project that has none: one created by a worker older than migration
 * 0025 while it rolled out (the migration gave every project then known its partition). It is
 * where the project's records already are, open since the project was created.
 */
const ENSURE_FIRST = `
INSERT INTO project_partitions (id, project_id, seq, shard, state, opened_at, closed_at)
SELECT ?2, id, 1, coalesce(shard, '${CATALOG_SHARD}'), 'open', created_at, NULL FROM projects
WHERE id = ?1 AND NOT EXISTS (SELECT 1 FROM project_partitions WHERE project_id = ?1)`;

const fromRow = (row: PartitionRow): PartitionRoute => ({
  id: row.id,
  projectId: row.project_id,
  seq: row.seq,
  shard: row.shard,
  state: row.state,
  openedAt: row.opened_at,
  closedAt: row.closed_at,
});

/** The statement that gives a new project its first, open partition (in the batch that creates it). */
export function firstPartitionStatement(catalog: D1Database, projectId: string, shard: string, openedAt: number = nowMicros()): D1PreparedStatement {
  return catalog
    .prepare(`INSERT OR IGNORE INTO project_partitions (id, project_id, seq, shard, state, opened_at, closed_at) VALUES (?1, ?2, 1, ?3, 'open', ?4, NULL)`)
    .bind(crypto.randomUUID(), projectId, shard, openedAt);
}

/** Reads the project's partitions from the catalog (no cache), giving it its first one if it has none. */
export async function readPartitions(env: Env, projectId: string): Promise<PartitionRoute[]> {
  let rows = (await env.DB.prepare(LIST).bind(projectId).all<PartitionRow>()).results;
  if (rows.length === 0) {
    const [, listed] = await env.DB.batch<PartitionRow>([env.DB.prepare(ENSURE_FIRST).bind(projectId, crypto.randomUUID()), env.DB.prepare(LIST).bind(projectId)]);
    rows = listed?.results ?? [];
  }
  const partitions = rows.map(fromRow);
  if (partitions.length > 0) {
    if (cache.size >= MAX_ENTRIES) cache.clear();
    cache.set(projectId, { partitions, expiresAt: Date.now() + PARTITIONS_TTL_MS });
  }
  return partitions;
}

/** The project's partitions, oldest first (cached for PARTITIONS_TTL_MS). Empty: no such project. */
export async function projectPartitions(env: Env, projectId: string): Promise<PartitionRoute[]> {
  const hit = cache.get(projectId);
  if (hit && hit.expiresAt > Date.now()) return hit.partitions;
  return readPartitions(env, projectId);
}

/** The partition that takes new roots. */
export function openPartitionOf(partitions: readonly PartitionRoute[]): PartitionRoute | undefined {
  return partitions.find((p) => p.state === "open");
}

export function forgetPartitions(projectId: string): void {
  cache.delete(projectId);
}

/** Forget every cached list (tests that change the catalog under the worker). */
export function clearPartitionCache(): void {
  cache.clear();
}
