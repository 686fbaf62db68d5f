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
 *
 * Each page reads every record below its matches (all the traces and spans of a matching session,
 * the whole subtree of a matching span), which can be a whole run: a dry run is scan-class
 * (DRY_RUN_COST), run under its organization's scan admission (docs/limits.md).
 */
import type { Env } from "../env";
import type { QueryCost } from "../limits/scan-admission";
import { shardDatabase } from "../shards/shard-config";
import type { DeletionCounts } from "./deletion-job-types";
import { shardsOfOrganization } from "./job-parts";
import { COUNT_SESSION_PAGE, COUNT_SPAN_PAGE, COUNT_TRACE_PAGE } from "./deletion-sql";

export interface MetadataSelector {
  organizationId: string;
  key: string;
  value: string;
}

/** Matching sessions (or traces, or spans) per page. */
const PAGE_SIZE = 200;

/** What the limits see of a dry run: never indexed, whatever matches (see above). */
export const DRY_RUN_COST: QueryCost = { class: "scan", reasons: ["a deletion dry run counts every record below each match, up to whole runs"] };

/** Statements one dry run may run: 100 pages of 200 matching records, 20,000 matches in all. */
export const DRY_RUN_MAX_PAGES = 100;

export interface DryRunCounts {
  counts: DeletionCounts;
  /** False when the walk stopped at DRY_RUN_MAX_PAGES: the counts are a lower bound. */
  exact: boolean;
}

interface PageRow {
  roots: number;
  /** Metadata rows the page looked at (roots of projects held elsewhere are not counted). */
  examined: number;
  /** The keyset of the last metadata row examined (null when none was). */
  last_family_key: number | null;
  last_created_at: number | null;
  last_record_id: string | null;
  traces: number;
  spans: number;
}

/** The dry run over every database holding the organization's projects, summed, within one page budget. */
export async function countDeletionSet(env: Env, selector: MetadataSelector, maxPages = DRY_RUN_MAX_PAGES): Promise<DryRunCounts> {
  const total: DeletionCounts = { sessions: 0, traces: 0, spans: 0 };
  let pagesLeft = maxPages;
  for (const shard of await shardsOfOrganization(env, selector.organizationId)) {
    const part = await countOnDatabase(shardDatabase(env, shard), selector, pagesLeft);
    total.sessions += part.counts.sessions;
    total.traces += part.counts.traces;
    total.spans += part.counts.spans;
    pagesLeft -= part.pages;
    if (!part.exact) return { counts: total, exact: false };
  }
  return { counts: total, exact: true };
}

async function countOnDatabase(d1: D1Database, selector: MetadataSelector, maxPages: number): Promise<DryRunCounts & { pages: number }> {
  const counts: DeletionCounts = { sessions: 0, traces: 0, spans: 0 };
  let pages = 0;
  for (const [sql, kind] of [
    [COUNT_SESSION_PAGE, "sessions"],
    [COUNT_TRACE_PAGE, "traces"],
    [COUNT_SPAN_PAGE, "spans"],
  ] as const) {
    // Family keys start at 1: (0, 0, '') comes before every metadata row.
    let after: [familyKey: number, createdAt: number, recordId: string] = [0, 0, ""];
    for (;;) {
      if (pages >= maxPages) return { counts, exact: false, pages };
      pages += 1;
      const page = await d1
        .prepare(sql)
        .bind(selector.organizationId, selector.key, selector.value, after[0], PAGE_SIZE, after[1], after[2])
        .first<PageRow>();
      if (!page || page.examined === 0 || page.last_family_key === null || page.last_created_at === null || page.last_record_id === null) break;
      if (kind === "sessions") counts.sessions += page.roots;
      counts.traces += page.traces;
      counts.spans += page.spans;
      if (page.examined < PAGE_SIZE) break;
      after = [page.last_family_key, page.last_created_at, page.last_record_id];
    }
  }
  return { counts, exact: true, pages };
}
