/**
 * Route contracts of `POST /projects/{project_id}/{traces|spans|sessions}/count`: how many records
 * of a run match a filter. The `galileo` SDK's client knows these routes (`LogRecordsQueryCount`),
 * and the trace explorer shows the total of a table with them. The body is the search body;
 * pagination, sort and select_columns are accepted and ignored. Handler: count-handler.ts.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { RecordFamily } from "../columns/standard-columns";
import { commonErrorResponses, ProjectIdParam } from "../http/common-schemas";
import { refineRunSelector } from "../projects/run-selector";
import { ROUTE_SEGMENT } from "./search-routes";
import { PartialSearchRequestSchema } from "./search-schemas";

/**
 * Counting stops here: a count costs what it reads, like a page of this many records, so a table
 * of a million-record run gets "10,000+" in a few milliseconds instead of a scan of the run.
 */
export const COUNT_CAP = 10_000;

const CountBody = PartialSearchRequestSchema.superRefine(refineRunSelector);

export const CountResponseSchema = z
  .object({
    total_count: z.number().int().openapi({ description: `Records that match, up to ${COUNT_CAP}.` }),
    capped: z.boolean().openapi({ description: `True when more than ${COUNT_CAP} records match: total_count is then ${COUNT_CAP}, a lower bound.` }),
  })
  .openapi("LogRecordsQueryCountResponse");

export function countRoute(family: RecordFamily) {
  const segment = ROUTE_SEGMENT[family];
  return createRoute({
    method: "post",
    path: `/projects/{project_id}/${segment}/count`,
    tags: ["Search"],
    summary: `Count the ${segment} of a run that match a filter`,
    description: `Takes the body of \`${segment}/partial_search\` (run selector, \`filters\`, \`filter_tree\`; pagination, sort and select_columns are ignored) and answers how many records match, exactly up to ${COUNT_CAP}; beyond that \`capped\` is true.`,
    request: {
      params: ProjectIdParam,
      body: { content: { "application/json": { schema: CountBody } }, required: true },
    },
    responses: {
      200: { content: { "application/json": { schema: CountResponseSchema } }, description: "The count" },
      ...commonErrorResponses,
    },
  });
}
