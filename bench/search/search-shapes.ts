/**
 * The query shapes of the search benchmark (issue 3), as a client sends them (contract section 4:
 * `filters` leaves with `column_id`, `filter_tree` nodes, top-level `limit`/`starting_token`).
 * Each is chosen so that the first page is full at 100k and at 1M records (see the dataset
 * layout in dataset/synthetic-traces.ts): what is measured is the cost of finding a page, not
 * of returning fewer rows.
 */
import type { DatasetManifest } from "../dataset/dataset-cache";

/**
 * `indexed`: an index serves the filter and the order (targets: endpoint ≤ 1.5 × floor, engine
 * under 2 ms, 1M ≤ 1.2 × 100k). `scan` and `deep`: the run is read (a substring search, an
 * offset of 50,000), so only the endpoint's overhead on the floor is held to a target (1.2 ×).
 */
export type ShapeClass = "indexed" | "scan" | "deep";

export interface SearchShape {
  id: string;
  title: string;
  route: "traces" | "spans" | "sessions";
  class: ShapeClass;
  body(dataset: DatasetManifest): Record<string, unknown>;
}

const PAGE = 100;
const DAY_MICROS = 24 * 3600 * 1_000_000;

const iso = (micros: number) => new Date(Math.floor(micros / 1000)).toISOString();
const leaf = (type: string, column_id: string, operator: string, value: unknown) => ({ type, column_id, operator, value });

export const SEARCH_SHAPES: readonly SearchShape[] = [
  {
    id: "first-page",
    title: "first page, native order",
    route: "spans",
    class: "indexed",
    body: (d) => ({ log_stream_id: d.tenant.logStreamId, limit: PAGE }),
  },
  {
    id: "date-range",
    title: "created_at in one day",
    route: "spans",
    class: "indexed",
    body: (d) => {
      const from = d.window.startMicros + 15 * DAY_MICROS;
      return {
        log_stream_id: d.tenant.logStreamId,
        limit: PAGE,
        filters: [leaf("date", "created_at", "gte", iso(from)), leaf("date", "created_at", "lt", iso(from + DAY_MICROS))],
      };
    },
  },
  {
    id: "llm-model",
    title: "type = llm and model = gpt-4o-mini",
    route: "spans",
    class: "indexed",
    body: (d) => ({
      log_stream_id: d.tenant.logStreamId,
      limit: PAGE,
      filters: [leaf("text", "type", "eq", "llm"), leaf("text", "model", "eq", "gpt-4o-mini")],
    }),
  },
  {
    id: "metadata",
    title: "user_metadata.customer = cust-007",
    route: "traces",
    class: "indexed",
    body: (d) => ({ log_stream_id: d.tenant.logStreamId, limit: PAGE, filters: [leaf("text", "user_metadata.customer", "eq", "cust-007")] }),
  },
  {
    id: "tag",
    title: "tags contains vip",
    route: "traces",
    class: "indexed",
    body: (d) => ({ log_stream_id: d.tenant.logStreamId, limit: PAGE, filters: [leaf("collection", "tags", "contains", "vip")] }),
  },
  {
    id: "metric-sorted",
    title: "metrics/toxicity > 0.8, sorted by it (desc)",
    route: "spans",
    class: "indexed",
    body: (d) => ({
      log_stream_id: d.tenant.logStreamId,
      limit: PAGE,
      filters: [leaf("number", "metrics/toxicity", "gt", 0.8)],
      sort: { column_id: "metrics/toxicity", ascending: false, sort_type: "column" },
    }),
  },
  {
    id: "not-or",
    title: "not (type = tool or status_code ≥ 500)",
    route: "spans",
    class: "indexed",
    body: (d) => ({
      log_stream_id: d.tenant.logStreamId,
      limit: PAGE,
      filter_tree: { not: { or: [{ filter: leaf("text", "type", "eq", "tool") }, { filter: leaf("number", "status_code", "gte", 500) }] } },
    }),
  },
  {
    id: "text-scan",
    title: `input contains a rare word (scan)`,
    route: "spans",
    class: "scan",
    body: (d) => ({ log_stream_id: d.tenant.logStreamId, limit: PAGE, filters: [leaf("text", "input", "contains", d.rareWord)] }),
  },
  {
    id: "deep-page",
    title: "page at starting_token 50,000",
    route: "spans",
    class: "deep",
    body: (d) => ({ log_stream_id: d.tenant.logStreamId, limit: PAGE, starting_token: 50_000 }),
  },
];

export function shapePath(shape: SearchShape, dataset: DatasetManifest): string {
  return `/v2/projects/${dataset.tenant.projectId}/${shape.route}/partial_search`;
}
