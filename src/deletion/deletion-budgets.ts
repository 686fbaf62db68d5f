/**
 * How much deletion work one statement, one chunk, one queue message and one request may do.
 * The figures behind them are in docs/deletion.md ("Budgets").
 */

export interface ChunkLimits {
  /** Matching sessions and traces looked at per chunk. */
  roots: number;
  /** Traces of the matching sessions looked at per chunk. */
  sessionTraces: number;
  /** Spans deleted per chunk at most. */
  spans: number;
}

export interface WorkBudget {
  /** No new chunk starts once this much wall time has passed. */
  maxMillis: number;
  /** No new chunk starts once this many records have been deleted. */
  maxRecords: number;
  /**
   * No new chunk starts once this many D1 queries (calls: a chunk's batch is one) have been made.
   * A Worker invocation may make at most 1,000 D1 queries on a paid plan; the rest of the
   * invocation (authentication, the job's own rows) stays well inside the difference.
   */
  maxQueries: number;
}

// One chunk's size is not fixed: ChunkSizer (chunk-sizer.ts) scales it to what a chunk costs.

/** `immediate=true`: what the request itself deletes before handing the rest to the queue. */
export const IMMEDIATE_BUDGET: Readonly<WorkBudget> = { maxMillis: 5_000, maxRecords: 10_000, maxQueries: 200 };

/**
 * One queue message: then a continuation is enqueued, so one long job never holds the consumer
 * (max_concurrency 1) for long. The deletion queue delivers one message per invocation
 * (max_batch_size 1 in wrangler.toml), so this is also the invocation's budget: far inside the
 * 15-minute wall limit, and 500 of the 1,000 D1 queries an invocation may make.
 */
export const MESSAGE_BUDGET: Readonly<WorkBudget> = { maxMillis: 20_000, maxRecords: 200_000, maxQueries: 500 };

/** Delay before the next attempt of a failed message: 2, 4, 8, ... seconds, capped at 10 minutes. */
export function retryDelaySeconds(attempts: number): number {
  return Math.min(2 ** Math.max(1, attempts), 600);
}

/**
 * Test-only seam. Nothing in a request or a queue message can reach it: only code running inside
 * the worker's isolate (the test suite) can set it. It lets tests drive many chunks on small
 * datasets, exhaust a budget on purpose, and crash a consumer between two committed chunks.
 */
export const deletionTestSeam: {
  chunkLimits?: ChunkLimits;
  immediateBudget?: WorkBudget;
  messageBudget?: WorkBudget;
  /** Called after each committed chunk; a throw here is a crash between chunks. */
  afterChunk?: (jobId: string) => void | Promise<void>;
} = {};

/** Fixed chunk limits set by a test; otherwise chunks are sized as they go (chunk-sizer.ts). */
export const fixedChunkLimits = (): ChunkLimits | undefined => deletionTestSeam.chunkLimits;
export const immediateBudget = (): WorkBudget => deletionTestSeam.immediateBudget ?? IMMEDIATE_BUDGET;
export const messageBudget = (): WorkBudget => deletionTestSeam.messageBudget ?? MESSAGE_BUDGET;
