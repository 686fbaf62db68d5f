/**
 * Backfill (contract section 15): `POST .../metric_settings/backfill` `{start_time, end_time,
 * scorer_ids?}` scores the run's stored records created in `[start_time, end_time)` as an org-job
 * (`job_name: "score"`, progress `{records_scored, records_skipped, errors}`), advanced through
 * the evaluation queue: each message reads and scores up to CHUNKS_PER_MESSAGE chunks of
 * RECORDS_PER_CHUNK records, in (family, created_at, id) order on records_family_order, and
 * saves its progress with the cursor in one conditional batch (a redelivered message whose step
 * was saved already does nothing more; the results' writes are idempotent anyway). A backfill
 * may replace a result of an older version of its scorer (the only way a new version re-scores).
 * Scorers not in the run's settings run with no filters, their own node types and rate 1.
 *
 * A project whose partitions sit on several shards (contract section 13) is backfilled shard by
 * shard: the project's own shard, then each other shard holding a partition, in the order its
 * first partition opened (projectRecordDatabases). The saved `family` counts passes over
 * (shard, family): pass = shard index x 3 + family, so a project on one shard saves exactly what
 * it saved before partitions, and a job in flight when partitions landed continues where it was.
 * Each chunk's results are written on the shard it was read from, beside its records.
 */
import { microsToIso, nowMicros } from "../db/client";
import type { Env } from "../env";
import { judgeRecords } from "./judge-calls";
import { activeScorers, projectRecordDatabases, RECORDS_PER_CHUNK, scoreChunk, type ScoringContext } from "./score-records";
import { type RunSettings, runSettings } from "./run-settings";
import { SCORABLE_COLUMNS, type ScorableRecord } from "./scorable-record";

export const SCORE_JOB = "score";
const CHUNKS_PER_MESSAGE = 10;
const MESSAGE_BUDGET_MS = 15_000;
const FAMILIES = ["session", "trace", "span"] as const;

interface BackfillState {
  job_id: string;
  organization_id: string;
  project_id: string;
  run_id: string;
  start_time: number;
  end_time: number;
  scorer_ids: string | null;
  family: number;
  after_created_at: number | null;
  after_id: string | null;
  step: number;
  status: string;
}

export async function startBackfill(
  env: Env,
  job: { organizationId: string; projectId: string; runId: string; createdBy: string; startMicros: number; endMicros: number; scorerIds: string[] | null },
): Promise<string> {
  const jobId = crypto.randomUUID();
  const now = nowMicros();
  const request = { project_id: job.projectId, run_id: job.runId, start_time: microsToIso(job.startMicros), end_time: microsToIso(job.endMicros), scorer_ids: job.scorerIds };
  await env.DB.batch([
    env.DB.prepare("INSERT INTO org_jobs (id, organization_id, job_name, status, request_data, created_by, created_at, updated_at) VALUES (?1, ?2, ?3, 'queued', ?4, ?5, ?6, ?6)").bind(
      jobId, job.organizationId, SCORE_JOB, JSON.stringify(request), job.createdBy, now,
    ),
    env.DB.prepare("INSERT INTO evaluation_backfills (job_id, organization_id, project_id, run_id, start_time, end_time, scorer_ids) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)").bind(
      jobId, job.organizationId, job.projectId, job.runId, job.startMicros, job.endMicros, job.scorerIds ? JSON.stringify(job.scorerIds) : null,
    ),
  ]);
  await env.EVALUATION_QUEUE.send({ kind: "backfill", jobId });
  return jobId;
}

const READ_CHUNK = `SELECT ${SCORABLE_COLUMNS} FROM records
WHERE family_key = (SELECT key FROM run_families WHERE run_id = ?1 AND record_type = ?2)
  AND created_at >= ?3 AND created_at < ?4 AND (?5 IS NULL OR created_at > ?5 OR (created_at = ?5 AND id > ?6))
ORDER BY created_at, id LIMIT ?7`;

