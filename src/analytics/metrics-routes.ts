/**
 * `POST /v2/projects/{pid}/metrics/search` and `.../metrics/custom_search` (contract, section 9;
 * docs/analytics.md). Both read the records of one run in a time window, under the scan
 * admission of docs/limits.md.
 */
import { gzipSync } from "node:zlib";
import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { database } from "../db/client";
import type { AppEnv } from "../http/app-env";
import { commonErrorResponses, ProjectIdParam, tooLargeResponse } from "../http/common-schemas";
import type { Router } from "../http/create-router";
import { RequestValidationError } from "../http/errors";
import { ownedRunWithProject } from "../projects/run-access";
import { refineRunSelector, runSelectorOf, runSelectorShape } from "../projects/run-selector";
import { normalizeFilters } from "../search/normalize-search-request";
import { AGGREGATIONS, customCellPlan, customPlan, type MetricDetail } from "./custom-search";
import { metricsAnswerJson } from "./metrics-answer";
import { traceMetricsPlan } from "./metrics-search";
import { groupSpecOf, namedMetric, namedValue } from "./metric-values";
import { metricsWindow } from "./metrics-window";
import { runAggregation } from "./run-aggregation";
import { traceMetricsJson } from "./trace-metrics-read";

const MAX_METRIC_DETAILS = 100;
const Minutes = z.number().int().min(1).max(525_600 * 10);
const Time = z.string().openapi({ description: "ISO 8601 date-time", format: "date-time", example: "2026-11-01T00:00:00Z" });
const GroupBy = z.string().min(1).max(300).nullish().openapi({
  description: "`name`, `status_code`, `tags` (a record counts under each of its tags) or `user_metadata.<key>`; for spans also `type` and `model`. The 20 groups with most records are shown, the rest summed under `other`.",
});

const MetricsSearchBody = z
  .object({
    ...runSelectorShape,
    start_time: Time,
    end_time: Time,
    filters: z.array(z.unknown()).nullish().openapi({ description: "Filter leaves on trace columns, as in traces/partial_search; combined with AND." }),
    interval: Minutes.default(5).openapi({ description: "Bucket length in minutes (at most 1,000 buckets)." }),
    group_by: GroupBy,
  })
  .superRefine(refineRunSelector)
  .openapi("MetricsSearchRequest");

const MetricDetailSchema = z.object({
  id: z.string().min(1).max(255),
  metric_name: z.string().min(1).max(255).openapi({ description: "A metric (`duration_ns`, `cost`, `toxicity`, ...) or a number / boolean column (`status_code`, `temperature`, `is_complete`, `has_children`)." }),
  aggregation: z.enum(AGGREGATIONS),
});

const CustomSearchBody = z
  .object({
    ...runSelectorShape,
    filter_tree: z.unknown().optional().openapi({ description: "A filter tree as in partial_search, on columns of record_type." }),
    start_time: Time,
    end_time: Time,
    interval_minutes: Minutes.default(5),
    record_type: z.enum(["trace", "span", "session"]).default("trace"),
    metric_details: z.array(MetricDetailSchema).min(1).max(MAX_METRIC_DETAILS),
    group_by: GroupBy,
  })
  .superRefine(refineRunSelector)
  .openapi("MetricsCustomSearchRequest");

const Bucket = z.record(z.string(), z.union([z.string(), z.number(), z.null()])).openapi({
  description: "`start_bucket_time`, `end_bucket_time`, and `value` (or one property per group value when grouped)",
});
const MetricsResponse = z
  .object({
    group_by_columns: z.array(z.string()),
    aggregate_metrics: z.record(z.string(), z.number().nullable()),
    bucketed_metrics: z.record(z.string(), z.array(Bucket)),
  })
  .openapi("MetricsResponse");

const metricsSearch = createRoute({
  method: "post",
  path: "/projects/{project_id}/metrics/search",
  tags: ["Analytics"],
  summary: "Trace counts, errors, latency, tokens and cost over time",
  description:
    "Over the run's traces created in [start_time, end_time): `trace_count`, `session_count`, `span_count`, `error_count`, `error_rate`, `average_latency_ns`, `p50/p90/p95/p99_latency_ns`, `total_input_tokens`, `total_output_tokens`, `total_tokens`, `total_cost`, `average_cost` and `average_<metric>` of every other metric; `aggregate_metrics` over the whole window, `bucketed_metrics` per bucket (every bucket, empty ones with counts 0 and other values null). Exact (percentiles by nearest rank). Records hidden by the retention are not counted. Scan-class (docs/limits.md).",
  request: { params: ProjectIdParam, body: { content: { "application/json": { schema: MetricsSearchBody } }, required: true } },
  responses: { 200: { content: { "application/json": { schema: MetricsResponse } }, description: "The figures" }, ...tooLargeResponse, ...commonErrorResponses },
});

