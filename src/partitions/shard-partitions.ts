/**
 * What a shard keeps of the partitions it holds (`shard_partitions`): the root count of each,
 * kept by the triggers `records_partition_roots_*` (migration 0025 / shard 0016) in the very
 * statements that write the records, so that rolling by root count costs no catalog write per
 * record and no extra round trip (the count comes back as the last statement of the write batch).
 */
import type { PartitionRoute } from "./partition-catalog";

const REGISTER = `INSERT OR IGNORE INTO shard_partitions (project_id, seq, partition_id, roots) VALUES (?1, ?2, ?3, 0)`;
const ROOTS = `SELECT roots FROM shard_partitions WHERE project_id = ?1 AND seq = ?2`;

/** At the head of every batch that writes into the partition: its row here, idempotent (a roll interrupted before it heals with the next write). */
export function registerPartitionStatement(db: D1Database, partition: PartitionRoute): D1PreparedStatement {
  return db.prepare(REGISTER).bind(partition.projectId, partition.seq, partition.id);
}

/** At the tail of a write batch: the partition's root count after the batch. */
export function partitionRootsStatement(db: D1Database, partition: PartitionRoute): D1PreparedStatement {
  return db.prepare(ROOTS).bind(partition.projectId, partition.seq);
}

/** The count read by partitionRootsStatement (the last result of the batch). */
export function rootsOf(result: D1Result | undefined): number | undefined {
  const roots = (result?.results[0] as { roots?: number } | undefined)?.roots;
  return typeof roots === "number" ? roots : undefined;
}