/** The settings a backfill scores with: the run's, restricted to (or extended by) the chosen scorers. */
function backfillSettings(settings: RunSettings | null, scorerIds: string[] | null): RunSettings {
  const base = settings ?? { scorers: [], segment_filters: [] };
  if (!scorerIds) return base;
  return { ...base, scorers: scorerIds.map((id) => base.scorers.find((s) => s.id === id) ?? { id, filters: [], scoreable_node_types: null }) };
}

/** Advances one backfill by one message's budget; whether it continues. */
export async function advanceBackfill(env: Env, jobId: string): Promise<"continues" | "done"> {
  const started = Date.now();
  for (let chunk = 0; chunk < CHUNKS_PER_MESSAGE && Date.now() - started < MESSAGE_BUDGET_MS; chunk++) {
    const state = await env.DB.prepare("SELECT b.*, j.status FROM evaluation_backfills AS b JOIN org_jobs AS j ON j.id = b.job_id WHERE b.job_id = ?1").bind(jobId).first<BackfillState>();
    if (!state || (state.status !== "queued" && state.status !== "running")) return "done";
    const databases = await projectRecordDatabases(env, state.organization_id, state.project_id);
    const passes = databases.length * FAMILIES.length;
    if (state.family >= passes) return "done";
    const settings = backfillSettings(await runSettings(env, state.run_id, true), state.scorer_ids ? (JSON.parse(state.scorer_ids) as string[]) : null);
    const scorers = await activeScorers(env, state.organization_id, settings);
    const { db } = databases[Math.floor(state.family / FAMILIES.length)]!;
    const family = FAMILIES[state.family % FAMILIES.length];
    const records = scorers.length === 0 ? [] : (await db.prepare(READ_CHUNK).bind(state.run_id, family, state.start_time, state.end_time, state.after_created_at, state.after_id ?? "", RECORDS_PER_CHUNK).all<ScorableRecord>()).results;
    const ctx: ScoringContext = { env, organizationId: state.organization_id, projectId: state.project_id, settings, scorers, backfill: true };
    const tally = records.length > 0 ? await scoreChunk(ctx, db, records, judgeRecords) : { scored: 0, skipped: 0, errors: 0 };
    const last = records[records.length - 1];
    const next = scorers.length === 0 ? { family: passes, at: null, id: null } : records.length < RECORDS_PER_CHUNK ? { family: state.family + 1, at: null, id: null } : { family: state.family, at: last!.created_at, id: last!.id };
    const done = next.family >= passes;
    const [saved] = await env.DB.batch([
      env.DB.prepare("UPDATE evaluation_backfills SET family = ?2, after_created_at = ?3, after_id = ?4, step = step + 1 WHERE job_id = ?1 AND step = ?5").bind(jobId, next.family, next.at, next.id, state.step),
      env.DB.prepare(
        `UPDATE org_jobs SET records_scored = records_scored + ?2, records_skipped = records_skipped + ?3, score_errors = score_errors + ?4,
           status = CASE WHEN ?5 THEN 'completed' ELSE 'running' END, updated_at = ?6
         WHERE id = ?1 AND changes() > 0 AND status IN ('queued', 'running')`,
      ).bind(jobId, tally.scored, tally.skipped, tally.errors, done ? 1 : 0, nowMicros()),
    ]);
    if ((saved?.meta.changes ?? 0) === 0 || done) return "done";
  }
  return "continues";
}

/** A backfill message: advance, then hand over to the next message; a job that keeps failing is marked failed by the consumer. */
export async function handleBackfillMessage(env: Env, jobId: string, attempts: number): Promise<void> {
  try {
    if ((await advanceBackfill(env, jobId)) === "continues") await env.EVALUATION_QUEUE.send({ kind: "backfill", jobId });
  } catch (error) {
    if (attempts < 8) throw error;
    await env.DB.prepare("UPDATE org_jobs SET status = 'failed', error_message = ?2, updated_at = ?3 WHERE id = ?1 AND status IN ('queued', 'running')")
      .bind(jobId, `the backfill failed: ${error instanceof Error ? error.message : String(error)}`, nowMicros())
      .run();
  }
}
