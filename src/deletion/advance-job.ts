/**
 * Advances one part of a deletion job (its work on one database) chunk by chunk within a budget.
 * Used alike by the queue consumer (per message) and by `immediate=true` requests. All state
 * lives in the part's row (`shard_jobs`) and in what is left to delete, so any number of calls,
 * in any order, repeated or concurrent, converge on the same end: every matching subtree gone,
 * progress equal to the records removed.
 */
import { yieldToEventLoop } from "../db/yield-to-event-loop";
import { ChunkSizer } from "./chunk-sizer";
import { type WorkBudget, deletionTestSeam, fixedChunkLimits } from "./deletion-budgets";
import type { DeletionCounts, DeletionJob } from "./deletion-job-types";
import { deleteChunk } from "./delete-chunk";
import { currentExpiryJob } from "./expiry-targets";
import { ensureShardPart } from "./job-parts";

/** What one call did, for the logs: chunks are what concurrent readers wait behind. */
export interface ChunkStats {
  chunks: number;
  /** Wall time of the longest chunk (one D1 batch, round trip included), in milliseconds. */
  longestChunkMs: number;
  /** Spans the last chunk could delete at most (its size as the sizer left it). */
  lastSpanLimit: number;
  /** Records this call deleted (other deliveries of the same part may have deleted more). */
  deleted: number;
  /** D1 queries this call made (the part's read, the chunks, an expiry's catalog reads). */
  queries: number;
}

export type AdvanceResult =
  /** The job is over (now, or before this call): nothing was or will be deleted for it any more. */
  | { state: "completed" | "failed"; progress: DeletionCounts; stats: ChunkStats }
  /** The budget ran out while matching records remain. */
  | { state: "unfinished"; progress: DeletionCounts; stats: ChunkStats };

const total = (c: DeletionCounts) => c.sessions + c.traces + c.spans;

/**
 * Advances the job's part on `d1` (a shard, or the catalog serving as one). `job` is the
 * catalog's job (selector, organization); a job the catalog already ended is not advanced. An
 * expiry re-reads its projects' retention from `catalog` before each chunk (expiry-targets.ts).
 */
export async function advanceJobPart(d1: D1Database, job: DeletionJob, budget: WorkBudget, catalog?: D1Database): Promise<AdvanceResult> {
  const stats: ChunkStats = { chunks: 0, longestChunkMs: 0, lastSpanLimit: 0, deleted: 0, queries: 1 };
  const part = await ensureShardPart(d1, job);
  let queries = 1;
  if (part.status === "completed" || part.status === "failed") return { state: part.status, progress: part.progress, stats };
  if (job.status === "completed" || job.status === "failed") return { state: job.status, progress: part.progress, stats };
  const started = Date.now();
  let deleted = 0;
  let before = total(part.progress);
  const sizer = new ChunkSizer();
  for (;;) {
    const limits = fixedChunkLimits() ?? sizer.limits();
    const chunkStarted = Date.now();
    let current = job;
    if (job.kind === "expiry" && catalog) {
      current = await currentExpiryJob(catalog, job);
      queries += 1;
    }
    const chunk = await deleteChunk(d1, current, limits);
    queries += 1;
    stats.queries = queries;
    const chunkMs = Date.now() - chunkStarted;
    sizer.record(chunkMs);
    stats.chunks += 1;
    stats.longestChunkMs = Math.max(stats.longestChunkMs, chunkMs);
    stats.lastSpanLimit = limits.spans;
    if (chunk.status === "completed" || chunk.status === "failed") return { state: chunk.status, progress: chunk.progress, stats };
    // Progress only grows; what another delivery of the same job removed meanwhile counts
    // against this budget too, which only makes the budget safer.
    const removed = total(chunk.progress) - before;
    before += removed;
    // A chunk of an active job always removes something while matches remain (see deletion-sql.ts):
    // if it did not, looping would spin for ever, so let the retry and dead-letter path decide.
    if (removed <= 0 && chunk.otherRowsRemoved <= 0) throw new Error(`deletion job ${job.id}: a chunk made no progress while matches remain`);
    deleted += removed;
    stats.deleted = deleted;
    await deletionTestSeam.afterChunk?.(job.id);
    if (Date.now() - started >= budget.maxMillis || deleted >= budget.maxRecords || queries >= budget.maxQueries) {
      return { state: "unfinished", progress: chunk.progress, stats };
    }
    await yieldToEventLoop();
  }
}
