/**
 * Dry run: how many sessions, traces and spans a deletion would remove now, without deleting.
 * The matching sessions, then the matching traces, then the matching spans are walked a page at
 * a time (one short statement per page, see deletion-sql.ts), so a large dry run never holds the
 * database for long. Under concurrent writes the figure is a snapshot per page, not of one
 * instant.
 *
 * The walk is bounded (DRY_RUN_MAX_PAGES statements, within a request's D1 query allowance):
 * past that the counts are what was counted so far and `exact` is false: the deletion would
 * remove at least that much.
 */
import type { DeletionCounts } from "./deletion-jobs";
import { COUNT_SESSION_PAGE, COUNT_SPAN_PAGE, COUNT_TRACE_PAGE } from "./deletion-sql";

export interface MetadataSelector {
  organizationId: string;
  key: string;
  value: string;
}

/** Matching sessions (or traces, or spans) per page. */
const PAGE_SIZE = 200;

/** Statements one dry run may run: 100 pages of 200 matching records, 20,000 matches in all. */
export const DRY_RUN_MAX_PAGES = 100;

export interface DryRunCounts {
  counts: DeletionCounts;
  /** False when the walk stopped at DRY_RUN_MAX_PAGES: the counts are a lower bound. */
  exact: boolean;
}

interface PageRow {
  roots: number;
  last_rid: number | null;
  traces: number;
  spans: number;
}

export async function countDeletionSet(d1: D1Database, selector: MetadataSelector, maxPages = DRY_RUN_MAX_PAGES): Promise<DryRunCounts> {
  const counts: DeletionCounts = { sessions: 0, traces: 0, spans: 0 };
  let pages = 0;
  for (const [sql, kind] of [
    [COUNT_SESSION_PAGE, "sessions"],
    [COUNT_TRACE_PAGE, "traces"],
    [COUNT_SPAN_PAGE, "spans"],
  ] as const) {
    let after = 0;
    for (;;) {
      if (pages >= maxPages) return { counts, exact: false };
      pages += 1;
      const page = await d1
        .prepare(sql)
        .bind(selector.organizationId, selector.key, selector.value, after, PAGE_SIZE)
        .first<PageRow>();
      if (!page || page.roots === 0 || page.last_rid === null) break;
      if (kind === "sessions") counts.sessions += page.roots;
      counts.traces += page.traces;
      counts.spans += page.spans;
      if (page.roots < PAGE_SIZE) break;
      after = page.last_rid;
    }
  }
  return { counts, exact: true };
}
