/**
 * The body of both export routes (contract section 10) and the search query it becomes: the
 * streamed export and the queued one read the same records. A queued export stores the body and
 * compiles it again in each queue message, as the route did.
 */
import { z } from "@hono/zod-openapi";
import { standardColumnsOf } from "../columns/standard-columns";
import { RequestValidationError } from "../http/errors";
import { refineRunSelector } from "../projects/run-selector";
import { normalizeSearchRequest } from "../search/normalize-search-request";
import { resolveSelectedColumn } from "../search/search-columns";
import type { SearchQuery } from "../search/search-query";
import { PartialSearchRequestSchema } from "../search/search-schemas";

export const ExportBody = PartialSearchRequestSchema.extend({
  root_type: z.enum(["session", "trace", "span"]).openapi({ description: "The records that are lines (rows) of the export." }),
  export_format: z.enum(["jsonl", "jsonl_flat", "csv"]).default("jsonl"),
  redact: z.boolean().default(true).openapi({ description: "Where a record has redacted_input / redacted_output, they replace input / output." }),
  column_ids: z.array(z.string()).max(200).nullish().openapi({ description: "CSV only: the columns, in order; default the root type's standard columns." }),
  file_name: z.string().max(255).nullish().openapi({ description: "Content-Disposition file name (sanitised)." }),
}).superRefine(refineRunSelector);

export type ExportBody = z.infer<typeof ExportBody>;

function csvColumns(requested: readonly string[] | null | undefined, family: SearchQuery["family"]): string[] {
  if (!requested || requested.length === 0) return standardColumnsOf(family).map((c) => c.id);
  const issues = requested.flatMap((id, index) => {
    const resolved = resolveSelectedColumn(id, family);
    return resolved.ok ? [] : [{ loc: ["body", "column_ids", index], msg: resolved.message, type: "value_error", input: id, ctx: { error: resolved.message } }];
  });
  if (issues.length > 0) throw new RequestValidationError(issues);
  return [...requested];
}

/**
 * The roots' search query (every field, every metric and feedback of each record; the reader
 * sets the page) and CSV's columns. Annotation leaves still need binding to the project's
 * templates (bindAnnotationColumns) and the project's retention its window (withinRetention).
 */
export function exportQueryOf(body: ExportBody): { base: SearchQuery; columns: string[] } {
  const family = body.root_type;
  const searched = normalizeSearchRequest({ ...body, select_columns: null, pagination: null, limit: null, starting_token: null }, family, "partial");
  const columns = body.export_format === "csv" ? csvColumns(body.column_ids, family) : [];
  const base: SearchQuery = {
    ...searched,
    projection: { columns: null, metrics: "all", feedback: true },
    includeCounts: true,
    includeMetricInfo: body.include_code_metric_metadata === true,
    truncateFields: false,
  };
  return { base, columns };
}
