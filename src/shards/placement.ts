/**
 * Where a new project's records go (docs/sharding.md, "Placement"): the configured shard with the
 * most free room below the high-water mark, measured now (one cheap query per shard: creating a
 * project is rare, and a stale figure would pile projects onto one shard); ties go to the shard
 * with fewer projects, then to the first in DATA_SHARDS. When every shard is at its mark, the
 * project cannot be created: a 507.
 */
import type { Env } from "../env";
import { ApiError } from "../http/errors";
import { CATALOG_SHARD, shardConfig } from "./shard-config";
import { measureShardSizes } from "./shard-sizes";

const PROJECTS_PER_SHARD = `SELECT coalesce(shard, '${CATALOG_SHARD}') AS shard, count(*) AS projects FROM projects GROUP BY 1`;

export interface ShardCandidate {
  name: string;
  sizeBytes: number;
  projects: number;
}

/** The choice among measured shards (pure: unit-tested). */
export function pickShard(candidates: readonly ShardCandidate[], highWaterBytes: number): string | undefined {
  const open = candidates.filter((c) => c.sizeBytes < highWaterBytes);
  open.sort((a, b) => a.sizeBytes - b.sizeBytes || a.projects - b.projects);
  return open[0]?.name;
}

export async function chooseShard(env: Env): Promise<string> {
  const config = shardConfig(env);
  const [sizes, counts] = await Promise.all([
    measureShardSizes(env, config.names),
    env.DB.prepare(PROJECTS_PER_SHARD).all<{ shard: string; projects: number }>(),
  ]);
  const projects = new Map(counts.results.map((row) => [row.shard, row.projects]));
  // Sorting is stable, so among equals the configured order decides.
  const chosen = pickShard(
    config.names.map((name) => ({ name, sizeBytes: sizes.get(name) ?? 0, projects: projects.get(name) ?? 0 })),
    config.highWaterBytes,
  );
  if (!chosen) {
    throw new ApiError(
      507,
      `Every data shard is at its high-water mark (${(config.highWaterBytes / 1e9).toFixed(2)} GB): no new project can be placed. An operator must add a shard (docs/sharding.md).`,
    );
  }
  return chosen;
}
