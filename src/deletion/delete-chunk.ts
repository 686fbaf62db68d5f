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
import { CHUNK_STATEMENTS, type ChunkValues } from "./deletion-sql";

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

/**
 * A tombstone stamp for one chunk: a time in microseconds (milliseconds and a random
 * sub-millisecond part), so that the scheduled purge can age tombstones out and two chunks
 * running at once (two deliveries, two jobs) tell their tombstones apart.
 */
export function chunkStamp(): number {
  return Date.now() * 1000 + Math.floor(Math.random() * 1000);
}

export async function deleteChunk(d1: D1Database, job: DeletionJob, limits: ChunkLimits): Promise<ChunkOutcome> {
  const values: ChunkValues = {
    organizationId: job.organizationId,
    key: job.key,
    value: job.value,
    jobId: job.id,
    roots: limits.roots,
    sessionTraces: limits.sessionTraces,
    spans: limits.spans,
    stamp: chunkStamp(),
    now: nowMicros(),
  };
  const results = await d1.batch(CHUNK_STATEMENTS.map((s) => d1.prepare(s.sql).bind(...s.params.map((name) => values[name]))));
  const row = results.at(-1)?.results[0] as ProgressRow | undefined;
  if (!row) throw new Error(`deletion job ${job.id} vanished during a chunk`);
  return {
    status: row.status,
    progress: { sessions: row.sessions_deleted, traces: row.traces_deleted, spans: row.spans_deleted },
  };
}
