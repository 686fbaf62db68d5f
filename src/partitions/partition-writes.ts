/**
 * The partition a write goes to, and the roll a write may bring about (contract section 13,
 * docs/partitions.md "Rolling").
 *
 * - Before a write of new roots: the open partition, rolled first if it is older than
 *   PARTITION_MAX_DAYS or its shard is past its high-water mark (when rolling is on). If no shard
 *   can take a new partition, the write stays in the open one; only when that shard is at its hard
 *   limit too is the write a 507.
 * - After it: the batch's last statement read the partition's root count on its shard; the write
 *   that brings it to PARTITION_MAX_ROOTS is the partition's last (a batch that crosses the count
 *   stays whole in it), and the roll happens before the request answers, so the next root goes to
 *   the new partition.
 */
import { ApiError } from "../http/errors";
import type { Env } from "../env";
import { shardConfig } from "../shards/shard-config";
import { knownShardSize } from "../shards/shard-sizes";
import { partitionConfig } from "./partition-config";
import { type PartitionRoute, openPartitionOf, projectPartitions, readPartitions } from "./partition-catalog";
import { NoShardForPartitionError, type RollReason, rollPartition } from "./roll-partition";

const DAY_MICROS = 86_400_000_000;

/** Why the open partition should roll before a write, if it should. */
export function rollReasonBefore(env: Env, open: PartitionRoute, nowMicros: number): RollReason | null {
  const config = partitionConfig(env);
  if (!config.rolling) return null;
  if (nowMicros - open.openedAt >= config.maxDays * DAY_MICROS) return "age";
  const size = knownShardSize(open.shard);
  if (size !== undefined && size >= shardConfig(env).highWaterBytes) return "high_water";
  return null;
}

function noRoom(): ApiError {
  return new ApiError(
    507,
    "Every data shard is at its high-water mark and this project's open partition is on a full shard: no shard can take a new partition, and nothing was written. An operator must add a shard (docs/partitions.md).",
  );
}

/** The partition new roots of this write go to (the project's tenancy already proven by the caller). */
export async function partitionForNewRoots(env: Env, organizationId: string, projectId: string, nowMicros: number): Promise<PartitionRoute> {
  let open = openPartitionOf(await projectPartitions(env, projectId));
  if (!open) throw new Error(`project ${projectId} has no open partition`);
  const reason = rollReasonBefore(env, open, nowMicros);
  if (reason) {
    try {
      await rollPartition(env, organizationId, projectId, { expectOpen: open.id, reason });
      open = openPartitionOf(await projectPartitions(env, projectId)) ?? open;
    } catch (error) {
      if (!(error instanceof NoShardForPartitionError)) throw error;
      const size = knownShardSize(open.shard);
      if (size !== undefined && size >= shardConfig(env).hardLimitBytes) throw noRoom();
    }
  }
  return open;
}

/** After a write into `partition`: rolls it if the write brought its roots to the maximum. */
export async function afterPartitionWrite(env: Env, organizationId: string, partition: PartitionRoute, roots: number | undefined): Promise<void> {
  const config = partitionConfig(env);
  if (!config.rolling || partition.state !== "open" || roots === undefined || roots < config.maxRoots) return;
  try {
    await rollPartition(env, organizationId, partition.projectId, { expectOpen: partition.id, reason: "roots" });
  } catch (error) {
    // No shard has room: the partition keeps taking roots until its shard's hard limit.
    if (!(error instanceof NoShardForPartitionError)) throw error;
  }
}

/** The partition's shard, read afresh when `fresh` (it may have moved): for onProjectShard's `shardOf`. */
export function shardOfPartition(env: Env, partition: PartitionRoute): (fresh: boolean) => Promise<string> {
  return async (fresh) => {
    if (!fresh) return partition.shard;
    const now = (await readPartitions(env, partition.projectId)).find((p) => p.id === partition.id);
    return now?.shard ?? partition.shard;
  };
}
