/**
 * One chunk of a deletion job: one D1 batch, so it commits whole or not at all. Each DELETE is
 * followed by the UPDATE that adds its `changes()` to the job's progress, so progress counts
 * exactly the records removed, even when two deliveries of one message run at once: a record
 * already deleted by the other delivery is simply not there to count.
 */
import { nowMicros } from "../db/client";
import type { JobStatus } from "../db/schema";
import type { ChunkLimits } from "./deletion-budgets";
import type { DeletionCounts, DeletionJob } from "./deletion-job-types";
import { CHUNK_STATEMENTS, type ChunkValues } from "./deletion-sql";
import { COMPLETE_FILTER_PART, FILTER_CHUNK_STATEMENTS, type FilterChunkValues } from "./filter-deletion-sql";
import { EXPIRY_CHUNK_STATEMENTS, type ExpiryChunkValues, PATCHES_REMOVED_INDEX, bindingsOf } from "./expiry-sql";

export interface ChunkOutcome {
  /** The job after the chunk: `completed` when nothing matching is left. */
  status: JobStatus;
  /**
   * The job's progress after the chunk. (The batch's own `meta.changes` is no use here: it also
   * counts the metadata, tag and metric rows removed by cascade.)
   */
  progress: DeletionCounts;
  /** Rows removed that progress does not count (an expiry's held updates): progress all the same. */
  otherRowsRemoved: number;
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
  if (job.kind === "expiry") return expireChunk(d1, job, limits);
  if (job.kind === "filter") return filterChunk(d1, job, limits);
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
  return outcomeOf(row);
}

function outcomeOf(row: ProgressRow, otherRowsRemoved = 0): ChunkOutcome {
  return {
    status: row.status,
    progress: { sessions: row.sessions_deleted, traces: row.traces_deleted, spans: row.spans_deleted },
    otherRowsRemoved,
  };
}

/**
 * One chunk of a retention expiry (expiry-sql.ts): the job's projects and their cut-offs travel
 * as one JSON parameter. Expired traces are looked at `roots` at a time, spans and held updates
 * deleted `spans` at a time, as a deletion's chunk.
 */
async function expireChunk(d1: D1Database, job: Extract<DeletionJob, { kind: "expiry" }>, limits: ChunkLimits): Promise<ChunkOutcome> {
  const targets = JSON.stringify(job.projects.map((p) => [p.project_id, p.cutoff]));
  const values: ExpiryChunkValues = [targets, job.id, limits.roots, limits.spans, nowMicros()];
  const results = await d1.batch(EXPIRY_CHUNK_STATEMENTS.map((sql) => d1.prepare(sql).bind(...bindingsOf(sql, values))));
  const row = results.at(-1)?.results[0] as ProgressRow | undefined;
  if (!row) throw new Error(`expiry job ${job.id} vanished during a chunk`);
  const patches = Number((results[PATCHES_REMOVED_INDEX]?.results[0] as { patches_removed?: number } | undefined)?.patches_removed ?? 0);
  return outcomeOf(row, patches);
}

/**
 * One chunk of a deletion by filter (filter-deletion-sql.ts): the job's compiled search statement
 * picks the first `roots` records that match now (live records, so a record changed or added since
 * the job started is judged as it is), then one batch erases their subtrees, children first. A
 * root whose subtree outlasts the chunk still matches and is picked again by the next one. When
 * the filter matches nothing, the part completes. Two round trips per chunk.
 */
async function filterChunk(d1: D1Database, job: Extract<DeletionJob, { kind: "filter" }>, limits: ChunkLimits): Promise<ChunkOutcome> {
  const { request } = job;
  const picked = await d1
    .prepare(`SELECT id FROM (${request.selection.sql}) LIMIT ?2`)
    .bind(request.selection.parameter, limits.roots)
    .all<{ id: string }>();
  const roots = picked.results.map((row) => row.id);
  if (roots.length === 0) {
    const now = nowMicros();
    const [, read] = await d1.batch([d1.prepare(COMPLETE_FILTER_PART[0]).bind(job.id, now), d1.prepare(COMPLETE_FILTER_PART[1]).bind(job.id)]);
    const row = read?.results[0] as ProgressRow | undefined;
    if (!row) throw new Error(`deletion job ${job.id} vanished during a chunk`);
    return outcomeOf(row);
  }
  const values: FilterChunkValues = [
    JSON.stringify(roots),
    job.id,
    request.project_id,
    request.run_id,
    job.organizationId,
    limits.spans,
    chunkStamp(),
    nowMicros(),
    limits.sessionTraces,
  ];
  const results = await d1.batch(FILTER_CHUNK_STATEMENTS.map((s) => d1.prepare(s.sql).bind(...s.params.map((index) => values[index]))));
  const row = results.at(-1)?.results[0] as ProgressRow | undefined;
  if (!row) throw new Error(`deletion job ${job.id} vanished during a chunk`);
  return outcomeOf(row);
}
