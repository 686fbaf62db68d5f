/**
 * A project's partitions as the catalog lists them (`project_partitions`), cached per isolate for
 * PARTITIONS_TTL_MS: after a roll, every isolate sends new roots to the new partition within that
 * time (contract section 13: 5 seconds). The cache is read by every write and every read that
 * needs the partitions, so one isolate asks the catalog at most once per project per TTL.
 *
 * Callers prove the project is the caller's first (projectRoute, a run lookup): this module
 * reads by project id only.
 */
import { type SQL, sql } from "drizzle-orm";
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

export interface PartitionRow {
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

/**
 * For the catalog batch that creates a project by name: the first partition of the project that
 * won the name (this creator's or a concurrent one's), to insert if it has none (the select of
 * an INSERT ... SELECT, in `project_partitions`' column order), and the condition that finds that
 * project's partitions. So creating a project costs no round trip more than before partitions.
 */
export function firstPartitionByName(organizationId: string, name: string): { ensure: SQL; project: SQL } {
  const project = sql`(SELECT id FROM projects WHERE organization_id = ${organizationId} AND name = ${name})`;
  return {
    ensure: sql`SELECT ${crypto.randomUUID()}, id, 1, coalesce(shard, ${CATALOG_SHARD}), 'open', created_at, NULL FROM projects
      WHERE organization_id = ${organizationId} AND name = ${name}
        AND NOT EXISTS (SELECT 1 FROM project_partitions WHERE project_id = ${project})`,
    project,
  };
}

/** Caches partition rows read by a caller's own batch (firstPartitionByNameStatements); returns them. */
export function rememberPartitionRows(projectId: string, rows: readonly PartitionRow[]): PartitionRoute[] {
  const partitions = rows.map(fromRow);
  if (partitions.length > 0) {
    if (cache.size >= MAX_ENTRIES) cache.clear();
    cache.set(projectId, { partitions, expiresAt: Date.now() + PARTITIONS_TTL_MS });
  }
  return partitions;
}

/** Reads the project's partitions from the catalog (no cache), giving it its first one if it has none. */
export async function readPartitions(env: Env, projectId: string): Promise<PartitionRoute[]> {
  let rows = (await env.DB.prepare(LIST).bind(projectId).all<PartitionRow>()).results;
  if (rows.length === 0) {
    const [, listed] = await env.DB.batch<PartitionRow>([env.DB.prepare(ENSURE_FIRST).bind(projectId, crypto.randomUUID()), env.DB.prepare(LIST).bind(projectId)]);
    rows = listed?.results ?? [];
  }
  return rememberPartitionRows(projectId, rows);
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
