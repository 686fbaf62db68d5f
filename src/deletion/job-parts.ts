/**
 * An organization job runs in parts, one per database that holds projects of the organization
 * (docs/sharding.md, "Organization-wide jobs"). The job as clients see it (`org_jobs`, in the
 * catalog) is one: its progress is the sum of its parts, it is `completed` when every part is,
 * and `failed` (naming the shard and why) when one part fails for good.
 *
 * Each part's exact state is its database's `shard_jobs` row, updated in the same batch as the
 * records it deletes (delete-chunk.ts). After every message, the consumer copies that row to the
 * catalog's `org_job_shards` and recomputes the job from its parts (syncPart): repeating the
 * copy (a redelivered message) writes the same figures.
 */
import { nowMicros } from "../db/client";
import type { Env } from "../env";
import { CATALOG_SHARD, shardConfig, shardDatabase } from "../shards/shard-config";
import type { DeletionCounts, DeletionJob } from "./deletion-job-types";

export interface PartState {
  status: "queued" | "running" | "completed" | "failed";
  progress: DeletionCounts;
}

const SHARDS_OF_ORGANIZATION = `SELECT DISTINCT coalesce(shard, '${CATALOG_SHARD}') AS shard FROM projects WHERE organization_id = ?1 ORDER BY 1`;

/**
 * Where an organization's jobs run: every database its projects are on, and every configured
 * shard besides, since a project created while the job runs may be placed on a shard that held
 * none of the organization's projects when the job started (a part with nothing to do there
 * completes at its first chunk).
 */
export async function shardsOfOrganization(env: Env, organizationId: string): Promise<string[]> {
  const { results } = await env.DB.prepare(SHARDS_OF_ORGANIZATION).bind(organizationId).all<{ shard: string }>();
  return [...new Set([...shardConfig(env).names, ...results.map((row) => row.shard)])].sort();
}

/** The job's parts not yet over, per the catalog. */
export async function openParts(env: Env, jobId: string): Promise<string[]> {
  const { results } = await env.DB.prepare("SELECT shard FROM org_job_shards WHERE job_id = ?1 AND status IN ('queued', 'running') ORDER BY shard")
    .bind(jobId)
    .all<{ shard: string }>();
  return results.map((row) => row.shard);
}

const ENSURE_SHARD_JOB = `
INSERT OR IGNORE INTO shard_jobs (job_id, organization_id, status, updated_at) VALUES (?1, ?2, 'queued', ?3)`;

const SHARD_JOB = `SELECT status, sessions_deleted, traces_deleted, spans_deleted FROM shard_jobs WHERE job_id = ?1`;

interface ShardJobRow {
  status: PartState["status"];
  sessions_deleted: number;
  traces_deleted: number;
  spans_deleted: number;
}

const stateOf = (row: ShardJobRow): PartState => ({
  status: row.status,
  progress: { sessions: row.sessions_deleted, traces: row.traces_deleted, spans: row.spans_deleted },
});

/** The part's row on its database, created (queued) on first use. One round trip. */
export async function ensureShardPart(shardDb: D1Database, job: DeletionJob): Promise<PartState> {
  const [, read] = await shardDb.batch<ShardJobRow>([
    shardDb.prepare(ENSURE_SHARD_JOB).bind(job.id, job.organizationId, nowMicros()),
    shardDb.prepare(SHARD_JOB).bind(job.id),
  ]);
  return stateOf(read!.results[0]!);
}

/** The part's state on its database (it must exist). */
export async function shardPartState(shardDb: D1Database, jobId: string): Promise<PartState> {
  const row = await shardDb.prepare(SHARD_JOB).bind(jobId).first<ShardJobRow>();
  if (!row) throw new Error(`deletion job ${jobId} has no part on this database`);
  return stateOf(row);
}

/**
 * Stops a part on its database: its chunks delete nothing from now on. The row is written
 * failed even if no chunk ever ran there, so a delivery that loaded the job before it failed
 * cannot start the part afterwards.
 */
export async function failShardPart(env: Env, shard: string, job: { id: string; organizationId: string }): Promise<void> {
  await shardDatabase(env, shard)
    .prepare(
      `INSERT INTO shard_jobs (job_id, organization_id, status, updated_at) VALUES (?1, ?2, 'failed', ?3)
       ON CONFLICT (job_id) DO UPDATE SET status = 'failed', updated_at = excluded.updated_at WHERE status IN ('queued', 'running')`,
    )
    .bind(job.id, job.organizationId, nowMicros())
    .run();
}

/**
 * The job from its parts: progress summed; `running` once a part runs; `completed` when every
 * part is; a failed job stays failed, a completed one completed.
 */
const RECOMPUTE_JOB = `
UPDATE org_jobs SET
  sessions_deleted = (SELECT coalesce(sum(sessions_deleted), 0) FROM org_job_shards WHERE job_id = ?1),
  traces_deleted = (SELECT coalesce(sum(traces_deleted), 0) FROM org_job_shards WHERE job_id = ?1),
  spans_deleted = (SELECT coalesce(sum(spans_deleted), 0) FROM org_job_shards WHERE job_id = ?1),
  status = CASE
    WHEN NOT EXISTS (SELECT 1 FROM org_job_shards WHERE job_id = ?1 AND status <> 'completed') THEN 'completed'
    WHEN EXISTS (SELECT 1 FROM org_job_shards WHERE job_id = ?1 AND status <> 'queued') THEN 'running'
    ELSE status END,
  updated_at = ?2
WHERE id = ?1 AND status IN ('queued', 'running')`;

const COPY_PART = `
UPDATE org_job_shards SET status = ?3, sessions_deleted = ?4, traces_deleted = ?5, spans_deleted = ?6, updated_at = ?7
WHERE job_id = ?1 AND shard = ?2 AND status IN ('queued', 'running')`;

/** Copies a part's state to the catalog and recomputes the job; one round trip. */
export async function syncPart(env: Env, jobId: string, shard: string, state: PartState): Promise<void> {
  const now = nowMicros();
  const { sessions, traces, spans } = state.progress;
  await env.DB.batch([
    env.DB.prepare(COPY_PART).bind(jobId, shard, state.status, sessions, traces, spans, now),
    env.DB.prepare(RECOMPUTE_JOB).bind(jobId, now),
  ]);
}

/** Marks one part, and so the job, failed, saying which shard and why. */
export async function failPart(env: Env, jobId: string, shard: string, reason: string): Promise<void> {
  const now = nowMicros();
  const message = `The deletion stopped on data shard ${shard}: ${reason}`;
  const job = await env.DB.prepare("SELECT organization_id FROM org_jobs WHERE id = ?1").bind(jobId).first<{ organization_id: string }>();
  if (job) await failShardPart(env, shard, { id: jobId, organizationId: job.organization_id }).catch(() => undefined);
  await env.DB.batch([
    env.DB.prepare("UPDATE org_job_shards SET status = 'failed', error_message = ?3, updated_at = ?4 WHERE job_id = ?1 AND shard = ?2 AND status IN ('queued', 'running')").bind(
      jobId,
      shard,
      reason,
      now,
    ),
    env.DB.prepare("UPDATE org_jobs SET status = 'failed', error_message = ?2, updated_at = ?3 WHERE id = ?1 AND status IN ('queued', 'running')").bind(jobId, message, now),
  ]);
}
