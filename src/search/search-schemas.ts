/**
 * The request and response bodies of the search routes (contract, section 4).
 *
 * zod validates the envelope only. The filter tree is validated by normalize-search-request.ts:
 * it must be resolved against the column catalogue anyway, its depth and size must be checked
 * before anything recurses into it, and a leaf may omit `type` (the SDK's `filter_tree` leaves
 * carry none) so it cannot be a discriminated union here. Its documented shape is the
 * `FilterExpression` component registered by `registerFilterDocs`.
 */
import { z } from "@hono/zod-openapi";
import type { OpenAPIRegistry } from "@asteasolutions/zod-to-openapi";
import type { FilterType } from "../columns/standard-columns";
import { runSelectorShape } from "../projects/run-selector";
import { OPERATORS_BY_TYPE } from "./filter-operators";
import { SEARCH_LIMITS } from "./search-limits";

const PageSize = z.number().int().min(1).max(SEARCH_LIMITS.maxPageSize);
const StartingToken = z.number().int().min(0);

export const PaginationSchema = z
  .object({
    limit: PageSize.nullish().openapi({ description: `Records per page, 1 to ${SEARCH_LIMITS.maxPageSize}; default ${SEARCH_LIMITS.defaultPageSize}.` }),
    starting_token: StartingToken.nullish().openapi({ description: "Zero-based offset of the page; default 0." }),
  })
  .openapi("SearchPagination");

export const SortSchema = z
  .object({
    column_id: z.string().nullish().openapi({ description: "Column to sort on: a standard sortable column, `metrics/<name>`, `user_metadata.<key>` or `dataset_metadata.<key>`." }),
    name: z.string().nullish().openapi({ description: "Alias of `column_id` (the interface's spelling)." }),
    ascending: z.boolean().nullish().openapi({ description: "Default true." }),
    sort_type: z.literal("column").nullish(),
  })
  .openapi("SearchSort", { description: "Records without a value sort last; ties are broken by id in the same direction." });

export const SelectColumnsSchema = z
  .object({
    column_ids: z
      .array(z.string())
      .max(SEARCH_LIMITS.maxSelectedColumns)
      .nullish()
      .openapi({ description: "Columns to return (standard ids, `metrics/<name>`, `user_metadata.<key>`, `dataset_metadata.<key>`). Empty or absent: every field." }),
    metric_columns_names: z.array(z.string().min(1).max(SEARCH_LIMITS.maxColumnKeyLength)).max(SEARCH_LIMITS.maxSelectedColumns).nullish(),
    include_all_metrics: z.boolean().nullish(),
    include_all_feedback: z.boolean().nullish(),
    includes_metric_columns: z.boolean().nullish().openapi({ description: "Same as include_all_metrics." }),
  })
  .openapi("SelectColumns");

const FILTER_ELEMENT_DOC = {
  description: `A filter leaf or an and/or/not node (see FilterExpression). At most ${SEARCH_LIMITS.maxLeaves} leaves, ${SEARCH_LIMITS.maxNodes} nodes and depth ${SEARCH_LIMITS.maxTreeDepth} over filters and filter_tree together.`,
};

const searchFields = {
  ...runSelectorShape,
  filters: z
    .array(z.unknown().openapi({ ...FILTER_ELEMENT_DOC, $ref: "#/components/schemas/FilterExpression" } as never))
    .nullish()
    .openapi({ description: "Filter elements, combined with AND (and with filter_tree)." }),
  filter_tree: z
    .unknown()
    .optional()
    .openapi({ ...FILTER_ELEMENT_DOC, $ref: "#/components/schemas/FilterExpression" } as never),
  pagination: PaginationSchema.nullish(),
  limit: PageSize.nullish().openapi({ description: "Same as pagination.limit (the SDK's spelling); pagination wins when both are given." }),
  starting_token: StartingToken.nullish().openapi({ description: "Same as pagination.starting_token." }),
  previous_last_row_id: z.string().nullish().openapi({ description: "Accepted and ignored: pages are offsets." }),
  sort: SortSchema.nullish(),
  include_counts: z.boolean().nullish().openapi({ description: "Adds num_spans to traces and num_traces to sessions." }),
  include_code_metric_metadata: z
    .boolean()
    .nullish()
    .openapi({ description: "Adds metric_info.<name> = {status_type: 'success', value, metadata} for every returned metric." }),
  truncate_fields: z.boolean().nullish().openapi({ description: `Cuts input, output and dataset strings to ${SEARCH_LIMITS.truncatedFieldLength} characters.` }),
};

