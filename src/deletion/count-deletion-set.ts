/**
 * Dry run: how many sessions, traces and spans a deletion would remove now, without deleting.
 * The matching sessions and then the matching traces are walked a page at a time (one short
 * statement per page, see deletion-sql.ts), so a large dry run never holds the database for long.
 * Under concurrent writes the figure is a snapshot per page, not of one instant.
 */
import type { DeletionCounts } from "./deletion-jobs";
import { COUNT_SESSION_PAGE, COUNT_TRACE_PAGE } from "./deletion-sql";

export interface MetadataSelector {
  organizationId: string;
  key: string;
  value: string;
}

/** Matching sessions (or traces) per page. */
const PAGE_SIZE = 200;

interface PageRow {
  roots: number;
  last_rowid: number | null;
  traces: number;
  spans: number;
}

export async function countDeletionSet(d1: D1Database, selector: MetadataSelector): Promise<DeletionCounts> {
  const counts: DeletionCounts = { sessions: 0, traces: 0, spans: 0 };
  for (const [sql, kind] of [
    [COUNT_SESSION_PAGE, "sessions"],
    [COUNT_TRACE_PAGE, "traces"],
  ] as const) {
    let after = 0;
    for (;;) {
      const page = await d1
        .prepare(sql)
        .bind(selector.organizationId, selector.key, selector.value, after, PAGE_SIZE)
        .first<PageRow>();
      if (!page || page.roots === 0 || page.last_rowid === null) break;
      if (kind === "sessions") counts.sessions += page.roots;
      counts.traces += page.traces;
      counts.spans += page.spans;
      if (page.roots < PAGE_SIZE) break;
      after = page.last_rowid;
    }
  }
  return counts;
}
