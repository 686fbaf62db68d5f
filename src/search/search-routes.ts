/**
 * Route contracts of the search operations: `{traces|spans|sessions}/partial_search` (records
 * projected by `select_columns`) and `{traces|spans|sessions}/search` (full records). Pure data;
 * the handlers are in search-handler.ts.
 */
import { createRoute } from "@hono/zod-openapi";
import type { RecordFamily } from "../columns/standard-columns";
import { commonErrorResponses, ProjectIdParam } from "../http/common-schemas";
import { refineRunSelector } from "../projects/run-selector";
import type { SearchMode } from "./normalize-search-request";
import { SEARCH_LIMITS } from "./search-limits";
import { FullSearchRequestSchema, PartialSearchRequestSchema, SearchResponseSchema } from "./search-schemas";

export const SEARCH_FAMILIES = ["trace", "span", "session"] as const satisfies readonly RecordFamily[];

export const ROUTE_SEGMENT: Record<RecordFamily, string> = { trace: "traces", span: "spans", session: "sessions" };

const PartialBody = PartialSearchRequestSchema.superRefine(refineRunSelector);
const FullBody = FullSearchRequestSchema.superRefine(refineRunSelector);

const DESCRIPTION = `Searches the records of one run (exactly one of log_stream_id, experiment_id, metrics_testing_id) with filters, a sort and offset pagination. Filters: \`filters\` (a list, combined with AND) and/or \`filter_tree\` (one node); leaves on standard columns, \`metrics/<name>\`, \`user_metadata.<key>\` and \`dataset_metadata.<key>\`; a leaf on a column the record has no value for is false, and \`not\` of it is true. Sort: any sortable column, missing values last, ties by id; default created_at then id, descending. Limits: page size ${SEARCH_LIMITS.maxPageSize}, ${SEARCH_LIMITS.maxLeaves} leaves, depth ${SEARCH_LIMITS.maxTreeDepth}, ${SEARCH_LIMITS.maxListLength} list elements. See docs/search.md.`;

export function searchRoute(family: RecordFamily, mode: SearchMode) {
  const segment = ROUTE_SEGMENT[family];
  const partial = mode === "partial";
  return createRoute({
    method: "post",
    path: `/projects/{project_id}/${segment}/${partial ? "partial_search" : "search"}`,
    tags: ["Search"],
    summary: partial ? `Search ${segment}, returning the selected columns` : `Search ${segment}, returning full records`,
    description: DESCRIPTION,
    request: {
      params: ProjectIdParam,
      body: { content: { "application/json": { schema: partial ? PartialBody : FullBody } }, required: true },
    },
    responses: {
      200: { content: { "application/json": { schema: SearchResponseSchema } }, description: "One page of records" },
      ...commonErrorResponses,
    },
  });
}
