/**
 * Rolling a project's open partition (contract section 13, docs/partitions.md): it closes and a
 * new one opens on the shard placement picks. One catalog batch does both, conditionally, so two
 * isolates that decide to roll at once roll once: the close applies only to the partition that is
 * still open, the new one is inserted only if the project then has no open partition (and the
 * unique index `project_partitions_open` would refuse a second). The new partition is then
 * registered on its shard; if that is lost, the head of the first write into it does it.
 *
 * A roll interrupted anywhere leaves either the old partition open (nothing happened) or the new
 * one open (the roll happened): every record stays in the partition its first write chose, so
 * each is read exactly once either way.
 */
import { nowMicros } from "../db/client";
import type { Env } from "../env";
import { registerProjectStatement } from "../shards/shard-membership";
import { shardDatabase } from "../shards/shard-config";
import { type PartitionRoute, forgetPartitions, openPartitionOf, readPartitions } from "./partition-catalog";
import { choosePartitionShard } from "./partition-placement";
import { registerPartitionStatement } from "./shard-partitions";

export type RollReason = "roots" | "age" | "high_water" | "operator";

export interface RollOutcome {
  project_id: string;
  /** The partition that closed. */
  closed: string;
  /** The partition that opened. */
  opened: string;
  shard: string;
}

export class NoShardForPartitionError extends Error {
  constructor(readonly projectId: string) {
    super(`no data shard can take a new partition of project ${projectId}: every shard is at its high-water mark`);
    this.name = "NoShardForPartitionError";
  }
}

/**
 * A move of the project or of one of its partitions under way to or from a shard (src/moves)
 * owns the project's rows there: no new partition goes to it. Checked in both statements of the
 * roll's batch, so a move asked for while the roll was placed makes the roll a no-op rather than
 * a partition on a shard whose copy it would read twice (?P project, ?S shard).
 */
const NO_MOVE_ON = (project: string, shard: string) =>
  `NOT EXISTS (SELECT 1 FROM project_moves WHERE project_id = ${project} AND phase NOT IN ('completed', 'failed') AND ${shard} IN (source, target))`;
const CLOSE = `UPDATE project_partitions SET state = 'closed', closed_at = ?2 WHERE id = ?1 AND state = 'open' AND ${NO_MOVE_ON("?3", "?4")}`;
const OPEN = `
INSERT INTO project_partitions (id, project_id, seq, shard, state, opened_at, closed_at)
SELECT ?1, ?2, (SELECT max(seq) + 1 FROM project_partitions WHERE project_id = ?2), ?3, 'open', ?4, NULL
WHERE NOT EXISTS (SELECT 1 FROM project_partitions WHERE project_id = ?2 AND state = 'open') AND ${NO_MOVE_ON("?2", "?3")}`;

/**
 * Rolls the project's open partition, if it is still `expectOpen` (when given: a writer that saw
 * the partition full must not roll the one another isolate just opened). Returns the roll, or
 * null when another roll got there first. Throws NoShardForPartitionError when no shard can take
 * a new partition (nothing changed).
 */
export async function rollPartition(env: Env, organizationId: string, projectId: string, options: { expectOpen?: string; reason: RollReason }): Promise<RollOutcome | null> {
  const before = openPartitionOf(await readPartitions(env, projectId));
  if (!before) return null;
  if (options.expectOpen !== undefined && before.id !== options.expectOpen) return null;
  const shard = await choosePartitionShard(env, projectId);
  if (!shard) throw new NoShardForPartitionError(projectId);
  const id = crypto.randomUUID();
  const now = nowMicros();
  await env.DB.batch([env.DB.prepare(CLOSE).bind(before.id, now, projectId, shard), env.DB.prepare(OPEN).bind(id, projectId, shard, now)]);
  forgetPartitions(projectId);
  const after = await readPartitions(env, projectId);
  const opened = after.find((p) => p.id === id);
  if (!opened) return null;
  await registerOn(env, organizationId, opened).catch((error) => {
    // Healed by the head of the first write into the partition (src/ingest/write-records.ts).
    console.error(`partition ${opened.id}: could not register it on ${opened.shard} yet: ${error instanceof Error ? error.message : String(error)}`);
  });
  console.log(JSON.stringify({ event: "partition_rolled", project_id: projectId, closed: before.id, opened: opened.id, shard, reason: options.reason }));
  return { project_id: projectId, closed: before.id, opened: opened.id, shard };
}

async function registerOn(env: Env, organizationId: string, partition: PartitionRoute): Promise<void> {
  const db = shardDatabase(env, partition.shard);
  await db.batch([registerProjectStatement(db, { projectId: partition.projectId, organizationId }), registerPartitionStatement(db, partition)]);
}
