/**
 * The dashboard's requests and what it draws from their answers (docs/analytics.md).
 *
 * Grouped by nothing, a trace name, a tag or a metadata key, everything comes from one
 * `metrics/search` over the run's traces. Traces carry no model (their llm spans do), so grouped by
 * model the charts are of the run's llm spans, from one `metrics/custom_search` over spans: calls,
 * errors, latency, tokens and cost per model.
 */
import { api } from "../api/client";
import { runSelector, type RunRef } from "../api/endpoints";
import type { Family, FilterJson, FilterLeafJson } from "../api/types";
import type { TimeWindow } from "./dashboard-state";

/** How a chart's values read: the axis and the tooltips format them by it. */
export type ChartUnit = "count" | "nano_seconds" | "tokens" | "dollars" | "fraction" | string;

export interface ChartSpec {
  key: string;
  title: string;
  unit: ChartUnit;
}

export interface Bucket {
  startMs: number;
  endMs: number;
}

/** Values per bucket (null: nothing to aggregate there), one list per series. */
export interface SeriesSet {
  /** "" for the one series of an ungrouped chart, else the group values. */
  names: string[];
  values: (number | null)[][];
}

export interface DashboardData {
  /** What the charts count: traces, or llm spans when grouped by model. */
  family: Extract<Family, "traces" | "spans">;
  buckets: Bucket[];
  /** The group values, most records first (`other`: the rest); empty when not grouped. */
  groups: string[];
  charts: ChartSpec[];
  series: Record<string, SeriesSet>;
  totals: Record<string, number | null>;
}

interface MetricsAnswer {
  group_by_columns: string[];
  aggregate_metrics: Record<string, number | null>;
  bucketed_metrics: Record<string, Record<string, string | number | null>[]>;
}

/** A metric's label and unit, from the run's columns (`metrics/<name>`). */
export type MetricInfo = Map<string, { label: string; unit: string | null }>;

const TRACE_CHARTS: ChartSpec[] = [
  { key: "trace_count", title: "Traces", unit: "count" },
  { key: "error_count", title: "Errors", unit: "count" },
  { key: "p50_latency_ns", title: "Latency p50", unit: "nano_seconds" },
  { key: "p95_latency_ns", title: "Latency p95", unit: "nano_seconds" },
  { key: "total_tokens", title: "Tokens", unit: "tokens" },
  { key: "total_cost", title: "Cost", unit: "dollars" },
];

/** Keys of metrics/search that are not a metric's average (those have charts above, or none). */
const NOT_METRIC_AVERAGES = new Set(["average_latency_ns", "average_cost"]);

const LLM_SPANS: FilterLeafJson = { type: "text", column_id: "type", operator: "eq", value: "llm" };
const LLM_ERRORS: FilterLeafJson = { type: "number", column_id: "status_code", operator: "gte", value: 400 };

/** custom_search details for spans grouped by model, named like metrics/search's keys. */
const SPAN_DETAILS = [
  // Every record has has_children: its Count is the number of spans.
  { id: "span_count", metric_name: "has_children", aggregation: "Count" },
  { id: "p50_latency_ns", metric_name: "duration_ns", aggregation: "P50" },
  { id: "p95_latency_ns", metric_name: "duration_ns", aggregation: "P95" },
  { id: "total_tokens", metric_name: "num_total_tokens", aggregation: "Sum" },
  { id: "total_cost", metric_name: "cost", aggregation: "Sum" },
];

const SPAN_CHARTS: ChartSpec[] = [
  { key: "span_count", title: "LLM calls", unit: "count" },
  { key: "error_count", title: "LLM errors (status ≥ 400)", unit: "count" },
  ...TRACE_CHARTS.slice(2),
];

const iso = (ms: number) => new Date(ms).toISOString();

function post<T>(run: RunRef, path: string, body: Record<string, unknown>): Promise<T> {
  return api<T>("POST", `/v2/projects/${encodeURIComponent(run.projectId)}/metrics/${path}`, { ...runSelector(run), ...body });
}

function windowBody(window: TimeWindow, group: string) {
  return { start_time: iso(window.startMs), end_time: iso(window.endMs), ...(group ? { group_by: group } : {}) };
}

