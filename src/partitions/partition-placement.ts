/**
 * Where a new partition goes: placed like a new project (src/shards/placement.ts), on the
 * configured shard with the most room below its high-water mark, measured now (a roll is rare),
 * ties to the shard with fewer open partitions, then to the first in DATA_SHARDS. A shard that
 * gave the project away in a move (`gone`, or one the project is moving to or from) is not a
 * candidate: it refuses the project's writes for ever (docs/sharding.md, "Routing"). The size
 * and the project's state there come back from one query per shard, in parallel.
 */
import type { Env } from "../env";
import { pickShard } from "../shards/placement";
import { shardConfig, shardDatabase } from "../shards/shard-config";
import { persistShardSize } from "../shards/shard-sizes";

const OPEN_PER_SHARD = `SELECT shard, count(*) AS open FROM project_partitions WHERE state = 'open' GROUP BY shard`;
const STATE_HERE = `SELECT (SELECT state FROM shard_projects WHERE project_id = ?1) AS state`;

/** The shard for the project's next partition, or undefined when no shard can take one. */
export async function choosePartitionShard(env: Env, projectId: string): Promise<string | undefined> {
  const config = shardConfig(env);
  const [measured, counts] = await Promise.all([
    Promise.all(
      config.names.map(async (name) => {
        const result = await shardDatabase(env, name).prepare(STATE_HERE).bind(projectId).run<{ state: string | null }>();
        const bytes = (result.meta as { size_after?: number }).size_after ?? 0;
        return { name, bytes, state: result.results[0]?.state ?? null };
      }),
    ),
    env.DB.prepare(OPEN_PER_SHARD).all<{ shard: string; open: number }>(),
  ]);
  await Promise.all(measured.map((m) => persistShardSize(env, m.name, m.bytes))).catch(() => undefined);
  const open = new Map(counts.results.map((row) => [row.shard, row.open]));
  const candidates = measured
    .filter((m) => m.state === null || m.state === "active")
    .map((m) => ({ name: m.name, sizeBytes: m.bytes, projects: open.get(m.name) ?? 0 }));
  return pickShard(candidates, config.highWaterBytes);
}
