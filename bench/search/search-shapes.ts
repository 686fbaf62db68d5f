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
 * under 2 ms, 1M ≤ 1.2 × 100k). `scan` and `deep`: the run is read (a 2-character substring, an
 * offset of 50,000), so only the endpoint's overhead on the floor is held to a target (1.2 ×).
 * `text-index` (issue 23), `annotation` (issue 20 part 8) and `metrics` (issue 21 point 4): held
 * to their endpoint p50 over a reference shape's endpoint p50 in the same run (`relative`).
 */
export type ShapeClass = "indexed" | "scan" | "deep" | "text-index" | "annotation" | "metrics";

/** A target on the shape's endpoint p50 over the reference shape's endpoint p50, same run and size. */
export interface RelativeTarget {
  reference: string;
  /** At most this ratio: the target (or, with `fail`, the goal). */
  goal: number;
  /** Beyond this ratio the shape fails; between `goal` and it, the goal is missed. */
  fail?: number;
}

export interface SearchShape {
  id: string;
  title: string;
  /** A record kind's `partial_search`, or `metrics` for `metrics/search`. */
  route: "traces" | "spans" | "sessions" | "metrics";
  class: ShapeClass;
  relative?: RelativeTarget;
  body(dataset: DatasetManifest): Record<string, unknown>;
}

const PAGE = 100;
const DAY_MICROS = 24 * 3600 * 1_000_000;
const HOUR_MINUTES = 60;
const DAY_MINUTES = 24 * 60;

/**
 * A substring too short for the trigram index (fewer than 3 characters), found in no record: the
 * search reads every record of the run, as the rare word's did before the index.
 */
export const SHORT_NEEDLE = "qz";

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
    id: "text-index",
    title: "input contains a rare word (text index)",
    route: "spans",
    class: "text-index",
    relative: { reference: "first-page", goal: 1.5, fail: 5 },
    body: (d) => ({ log_stream_id: d.tenant.logStreamId, limit: PAGE, filters: [leaf("text", "input", "contains", d.rareWord)] }),
  },
  {
    id: "short-needle",
    title: `input contains "${SHORT_NEEDLE}" (2 characters: scan)`,
    route: "spans",
    class: "scan",
    body: (d) => ({ log_stream_id: d.tenant.logStreamId, limit: PAGE, filters: [leaf("text", "input", "contains", SHORT_NEEDLE)] }),
  },
  {
    id: "deep-page",
    title: "page at starting_token 50,000",
    route: "spans",
    class: "deep",
    body: (d) => ({ log_stream_id: d.tenant.logStreamId, limit: PAGE, starting_token: 50_000 }),
  },
  {
    id: "annotation-dislike",
    title: "annotations/<like_dislike> = false (dislikes)",
    route: "traces",
    class: "annotation",
    relative: { reference: "metadata", goal: 1.5 },
    body: (d) => ({ log_stream_id: d.tenant.logStreamId, limit: PAGE, filters: [leaf("boolean", `annotations/${templates(d).like_dislike}`, "eq", false)] }),
  },
  {
    id: "annotation-low-score",
    title: "annotations/<score> < 3",
    route: "traces",
    class: "annotation",
    relative: { reference: "metadata", goal: 1.5 },
    body: (d) => ({ log_stream_id: d.tenant.logStreamId, limit: PAGE, filters: [leaf("number", `annotations/${templates(d).score}`, "lt", 3)] }),
  },
  metricsShape("metrics-hourly", "metrics/search, 30 days, all keys, 1-hour buckets", HOUR_MINUTES, null, 3),
  metricsShape("metrics-by-name", "metrics/search, 30 days, by name, 1-day buckets", DAY_MINUTES, "name", 5),
  metricsShape("metrics-by-tags", "metrics/search, 30 days, by tags, 1-day buckets", DAY_MINUTES, "tags", 5),
  metricsShape("metrics-by-customer", "metrics/search, 30 days, by user_metadata.customer (declared), 1-day buckets", DAY_MINUTES, "user_metadata.customer", 5),
];

function templates(d: DatasetManifest) {
  if (!d.steadyState) throw new Error(`dataset ${d.key} has no annotation templates (built before the finishing step)`);
  return d.steadyState.annotations.templates;
}

/** metrics/search over the dataset's whole window (every key it reports), against first-page. */
function metricsShape(id: string, title: string, intervalMinutes: number, groupBy: string | null, goal: number): SearchShape {
  return {
    id,
    title,
    route: "metrics",
    class: "metrics",
    relative: { reference: "first-page", goal },
    body: (d) => ({
      log_stream_id: d.tenant.logStreamId,
      start_time: iso(d.window.startMicros),
      end_time: iso(d.window.endMicros),
      interval: intervalMinutes,
      ...(groupBy ? { group_by: groupBy } : {}),
    }),
  };
}

/** The route a shape calls, relative to the project. */
export function shapeRoute(shape: SearchShape): string {
  return shape.route === "metrics" ? "metrics/search" : `${shape.route}/partial_search`;
}

export function shapePath(shape: SearchShape, dataset: DatasetManifest): string {
  return `/v2/projects/${dataset.tenant.projectId}/${shapeRoute(shape)}`;
}
