/**
 * Runs a search in ONE D1 round trip: the run-ownership check and the page statement (which
 * carries its own counts) go in a single `batch`. The answer is withheld unless the ownership row
 * came back, and the page statement is itself confined to the caller's run (see
 * compile-search-query.ts), so another organization's project or run is a 404 and its records
 * are never read into a response.
 */
import { database } from "../db/client";
import type { Principal } from "../http/app-env";
import { ownedRunOrThrow, runOwnershipQuery } from "../projects/run-access";
import type { RunSelector } from "../projects/run-selector";
import { compileSearchQuery } from "./compile-search-query";
import type { SearchQuery } from "./search-query";
import type { SearchResponse } from "./search-schemas";
import { type StoredRow, shapeRecord } from "./shape-record";

export async function runSearch(
  d1: D1Database,
  principal: Principal,
  projectId: string,
  selector: RunSelector,
  query: SearchQuery,
): Promise<SearchResponse> {
  const ownership = runOwnershipQuery(database(d1), principal, projectId, selector).toSQL();
  const page = compileSearchQuery(query, {
    organizationId: principal.organizationId,
    projectId,
    runId: selector.runId,
    runKind: selector.kind,
  });
  const [owned, rows] = await d1.batch<StoredRow>([
    d1.prepare(ownership.sql).bind(...ownership.params),
    d1.prepare(page.sql).bind(...page.params),
  ]);
  ownedRunOrThrow((owned?.results ?? []) as never[]);
  return pageResponse((rows?.results ?? []) as StoredRow[], query);
}

/**
 * The page and its pagination fields, from the rows the statement returned: limit + 1 (to know
 * whether more follow), or fewer when the page's byte budget cut it (compile-search-query.ts):
 * then more follow too, from the first record not returned.
 */
function pageResponse(rows: StoredRow[], query: SearchQuery): SearchResponse {
  const read = Number((rows[0] as { _rows_read?: number } | undefined)?._rows_read ?? rows.length);
  const cutBySize = rows.length < read;
  const paginated = cutBySize || rows.length > query.limit;
  const records = rows.slice(0, query.limit).map((row) => shapeRecord(row, query));
  const last = records[records.length - 1];
  return {
    records,
    num_rows: records.length,
    num_records: records.length,
    starting_token: query.offset,
    limit: query.limit,
    paginated,
    next_starting_token: paginated ? query.offset + records.length : null,
    last_row_id: last ? String(last.id) : null,
  };
}
