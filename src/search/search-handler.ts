import type { Router } from "../http/create-router";
import { runSelectorOf } from "../projects/run-selector";
import { normalizeSearchRequest, type SearchMode } from "./normalize-search-request";
import { runSearch } from "./run-search";
import { withinTextIndexedAdmission } from "./search-cost";
import { SEARCH_FAMILIES, searchRoute } from "./search-routes";
import { registerFilterDocs } from "./search-schemas";

/** The six search routes: partial and full search of traces, spans and sessions. */
export function registerSearch(app: Router): void {
  registerFilterDocs(app.openAPIRegistry);
  for (const family of SEARCH_FAMILIES) {
    for (const mode of ["partial", "full"] as const satisfies readonly SearchMode[]) {
      app.openapi(searchRoute(family, mode), async (c) => {
        const { project_id } = c.req.valid("param");
        const body = c.req.valid("json");
        // Validation (422) comes before the ownership check (404), as in FastAPI.
        const query = normalizeSearchRequest(body, family, mode);
        const principal = c.get("principal");
        const response = await withinTextIndexedAdmission(c.env, principal.organizationId, query, (options) => runSearch(c, project_id, runSelectorOf(body), query, options));
        return c.json(response, 200);
      });
    }
  }
}