export async function loadDashboard(run: RunRef, window: TimeWindow, group: string, metrics: MetricInfo): Promise<DashboardData> {
  if (group === "model") {
    const body = { ...windowBody(window, group), interval_minutes: window.intervalMinutes, record_type: "span" };
    const [main, errors] = await Promise.all([
      post<MetricsAnswer>(run, "custom_search", { ...body, filter_tree: LLM_SPANS, metric_details: SPAN_DETAILS }),
      post<MetricsAnswer>(run, "custom_search", {
        ...body,
        filter_tree: { and: [LLM_SPANS, LLM_ERRORS] },
        metric_details: [{ id: "error_count", metric_name: "status_code", aggregation: "Count" }],
      }),
    ]);
    const merged: MetricsAnswer = {
      group_by_columns: main.group_by_columns,
      aggregate_metrics: { ...main.aggregate_metrics, ...errors.aggregate_metrics },
      bucketed_metrics: { ...main.bucketed_metrics, ...errors.bucketed_metrics },
    };
    return shape("spans", merged, SPAN_CHARTS, true);
  }
  const answer = await post<MetricsAnswer>(run, "search", { ...windowBody(window, group), interval: window.intervalMinutes });
  const averages = Object.keys(answer.bucketed_metrics)
    .filter((key) => key.startsWith("average_") && !NOT_METRIC_AVERAGES.has(key))
    .sort()
    .map((key): ChartSpec => {
      const name = key.slice("average_".length);
      const info = metrics.get(name);
      return { key, title: `Average ${info?.label ?? name}`, unit: info?.unit ?? "number" };
    });
  return shape("traces", answer, [...TRACE_CHARTS, ...averages], group !== "");
}

function shape(family: DashboardData["family"], answer: MetricsAnswer, charts: ChartSpec[], grouped: boolean): DashboardData {
  const first = answer.bucketed_metrics[charts[0]!.key] ?? [];
  const buckets = first.map((b) => ({ startMs: Date.parse(String(b.start_bucket_time)), endMs: Date.parse(String(b.end_bucket_time)) }));
  // Errors of a model come from a second answer: its groups may be ranked apart, so the first
  // answer's groups name the series of every chart.
  const groups = grouped ? answer.group_by_columns : [];
  const names = grouped ? groups : [""];
  const series: Record<string, SeriesSet> = {};
  for (const chart of charts) {
    const list = answer.bucketed_metrics[chart.key] ?? [];
    const isCount = chart.unit === "count";
    series[chart.key] = {
      names,
      values: names.map((name) =>
        buckets.map((_, i) => {
          const value = list[i]?.[grouped ? name : "value"];
          // A group absent from a bucket had no records there.
          return typeof value === "number" ? value : isCount ? 0 : null;
        }),
      ),
    };
  }
  return { family, buckets, groups, charts, series, totals: answer.aggregate_metrics };
}

/**
 * The filter tree of the table a bucket click opens: the bucket's time range (the same
 * `[start, end)` of `created_at` the metrics counted) and, in a grouped chart, the group.
 * `other` (the groups past the 20 shown) has no filter of its own: the table shows the bucket.
 */
export function bucketFilter(bucket: Bucket, group: string, groupValue: string | null, family: DashboardData["family"]): FilterJson {
  const leaves: FilterJson[] = [
    { type: "date", column_id: "created_at", operator: "gte", value: iso(bucket.startMs) },
    { type: "date", column_id: "created_at", operator: "lt", value: iso(bucket.endMs) },
  ];
  if (family === "spans") leaves.push(LLM_SPANS);
  if (group && groupValue !== null && groupValue !== "other") leaves.push(groupLeaf(group, groupValue));
  return { and: leaves };
}

/** The filter leaf of one group of a grouped chart (an alert rule made from that line watches it alone). */
export function groupLeaf(group: string, value: string): FilterLeafJson {
  if (group === "tags") return { type: "collection", column_id: "tags", operator: "contains", value };
  return { type: "text", column_id: group, operator: "eq", value };
}