export const FullSearchRequestSchema = z.object(searchFields).openapi("LogRecordsSearchRequest");

export const PartialSearchRequestSchema = z
  .object({ ...searchFields, select_columns: SelectColumnsSchema.nullish() })
  .openapi("LogRecordsPartialSearchRequest");

export type SearchRequestBody = z.infer<typeof PartialSearchRequestSchema>;

export const SearchResponseSchema = z
  .object({
    records: z.array(z.record(z.string(), z.unknown())).openapi({ description: "Records of the page, shaped by kind (`type`)." }),
    num_rows: z.number().int().openapi({ description: "Records in this page." }),
    num_records: z.number().int().openapi({ description: "Records in this page (same as num_rows)." }),
    starting_token: z.number().int(),
    limit: z.number().int(),
    paginated: z.boolean().openapi({ description: "True when more records follow this page." }),
    next_starting_token: z.number().int().nullable().openapi({ description: "Offset of the next page; null on the last page." }),
    last_row_id: z.string().nullable().openapi({ description: "Id of the last record of this page." }),
  })
  .openapi("LogRecordsSearchResponse");

export type SearchResponse = z.infer<typeof SearchResponseSchema>;

const VALUE_DOC: Record<FilterType, object> = {
  id: { oneOf: [{ type: "string", format: "uuid" }, { type: "array", items: { type: "string", format: "uuid" } }] },
  date: { type: "string", format: "date-time" },
  number: { oneOf: [{ type: "number" }, { type: "array", items: { type: "number" }, minItems: 2, maxItems: 2 }] },
  boolean: { type: "boolean" },
  collection: { oneOf: [{ type: "string" }, { type: "array", items: { type: "string" } }] },
  text: { oneOf: [{ type: "string" }, { type: "array", items: { type: "string" } }] },
};

function leafDoc(type: FilterType) {
  return {
    type: "object",
    required: ["column_id", "value"],
    properties: {
      type: { type: "string", enum: [type], description: "May be omitted: the column's filter type is then used." },
      column_id: { type: "string", description: "Column id (`name` is accepted as an alias)." },
      operator: { type: "string", enum: [...OPERATORS_BY_TYPE[type]] },
      value: VALUE_DOC[type],
      ...(type === "text" || type === "collection" ? { case_sensitive: { type: "boolean", default: true } } : {}),
    },
  };
}

const LEAF_DOC_NAMES: Record<FilterType, string> = {
  id: "IdFilter",
  date: "DateFilter",
  number: "NumberFilter",
  boolean: "BooleanFilter",
  collection: "CollectionFilter",
  text: "TextFilter",
};

/** Documentation of the filter tree, as OpenAPI components (the shapes normalize-search-request.ts accepts). */
export function registerFilterDocs(registry: OpenAPIRegistry): void {
  const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
  for (const [type, name] of Object.entries(LEAF_DOC_NAMES) as [FilterType, string][]) {
    registry.registerComponent("schemas", name, leafDoc(type) as never);
  }
  registry.registerComponent("schemas", "FullyAnnotatedFilter", {
    type: "object",
    required: ["type"],
    properties: { type: { type: "string", enum: ["fully_annotated"] }, user_ids: { type: "array", items: { type: "string", format: "uuid" } } },
    description: "Matches no record: this service stores no annotations.",
  } as never);
  const leaves = [...Object.values(LEAF_DOC_NAMES), "FullyAnnotatedFilter"].map(ref);
  registry.registerComponent("schemas", "FilterExpression", {
    description:
      "A leaf, `{filter: leaf}`, `{and: [FilterExpression]}` (empty: true), `{or: [FilterExpression]}` (empty: false) or `{not: FilterExpression}`. A leaf on a column the record has no value for is false (ne and not_in included); not of it is true.",
    oneOf: [
      ...leaves,
      { type: "object", required: ["filter"], properties: { filter: { oneOf: leaves } } },
      { type: "object", required: ["and"], properties: { and: { type: "array", items: ref("FilterExpression") } } },
      { type: "object", required: ["or"], properties: { or: { type: "array", items: ref("FilterExpression") } } },
      { type: "object", required: ["not"], properties: { not: ref("FilterExpression") } },
    ],
  } as never);
}
