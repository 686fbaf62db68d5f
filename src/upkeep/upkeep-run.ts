/**
 * One upkeep run of one database (issue 29; docs/search.md "The text index", docs/analytics.md
 * "Pre-aggregates"): under the database's lease (upkeep-lease.ts), chunks of derived work until
 * it is caught up or the run's budget is spent, then either releases the lease (caught up, and no
 * write asked since) or hands over to a continuation message. The work, most wanted first:
 * 1. the text index's catch-up (records written since the watermark: searches read them as a
 *    scan until it passes them) and the metric cells of marked hours (reads scan those hours),
 *    interleaved so that neither starves the other behind a bulk import;
 * 2. then the backfills of records older than their structures: the text index's, the roll-ups',
 *    the metric cells' marks.
 * Every chunk is idempotent and atomic with its progress (a chunk run twice changes nothing), so
 * a run that dies leaves nothing half done and its successor simply goes on.
 *
 * Chunks are sized by time, not count: each catch-up chunk aims at CHUNK_TARGET_MS of database
 * time, so ingest requests interleave between chunks (D1 runs one statement at a time) and a
 * write waits at most about that long behind the upkeep, whatever the records' sizes.
 */
import { backfillMetricCells, refreshMetricCells } from "../analytics/metric-cells";
import { backfillRollups } from "../maintenance/backfill-rollups";
import { backfillChunk, catchUpChunk } from "../text-index/backfill";

/** Wall time a queue message's run spends starting chunks; then it hands over to its continuation. */
export const MESSAGE_BUDGET_MS = 15_000;
/** The cron's run of each database (the safety net: several databases one after the other). */
export const CRON_BUDGET_MS = 8_000;
/** D1 round trips one run makes at most: well under an invocation's 1,000 subrequests. */
export const MAX_ROUND_TRIPS = 300;

/** Database time a catch-up chunk aims at: short enough that a write behind it barely waits. */
export const CHUNK_TARGET_MS = 300;
export const MIN_CHUNK_RIDS = 100;
export const MAX_CHUNK_RIDS = 20_000;
export const FIRST_CHUNK_RIDS = 1_000;

/** Resizes the next chunk from how long the last took: proportional, at most doubling or halving. */
export function nextChunkRids(rids: number, tookMs: number): number {
  const ratio = Math.min(2, Math.max(0.5, CHUNK_TARGET_MS / Math.max(tookMs, 1)));
  return Math.round(Math.min(MAX_CHUNK_RIDS, Math.max(MIN_CHUNK_RIDS, rids * ratio)));
}

export interface UpkeepProgress {
  /** Rids of the text index's catch-up left after the last chunk (0: caught up). */
  unindexed: number;
  /** Marked hours recomputed by this run. */
  hours: number;
  /** Records the catch-up indexed (rids passed). */
  indexedRids: number;
  chunks: number;
  caughtUp: boolean;
}

export interface UpkeepLimits {
  budgetMs: number;
  maxRoundTrips?: number;
  now?: () => number;
}

/**
 * Chunks until every kind of derived work is done or the limits are reached; `caughtUp` when
 * nothing is left. Throws what a chunk throws (the caller logs it with the watermark).
 */
export async function upkeepChunks(db: D1Database, limits: UpkeepLimits): Promise<UpkeepProgress> {
  const now = limits.now ?? Date.now;
  const started = now();
  const maxRoundTrips = limits.maxRoundTrips ?? MAX_ROUND_TRIPS;
  let roundTrips = 0;
  const withinBudget = () => now() - started < limits.budgetMs && roundTrips < maxRoundTrips;
  const progress: UpkeepProgress = { unindexed: Number.POSITIVE_INFINITY, hours: 0, indexedRids: 0, chunks: 0, caughtUp: false };
  let rids = FIRST_CHUNK_RIDS;
  let cellsLeft = true;
  do {
    if (progress.unindexed > 0) {
      const before = now();
      const left = await catchUpChunk(db, rids);
      if (Number.isFinite(progress.unindexed)) progress.indexedRids += Math.max(0, progress.unindexed - left);
      progress.unindexed = left;
      rids = nextChunkRids(rids, now() - before);
      roundTrips += 1;
      progress.chunks += 1;
    }
    if (cellsLeft && withinBudget()) {
      const cells = await refreshMetricCells(db, 1);
      cellsLeft = !cells.complete;
      progress.hours += cells.hours;
      roundTrips += 3;
      progress.chunks += 1;
    }
  } while ((progress.unindexed > 0 || cellsLeft) && withinBudget());
  if (progress.unindexed > 0 || cellsLeft) return progress;
  // The backfills, one chunk of each per turn, once the steady-state work is done.
  let textBackfill = true;
  let rollups = true;
  let cellMarks = true;
  while ((textBackfill || rollups || cellMarks) && withinBudget()) {
    if (textBackfill) textBackfill = (await backfillChunk(db)) > 0;
    if (rollups) rollups = !(await backfillRollups(db, 1)).complete;
    if (cellMarks) cellMarks = !(await backfillMetricCells(db, 1)).complete;
    roundTrips += 6;
    progress.chunks += 1;
  }
  // The roll-up backfill's updates and the cell backfill's marks leave hours to recompute: the next turn's work.
  const marked = (await db.prepare("SELECT 1 FROM metric_dirty_hours LIMIT 1").first()) !== null;
  progress.caughtUp = !textBackfill && !rollups && !cellMarks && !marked;
  return progress;
}

/** Where the derived data of a database stands: logged with a failure (the watermarks). */
export async function upkeepWatermarks(db: D1Database): Promise<string> {
  try {
    const row = await db
      .prepare(
        `SELECT t.indexed_through, t.pending_through, coalesce((SELECT max(rid) FROM records), 0) AS max_rid,
           (SELECT min(hour) FROM metric_dirty_hours) AS oldest_marked_hour FROM records_text_backfill AS t WHERE t.id = 1`,
      )
      .first<{ indexed_through: number; pending_through: number; max_rid: number; oldest_marked_hour: number | null }>();
    if (!row) return "watermarks unknown";
    const hour = row.oldest_marked_hour === null ? "none" : new Date(row.oldest_marked_hour * 3_600_000).toISOString();
    return `text index through rid ${row.indexed_through} of ${row.max_rid} (backfill pending through ${row.pending_through}), oldest marked hour ${hour}`;
  } catch (error) {
    return `watermarks unreadable: ${error instanceof Error ? error.message : String(error)}`;
  }
}
