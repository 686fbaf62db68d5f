/**
 * Retention: how long a project keeps its records (docs/retention.md). A project's
 * `retention_days` (1 to 3650, or null for "keep for ever") fixes a **cut-off**: records whose
 * `created_at` is before `now - retention_days` are expired. Searches hide them at once
 * (src/search adds the cut-off to the created_at range), and the hourly cron erases them through
 * the deletion engine (src/retention/schedule-expiry.ts, src/deletion/expiry-sql.ts).
 */
export const MIN_RETENTION_DAYS = 1;
export const MAX_RETENTION_DAYS = 3650;

const MICROS_PER_DAY = 86_400_000_000;

/**
 * The first created_at (microseconds) a project with this retention still shows: for a bound
 * SQL parameter, where "keeps everything" is the smallest integer rather than null.
 */
export function firstShownMicros(retentionDays: number | null | undefined, nowMicros: number): number {
  return retentionCutoffMicros(retentionDays, nowMicros) ?? Number.MIN_SAFE_INTEGER;
}

/** The first created_at (microseconds) a project with this retention still shows, or null. */
export function retentionCutoffMicros(retentionDays: number | null | undefined, nowMicros: number): number | null {
  if (retentionDays === null || retentionDays === undefined) return null;
  return nowMicros - retentionDays * MICROS_PER_DAY;
}
