/**
 * The one routing layer for reads across partitions (contract section 13, "Reads are exact";
 * docs/partitions.md, "Reads"): a read runs its work on every shard that holds a partition of the
 * project, in parallel, and merges the answers itself. Every read path that has become
 * partition-aware goes through here, so a later one (evaluations, alerts) becomes so by calling
 * it rather than by a special case of its own.
 *
 * The fast path stays as it was: the project's own shard is read at once, through
 * onProjectShard (the route, the state check, the re-route after a move), while the project's
 * partitions are read beside it (cached per isolate for PARTITIONS_TTL_MS, so usually no round
 * trip at all; at most one catalog read, in parallel, never before the shard's answer). Only
 * when a partition lives on another shard is that shard read, then, in parallel with any other.
 *
 * The partitions are read by project id before the tenancy check of onProjectShard has answered:
 * they say nothing to the caller, and the other shards are read only once it has.
 */
import type { Context } from "hono";
import type { AppEnv } from "../http/app-env";
import { type ProjectShard, onProjectShard } from "../shards/project-shard";
import { projectRoute } from "../shards/project-routing";
import { type PartitionRoute, projectPartitions } from "./partition-catalog";
import { shardOfPartition } from "./partition-writes";

export interface ShardAnswer<T> {
  shard: string;
  /** The project's own shard (projects.shard), where its project-wide rows (templates, queues) live. */
  home: boolean;
  answer: T;
}

/**
 * Runs `work` on every shard holding a partition of the project; the project's own shard first.
 * `homeMode` "write": the project's own shard is reached as for a write (a project frozen by a
 * move answers 503 there, as a deletion must not run on a source whose changes are no longer
 * logged); the shards of other partitions are read (a partition's move, like a project's, logs on its source what a deletion does there and carries it over).
 */
export async function onProjectReadShards<T>(
  c: Context<AppEnv>,
  projectId: string,
  work: (shard: ProjectShard, home: boolean) => Promise<T>,
  homeMode: "read" | "write" = "read",
): Promise<ShardAnswer<T>[]> {
  let homeShard = "";
  const [answer, partitions] = await Promise.all([
    onProjectShard(c, projectId, homeMode, async (shard) => {
      homeShard = shard.route.shard;
      return work(shard, true);
    }),
    projectPartitions(c.env, projectId),
  ]);
  const answers: ShardAnswer<T>[] = [{ shard: homeShard, home: true, answer }];
  const others = otherShardsOf(partitions, homeShard);
  if (others.length === 0) return answers;
  const more = await Promise.all(others.map(async (partition) => ({ shard: partition.shard, home: false, answer: await onPartitionShard(c, projectId, partition, (shard) => work(shard, false)) })));
  return [...answers, ...more];
}

/**
 * A write to records that may sit in a partition on any shard (a rating, a queue entry: contract
 * section 13, they go to their record's partition): `first` runs on the project's own shard as a
 * write, exactly as before partitions, with the partitions read beside it; then, only if the
 * project has partitions on other shards, `then(answer)` may name the work still to do there (the
 * records the project's shard did not hold), which runs on each of those shards, as a write, in
 * parallel. A project on one shard costs the round trip it cost before; a record elsewhere, one
 * more, in parallel across shards. Answers the project's shard's answer, then the others'.
 */
export async function onRecordShardsForWrite<T, U>(
  c: Context<AppEnv>,
  projectId: string,
  first: (shard: ProjectShard) => Promise<T>,
  then: (answer: T) => ((shard: ProjectShard) => Promise<U>) | null,
): Promise<{ home: T; others: U[] }> {
  let homeShard = "";
  const [home, partitions] = await Promise.all([
    onProjectShard(c, projectId, "write", async (shard) => {
      homeShard = shard.route.shard;
      return first(shard);
    }),
    projectPartitions(c.env, projectId),
  ]);
  const others = otherShardsOf(partitions, homeShard);
  if (others.length === 0) return { home, others: [] };
  const work = then(home);
  if (!work) return { home, others: [] };
  const answers = await Promise.all(others.map((partition) => onProjectShard(c, projectId, "write", work, { shardOf: shardOfPartition(c.env, partition) })));
  return { home, others: answers };
}

/** One partition per shard other than `homeShard` holding a partition of the project (to read that shard through). */
export function otherShardsOf(partitions: readonly PartitionRoute[], homeShard: string): PartitionRoute[] {
  return [...new Map(partitions.filter((p) => p.shard !== homeShard).map((p) => [p.shard, p])).values()];
}

/**
 * A read that takes several round trips, each needing every shard's answer to the one before
 * (metrics: the run's metric names, then the groups to show, then the figures), runs its first
 * step through this on the project's own shard, as before partitions, with the partitions read
 * beside it (cached, as onProjectReadShards does); its later steps run on the home shard's session
 * and, through onPartitionShard, on these other shards. Empty: the project is on one shard.
 */
export async function homeWithOtherShards<T>(c: Context<AppEnv>, projectId: string, work: (home: ProjectShard, others: () => Promise<PartitionRoute[]>) => Promise<T>): Promise<T> {
  const partitions = projectPartitions(c.env, projectId);
  // Awaited only by work that asks; a failed read must not surface as an unhandled rejection.
  partitions.catch(() => undefined);
  return onProjectShard(c, projectId, "read", (home) => work(home, async () => otherShardsOf(await partitions, home.route.shard)));
}

/** Runs `work` on the shard of `partition` (one of the project's other shards), with the state check and re-route of onProjectShard. */
export function onPartitionShard<T>(c: Context<AppEnv>, projectId: string, partition: PartitionRoute, work: (shard: ProjectShard) => Promise<T>): Promise<T> {
  return onProjectShard(c, projectId, "read", work, { shardOf: shardOfPartition(c.env, partition) });
}

/**
 * Runs `work` on every shard other than the project's own that holds a partition of it, in
 * parallel, as a read or a write (a step that follows one done on the project's shard, such as a
 * template's usage counted or its ratings purged where its records' partitions are). Empty: the
 * project is on one shard (from the 4 s caches of routes and partitions, usually no round trip).
 */
export async function onOtherPartitionShards<T>(c: Context<AppEnv>, projectId: string, mode: "read" | "write", work: (shard: ProjectShard) => Promise<T>): Promise<T[]> {
  const [route, partitions] = await Promise.all([projectRoute(c.env, c.get("principal"), projectId), projectPartitions(c.env, projectId)]);
  const others = otherShardsOf(partitions, route.shard);
  return Promise.all(others.map((partition) => onProjectShard(c, projectId, mode, work, { shardOf: shardOfPartition(c.env, partition) })));
}

/** Whether the project has partitions on more than one shard (from the 4 s cache, usually no round trip). */
export async function spansShards(c: Context<AppEnv>, projectId: string): Promise<boolean> {
  return new Set((await projectPartitions(c.env, projectId)).map((p) => p.shard)).size > 1;
}
