/**
 * The bound on the records one metrics request may aggregate by scanning (issue 29, point 3):
 * `metrics/search` scans the hours no pre-aggregated cell serves (marked hours while the upkeep
 * recomputes them, or every hour before cells exist), `custom_search` likewise when the cells hold
 * what it asks (custom-search.ts, customCellPlan), else its whole window. A scan
 * costs database time in proportion to its records (about 10 to 20 s per million here), and a
 * backlog of stale cells can make an ordinary dashboard query read millions. So before scanning,
 * the request counts the records it would read, up to the bound (one index range of
 * `records_family_order`, covering, stopped at bound + 1 entries: about 10 ms per 100,000), and
 * past it answers 503 with `Retry-After` and why, rather than a statement that runs past D1's
 * 30 s or holds the database for everyone.
 *
 * Decision: one bound for both causes, with different messages. When the scan is long because
 * cells are stale (hours marked, the upkeep behind), waiting helps: Retry-After is a minute, the
 * upkeep's pace. When the window itself holds that many records (custom_search, a filter, a group
 * the cells do not keep), waiting does not help: the message says to narrow the window.
 */
import { ApiError } from "../http/errors";
import type { RecordFamily } from "../columns/standard-columns";

/** Default records a metrics request may scan (wrangler.toml METRICS_SCAN_MAX_RECORDS overrides). */
export const DEFAULT_SCAN_MAX_RECORDS = 250_000;

export function scanMaxRecords(raw: string | undefined): number {
  const value = Number(raw);
  return raw !== undefined && raw.trim() !== "" && Number.isInteger(value) && value > 0 ? value : DEFAULT_SCAN_MAX_RECORDS;
}

const COUNT_SQL = `SELECT count(*) AS n FROM (
  SELECT 1 FROM json_each(?1) AS sr CROSS JOIN records AS r
  WHERE r.family_key = (SELECT f.key FROM run_families AS f WHERE f.run_id = ?2 AND f.record_type = ?3)
    AND r.created_at >= sr.value ->> 0 AND r.created_at < sr.value ->> 1
  LIMIT ?4)`;

export interface ScanBoundRequest {
  runId: string;
  family: RecordFamily;
  /** [from, to) ranges of created_at (micros) the scan would read. */
  ranges: readonly (readonly [number, number])[];
  max: number;
  /** Hours marked for recomputation among the scanned ones: the scan is long because the upkeep is behind. */
  staleHours: number;
}

/** Seconds a client waits when cells are being recomputed: about one upkeep message's run. */
export const STALE_RETRY_AFTER_SECONDS = 30;
/** Seconds a client waits when the window itself is too large: a retry alone will not help. */
export const LARGE_RETRY_AFTER_SECONDS = 300;

/** Throws the 503 when the ranges hold more than `max` records of the run's family. */
export async function assertScanWithinBound(db: D1Database, request: ScanBoundRequest): Promise<void> {
  if (request.ranges.length === 0) return;
  const row = await db.prepare(COUNT_SQL).bind(JSON.stringify(request.ranges), request.runId, request.family, request.max + 1).first<{ n: number }>();
  if ((row?.n ?? 0) <= request.max) return;
  const limit = request.max.toLocaleString("en-US");
  if (request.staleHours > 0) {
    throw new ApiError(
      503,
      `The pre-aggregated metrics of ${request.staleHours} hour(s) of this window are being recomputed after recent writes, and reading those hours' records instead would scan more than ${limit} records: try again shortly (the upkeep catches up in the background), or ask for a shorter window.`,
      { "Retry-After": String(STALE_RETRY_AFTER_SECONDS) },
    );
  }
  throw new ApiError(
    503,
    `This request would aggregate more than ${limit} ${request.family} records by scanning (no pre-aggregate serves it): narrow the window (start_time, end_time), or ask what the pre-aggregates serve: traces without filters, ungrouped or grouped by name, tags or the declared metadata key (metrics/search, or custom_search of metrics, not columns, with percentiles of duration_ns only).`,
    { "Retry-After": String(LARGE_RETRY_AFTER_SECONDS) },
  );
}
