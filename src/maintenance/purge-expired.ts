/**
 * Purges what the service keeps only for a while, on the cron schedule (wrangler.toml
 * `[triggers]`, the worker's `scheduled` handler):
 * - held streaming updates whose record never arrived (`record_patches`, PATCH_HOLD_MICROS):
 *   they may hold input and output text, so they must not outlive their purpose even when no
 *   new update arrives to purge them in passing;
 * - tombstones of erased records (`record_tombstones`, TOMBSTONE_MICROS).
 * Each statement removes at most PURGE_BATCH rows, oldest first, through the table's time
 * index, so none holds the database for long; a run stops after PURGE_MAX_STATEMENTS (a few
 * percent of an invocation's D1 query allowance) and the next run goes on.
 */
import { PATCH_HOLD_MICROS } from "../ingest/streaming-patches";
import { TOMBSTONE_MICROS } from "../ingest/tombstones";

export const PURGE_BATCH = 1000;
export const PURGE_MAX_STATEMENTS = 50;

const PURGE_PATCHES = `
DELETE FROM record_patches WHERE rowid IN
  (SELECT rowid FROM record_patches WHERE created_at < ?1 ORDER BY created_at LIMIT ?2)`;

const PURGE_TOMBSTONES = `
DELETE FROM record_tombstones WHERE (project_id, record_id) IN
  (SELECT project_id, record_id FROM record_tombstones WHERE deleted_at < ?1 ORDER BY deleted_at LIMIT ?2)`;

export interface PurgeOutcome {
  patches: number;
  tombstones: number;
  /** False when the run stopped at its statement budget with more left to purge. */
  complete: boolean;
}

/** Purges what expired before `nowMicros`. */
export async function purgeExpired(d1: D1Database, nowMicros: number): Promise<PurgeOutcome> {
  const outcome: PurgeOutcome = { patches: 0, tombstones: 0, complete: true };
  let statements = 0;
  for (const [sql, cutoff, field] of [
    [PURGE_PATCHES, nowMicros - PATCH_HOLD_MICROS, "patches"],
    [PURGE_TOMBSTONES, nowMicros - TOMBSTONE_MICROS, "tombstones"],
  ] as const) {
    for (;;) {
      if (statements >= PURGE_MAX_STATEMENTS) return { ...outcome, complete: false };
      statements += 1;
      const removed = (await d1.prepare(sql).bind(cutoff, PURGE_BATCH).run()).meta.changes;
      outcome[field] += removed;
      if (removed < PURGE_BATCH) break;
    }
  }
  return outcome;
}
