/**
 * The count routes (count-routes.ts). A count is the search statement itself, compiled for one
 * page of COUNT_CAP records in the native order and counted: the same filter compiler, access
 * paths, tenancy guard and validation as a search, so a count never disagrees with the pages it
 * totals, and it costs at most what a page of COUNT_CAP ids costs. One D1 round trip, like a search.
 */
import { database } from "../db/client";
import type { Router } from "../http/create-router";
import { ownedRunOrThrow, runOwnershipQuery } from "../projects/run-access";
import { runSelectorOf } from "../projects/run-selector";
import { compileSearchQuery } from "./compile-search-query";
import { COUNT_CAP, countRoute } from "./count-routes";
import { normalizeSearchRequest } from "./normalize-search-request";
import type { SearchQuery } from "./search-query";
import { SEARCH_FAMILIES } from "./search-routes";

export function registerCounts(app: Router): void {
  for (const family of SEARCH_FAMILIES) {
    app.openapi(countRoute(family), async (c) => {
      const { project_id } = c.req.valid("param");
      const body = c.req.valid("json");
      const principal = c.get("principal");
      const selector = runSelectorOf(body);
      const searched = normalizeSearchRequest(body, family, "partial");
      // Only the id of each match is read: no sort (the native order has an index), no counts.
      const query: SearchQuery = {
        ...searched,
        sort: null,
        limit: COUNT_CAP,
        offset: 0,
        projection: { columns: [], metrics: new Set(), feedback: false },
        includeCounts: false,
        includeMetricInfo: false,
        truncateFields: false,
      };
      const page = compileSearchQuery(query, {
        organizationId: principal.organizationId,
        projectId: project_id,
        runId: selector.runId,
        runKind: selector.kind,
      });
      const ownership = runOwnershipQuery(database(c.env.DB), principal, project_id, selector).toSQL();
      const d1 = c.env.DB;
      const [owned, counted] = await d1.batch<{ total: number }>([
        d1.prepare(ownership.sql).bind(...ownership.params),
        // The statement returns at most COUNT_CAP + 1 rows: one more than the cap says "capped".
        d1.prepare(`SELECT count(*) AS "total" FROM (${page.sql})`).bind(...page.params),
      ]);
      ownedRunOrThrow((owned?.results ?? []) as never[]);
      const total = Number(counted?.results?.[0]?.total ?? 0);
      return c.json({ total_count: Math.min(total, COUNT_CAP), capped: total > COUNT_CAP }, 200);
    });
  }
}
