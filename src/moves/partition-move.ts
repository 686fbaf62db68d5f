/**
 * A move of one closed partition of a project to another shard (contract section 13,
 * docs/sharding.md "Moving a partition"): the project move's machinery (advance-move.ts: the
 * chunked copy through the write path, the change log replayed, the frozen drain, verification,
 * one catalog batch to switch, the old copy deleted in chunks), with what differs here:
 *
 * - **the source and the target hold nothing else of the project.** Every read of a shard sees
 *   every record of the project stored there (reads filter by project, not by partition), so a
 *   copy written beside another partition of the project would be read twice, and the source's
 *   old copy too, until it is deleted. On a shard that holds only this partition, the project's
 *   state there (`shard_projects`) is the partition's: the source `exporting` logs the partition's
 *   changes (late children, updates, ratings, queue entries, deletions) with the project move's
 *   triggers, `frozen` refuses its writes for the last seconds (503, Retry-After 1), `gone`
 *   re-routes a stale reader or writer to the target; the target `importing` is read by nobody
 *   until the catalog names it. So the project's home shard (its templates and queues, read by
 *   every request) is never a source or a target: a partition that shares it moves with the
 *   project (`move-project`).
 * - **the switch** changes the partition's catalog row (`project_partitions.shard`), on the
 *   condition that it is still closed on the source, that no other partition of the project nor
 *   its home came to the source or the target meanwhile, and that no deletion job of the
 *   organization is open on the source; in the same transaction as the move's phase.
 * - **root counts** (`shard_partitions`) start from zero on the target before the copy, so the
 *   triggers count exactly what the copy writes; the source's row goes with the old copy.
 */
import type { PartitionRow } from "../partitions/partition-catalog";
import type { Env } from "../env";
import { CATALOG_SHARD } from "../shards/shard-config";
import type { MoveRow } from "./move-rows";
import { MoveFailure } from "./shard-states";

const CONTEXT = [
  `SELECT coalesce(shard, '${CATALOG_SHARD}') AS shard FROM projects WHERE id = ?1`,
  `SELECT id, project_id, seq, shard, state, opened_at, closed_at FROM project_partitions WHERE project_id = ?1 ORDER BY seq`,
];

/**
 * The partition a move may take, checked against the catalog as it is now (the admin command
 * checked it when asking; the worker checks again at the first step, before touching anything).
 */
export async function checkPartitionMove(env: Env, move: MoveRow): Promise<PartitionRow> {
  const [project, partitions] = await env.DB.batch<{ shard?: string } & Partial<PartitionRow>>(CONTEXT.map((sql) => env.DB.prepare(sql).bind(move.project_id)));
  const home = project!.results[0]?.shard;
  if (!home) throw new MoveFailure("the project no longer exists");
  const all = partitions!.results as PartitionRow[];
  const partition = all.find((p) => p.id === move.partition_id);
  if (!partition) throw new MoveFailure(`partition ${move.partition_id} is not a partition of the project`);
  const refusal = partitionMoveRefusal({ projectId: move.project_id, home, partitions: all, partition, target: move.target });
  if (refusal) throw new MoveFailure(refusal);
  if (partition.shard !== move.source) throw new MoveFailure(`the partition is on ${partition.shard}, not on ${move.source} any more`);
  return partition;
}

/**
 * Why the partition cannot move to `target`, if it cannot: shared by the admin command (which
 * refuses before asking) and the worker's first step. Plain data, no database.
 */
export function partitionMoveRefusal(input: { projectId: string; home: string; partitions: readonly Pick<PartitionRow, "id" | "seq" | "shard" | "state">[]; partition: Pick<PartitionRow, "id" | "seq" | "shard" | "state">; target: string }): string | undefined {
  const { projectId, home, partitions, partition, target } = input;
  const name = `partition ${partition.seq} (${partition.id})`;
  if (partition.state === "open") {
    return `${name} is the project's open partition: it takes the project's new roots, so it cannot move; roll it first (npm run admin -- roll-partition --project ${projectId}), then move it once it is closed`;
  }
  if (partition.shard === target) return `${name} is already on ${target}`;
  if (partition.shard === home) {
    return `${name} is on ${home}, the project's own shard (its templates and queues live there, and every read of the project reads it): it moves with the project (npm run admin -- move-project)`;
  }
  if (target === home) {
    return `${target} is the project's own shard, which every read of the project reads: a copy there would be read twice while it is made; move the partition to a shard that holds nothing of the project`;
  }
  const beside = (shard: string) => partitions.filter((p) => p.id !== partition.id && p.shard === shard).map((p) => p.seq);
  const onSource = beside(partition.shard);
  if (onSource.length > 0) {
    return `${name} shares ${partition.shard} with partition ${onSource.join(", ")} of the project: a shard's reads see every record of the project there, so its old copy would be read twice while it is deleted; a partition moves only from a shard that holds nothing else of the project`;
  }
  const onTarget = beside(target);
  if (onTarget.length > 0) {
    return `${target} holds partition ${onTarget.join(", ")} of the project: a shard's reads see every record of the project there, so the copy would be read twice while it is made; move the partition to a shard that holds nothing of the project`;
  }
  return undefined;
}

/** The partition's row on the target, its root count from zero: the copy's writes count its roots. */
export function registerMovedPartition(target: D1Database, move: MoveRow, partition: PartitionRow): D1PreparedStatement {
  return target
    .prepare(
      `INSERT INTO shard_partitions (project_id, seq, partition_id, roots) VALUES (?1, ?2, ?3, 0)
       ON CONFLICT (project_id, seq) DO UPDATE SET partition_id = excluded.partition_id, roots = 0`,
    )
    .bind(move.project_id, partition.seq, partition.id);
}

/**
 * The catalog's switch: the partition's shard becomes the target, on every condition the move
 * relies on (module comment), checked in the statement itself.
 */
export function partitionSwitchStatement(env: Env, move: MoveRow): D1PreparedStatement {
  return env.DB.prepare(
    `UPDATE project_partitions SET shard = ?2 WHERE id = ?1 AND project_id = ?4 AND shard = ?3 AND state = 'closed'
       AND NOT EXISTS (SELECT 1 FROM project_partitions AS o WHERE o.project_id = ?4 AND o.id <> ?1 AND o.shard IN (?2, ?3))
       AND NOT EXISTS (SELECT 1 FROM projects WHERE id = ?4 AND coalesce(shard, '${CATALOG_SHARD}') IN (?2, ?3))
       AND NOT EXISTS (SELECT 1 FROM org_jobs AS j CROSS JOIN org_job_shards AS p ON p.job_id = j.id
                       WHERE j.organization_id = ?5 AND j.status IN ('queued', 'running') AND p.shard = ?3 AND p.status IN ('queued', 'running'))`,
  ).bind(move.partition_id, move.target, move.source, move.project_id, move.organization_id);
}

/** The condition (SQL) under which the move's row may record the switch: the catalog names the target. Binds ?3 project, ?4 target, ?5 partition. */
export const partitionPlacedOn = `EXISTS (SELECT 1 FROM project_partitions WHERE id = ?5 AND project_id = ?3 AND shard = ?4)`;

/** The source's root counts of the project (it holds nothing else of it), after the old copy. */
export const FORGET_PARTITIONS_ON_SOURCE = "DELETE FROM shard_partitions WHERE project_id = ?1 AND seq IN (SELECT seq FROM shard_partitions WHERE project_id = ?1 LIMIT ?2)";