const customSearch = createRoute({
  method: "post",
  path: "/projects/{project_id}/metrics/custom_search",
  tags: ["Analytics"],
  summary: "Chosen aggregations of metrics over time",
  description:
    "Each of `metric_details` (at most 100) aggregates a metric or a number / boolean column of the run's traces, spans or sessions created in [start_time, end_time): Count (records with a value), Sum, Average, Min, Max, P50, P90, P95, P99 (nearest rank), PercentageTrue, PercentageFalse (0..100). Traces without filter_tree, ungrouped or grouped by name, tags or the declared analytics metadata key, are answered from pre-aggregates when every detail names a metric (not a column) and percentiles are of duration_ns only (within 1% of the nearest rank); otherwise the window is scanned, scan-class (docs/limits.md), and refused with 503 past METRICS_SCAN_MAX_RECORDS records.",
  request: { params: ProjectIdParam, body: { content: { "application/json": { schema: CustomSearchBody } }, required: true } },
  responses: { 200: { content: { "application/json": { schema: MetricsResponse } }, description: "The figures" }, ...tooLargeResponse, ...commonErrorResponses },
});

async function ownedRun(c: Context<AppEnv>, projectId: string, body: Parameters<typeof runSelectorOf>[0]) {
  const selector = runSelectorOf(body);
  await ownedRunWithProject(database(c.env.DB), c.get("principal"), projectId, selector);
  return selector.runId;
}

/** Answers at least this long go out gzipped to clients that accept it. */
const COMPRESS_FROM_BYTES = 16 * 1024;

/**
 * The client's own Accept-Encoding: Cloudflare (and miniflare, which mimics it) hands the Worker
 * `Accept-Encoding: br, gzip` whatever the client sent, and keeps the client's in
 * `request.cf.clientAcceptEncoding`; a test's request without `cf` has only the header.
 */
function clientAcceptEncoding(c: Context<AppEnv>): string {
  const cf = (c.req.raw as { cf?: { clientAcceptEncoding?: string } }).cf;
  return cf?.clientAcceptEncoding ?? c.req.header("Accept-Encoding") ?? "";
}

/**
 * An answer written as JSON text already (metrics-answer.ts), with c.json's content type. Typed
 * as the route's JSON response (`as never`, as the export's stream is): its text is that schema's.
 * A long one (1.4 MB at 1-hour buckets over 30 days) goes out gzipped at level 1 when the client
 * accepts it (clientAcceptEncoding), marked `encodeBody: "manual"` so that workerd sends these
 * bytes as they are. Cloudflare's edge, and miniflare after it, would compress a plain JSON answer
 * at their default level; an answer already gzip-encoded they pass on unchanged. On this repetitive
 * text level 1 costs well under the default level's CPU for a slightly larger body (figures:
 * docs/analytics.md, "The answer").
 */
function jsonText(c: Context<AppEnv>, text: string) {
  const headers: Record<string, string> = { "Content-Type": "application/json" };
  if (text.length >= COMPRESS_FROM_BYTES && /\bgzip\b/i.test(clientAcceptEncoding(c))) {
    headers["Content-Encoding"] = "gzip";
    headers.Vary = "Accept-Encoding";
    return new Response(gzipSync(text, { level: 1 }), { status: 200, headers, encodeBody: "manual" }) as never;
  }
  return new Response(text, { status: 200, headers }) as never;
}

export function registerMetrics(app: Router): void {
  app.openapi(metricsSearch, async (c) => {
    const { project_id } = c.req.valid("param");
    const body = c.req.valid("json");
    // The request's own faults (window, interval, group, filters) before the run's lookup, as before.
    metricsWindow(body.start_time, body.end_time, body.interval, "interval");
    groupSpecOf(body.group_by, "trace");
    normalizeFilters({ filters: body.filters ?? [] }, "trace");
    const runId = await ownedRun(c, project_id, body);
    return jsonText(c, await traceMetricsJson(c, { ...body, projectId: project_id, runId }));
  });

  app.openapi(customSearch, async (c) => {
    const { project_id } = c.req.valid("param");
    const body = c.req.valid("json");
    const family = body.record_type;
    const window = metricsWindow(body.start_time, body.end_time, body.interval_minutes, "interval_minutes");
    const group = groupSpecOf(body.group_by, family);
    const filter = normalizeFilters({ filter_tree: body.filter_tree }, family);
    const ids = new Set<string>();
    body.metric_details.forEach((d, i) => {
      if (ids.has(d.id)) {
        const msg = `Value error, id '${d.id}' is used by two metric_details`;
        throw new RequestValidationError([{ loc: ["body", "metric_details", i, "id"], msg, type: "value_error", input: d.id, ctx: { error: msg.slice(13) } }]);
      }
      ids.add(d.id);
    });
    const runId = await ownedRun(c, project_id, body);
    let plan: ReturnType<typeof customPlan> | undefined;
    const result = await runAggregation(c, { projectId: project_id, runId, family, filter, window, group }, (runMetrics) => {
      const details: MetricDetail[] = body.metric_details.map((d, i) => {
        const value = namedValue(d.metric_name, family, runMetrics, ["body", "metric_details", i, "metric_name"]);
        // Named by what it is (`cost` and `metrics/cost` are one value), so the cells can tell metrics from columns.
        const metric = namedMetric(d.metric_name, family);
        return { id: d.id, aggregation: d.aggregation, valueName: metric === null ? d.metric_name : `metrics/${metric}`, value };
      });
      plan = customPlan(details);
      // The pre-aggregated cells answer it when they hold every value (run-aggregation.ts decides whether the shape is theirs).
      return { values: () => plan!.values, percentiles: plan.percentiles, cells: family === "trace" ? customCellPlan(plan) : undefined };
    });
    return jsonText(c, metricsAnswerJson(result, window, group.kind !== "none", plan!.keys, plan!.figures));
  });
}
