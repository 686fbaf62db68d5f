/**
 * One chunk of a deletion job: one D1 batch, so it commits whole or not at all. Each DELETE is
 * followed by the UPDATE that adds its `changes()` to the job's progress, so progress counts
 * exactly the records removed, even when two deliveries of one message run at once: a record
 * already deleted by the other delivery is simply not there to count.
 */
import { nowMicros } from "../db/client";
import type { JobStatus } from "../db/schema";
import type { ChunkLimits } from "./deletion-budgets";
import type { DeletionCounts, DeletionJob } from "./deletion-jobs";
import {
  COMPLETE_IF_DONE,
  COUNT_DELETED_SESSIONS,
  COUNT_DELETED_SPANS,
  COUNT_DELETED_TRACES,
  DELETE_SESSIONS,
  DELETE_SPANS,
  DELETE_TRACES,
  JOB_PROGRESS,
  MARK_RUNNING,
  REFRESH_PARENTS,
} from "./deletion-sql";

export interface ChunkOutcome {
  /** The job after the chunk: `completed` when nothing matching is left. */
  status: JobStatus;
  /**
   * The job's progress after the chunk. (The batch's own `meta.changes` is no use here: it also
   * counts the metadata, tag and metric rows removed by cascade.)
   */
  progress: DeletionCounts;
}

interface ProgressRow {
  status: JobStatus;
  sessions_deleted: number;
  traces_deleted: number;
  spans_deleted: number;
}

export async function deleteChunk(d1: D1Database, job: DeletionJob, limits: ChunkLimits): Promise<ChunkOutcome> {
  const now = nowMicros();
  const scope = [job.organizationId, job.key, job.value, job.id] as const;
  const results = await d1.batch([
    d1.prepare(MARK_RUNNING).bind(job.id, now),
    d1.prepare(DELETE_SPANS).bind(...scope, limits.roots, limits.sessionTraces, limits.spans),
    d1.prepare(COUNT_DELETED_SPANS).bind(job.id, now),
    d1.prepare(REFRESH_PARENTS).bind(...scope, limits.roots, limits.sessionTraces),
    d1.prepare(DELETE_TRACES).bind(...scope, limits.roots, limits.sessionTraces),
    d1.prepare(COUNT_DELETED_TRACES).bind(job.id, now),
    d1.prepare(DELETE_SESSIONS).bind(...scope, limits.roots),
    d1.prepare(COUNT_DELETED_SESSIONS).bind(job.id, now),
    d1.prepare(COMPLETE_IF_DONE).bind(job.id, now, job.organizationId, job.key, job.value),
    d1.prepare(JOB_PROGRESS).bind(job.id),
  ]);
  const row = results.at(-1)?.results[0] as ProgressRow | undefined;
  if (!row) throw new Error(`deletion job ${job.id} vanished during a chunk`);
  return {
    status: row.status,
    progress: { sessions: row.sessions_deleted, traces: row.traces_deleted, spans: row.spans_deleted },
  };
}
