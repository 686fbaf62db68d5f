/**
 * The text index's upkeep (migration 0016), run by the upkeep (src/upkeep: after writes, and by every cron): records are indexed in chunks,
 * by moving one of two watermarks; the index covers pending_through < rid <= indexed_through.
 *
 * The catch-up (the steady state): inserts do not index, so ingest pays nothing for the index;
 * raising `indexed_through` by a chunk of rids makes the trigger `records_text_catch_up`
 * index the records written since, in the same statement. Run every minute, it keeps the
 * unindexed tail to what was written since the last chunk; searches read that tail as a scan would.
 *
 * The backfill: records written before the index existed are indexed from the highest rid down. A chunk is one statement: lowering
 * `records_text_backfill.pending_through` by BACKFILL_CHUNK_RIDS makes the trigger
 * `records_text_backfill_chunk` index the rows it passes, in the same statement, so a crash never
 * leaves the watermark and the index apart, and running a chunk twice (a retried message, a
 * dead run's successor) only indexes the next rows. Searches stay exact meanwhile: they read the rows at or
 * below the watermark as a scan would (src/search/text-driver.ts).
 */

/**
 * Rids per chunk: at most this many records (ids are dense; deleted ones leave gaps), about
 * 2 KB of text each on the benchmark's dataset, tokenized in well under a second, far from
 * D1's 30 s per statement.
 */
export const BACKFILL_CHUNK_RIDS = 2_000;

/** Rids per catch-up chunk: as the backfill's. */
export const CATCH_UP_CHUNK_RIDS = 2_000;

const CHUNK_SQL = `UPDATE records_text_backfill SET pending_through = max(0, pending_through - ?1) WHERE id = 1 AND pending_through > 0 RETURNING pending_through`;

/** Runs one chunk; the rid at or below which records still wait (0: the backfill is done). */
export async function backfillChunk(db: D1Database, chunkRids = BACKFILL_CHUNK_RIDS): Promise<number> {
  const row = await db.prepare(CHUNK_SQL).bind(chunkRids).first<{ pending_through: number }>();
  return row?.pending_through ?? 0;
}

export const CATCH_UP_SQL = `UPDATE records_text_backfill SET indexed_through = min(indexed_through + ?1, (SELECT max(rid) FROM records)) WHERE id = 1 AND indexed_through < (SELECT max(rid) FROM records)`;
const UNINDEXED_SQL = `SELECT coalesce((SELECT max(rid) FROM records), 0) - indexed_through AS unindexed FROM records_text_backfill WHERE id = 1`;

/** Runs one catch-up chunk of up to `chunkRids` rids; how many rids above the index are left (0: caught up). */
export async function catchUpChunk(db: D1Database, chunkRids = CATCH_UP_CHUNK_RIDS): Promise<number> {
  const [, left] = await db.batch<{ unindexed: number }>([db.prepare(CATCH_UP_SQL).bind(chunkRids), db.prepare(UNINDEXED_SQL)]);
  return Math.max(0, left!.results[0]?.unindexed ?? 0);
}
