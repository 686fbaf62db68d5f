/**
 * The computation behind `POST .../metrics/search` (contract section 9) for a run whose ownership
 * was proven: window, group and filters read as the route reads them, then runAggregation with the
 * trace plan. The route and the alerts' evaluation (src/alerts) both call this, so a rule's value
 * is exactly the number metrics/search gives for the same window and filter, and follows every
 * change of how metrics are read (pre-aggregates, partitions) without a copy to keep in step.
 */
import type { Context } from "hono";
import type { AppEnv } from "../http/app-env";
import { normalizeFilters } from "../search/normalize-search-request";
import { metricsAnswerJson } from "./metrics-answer";
import { traceMetricsPlan } from "./metrics-search";
import { groupSpecOf } from "./metric-values";
import { metricsWindow } from "./metrics-window";
import { runAggregation } from "./run-aggregation";

export interface TraceMetricsRequest {
  projectId: string;
  runId: string;
  start_time: string;
  end_time: string;
  interval: number;
  filters?: unknown[] | null;
  group_by?: string | null;
}

/** metrics/search's answer as JSON text (metrics-answer.ts). */
export async function traceMetricsJson(c: Context<AppEnv>, request: TraceMetricsRequest): Promise<string> {
  const read = await readTraceMetrics(c, request);
  return metricsAnswerJson(read.result, read.window, read.grouped, read.keys, read.figures);
}

/**
 * `aggregate_metrics` of metrics/search: every key over the whole window (ungrouped). An interval
 * as long as the window makes its one bucket the window itself, so the pre-aggregated cells serve
 * exactly the hours the whole-window figures can take from them.
 */
export async function traceMetricsAggregate(c: Context<AppEnv>, request: Omit<TraceMetricsRequest, "group_by">): Promise<Record<string, number | null>> {
  const read = await readTraceMetrics(c, { ...request, group_by: null });
  const out = new Array<number | null>(read.keys.length).fill(null);
  read.figures(read.result.whole, out);
  return Object.fromEntries(read.keys.map((key, i) => [key, typeof out[i] === "number" && Number.isFinite(out[i]) ? out[i] : null]));
}

async function readTraceMetrics(c: Context<AppEnv>, request: TraceMetricsRequest) {
  const window = metricsWindow(request.start_time, request.end_time, request.interval, "interval");
  const group = groupSpecOf(request.group_by, "trace");
  const filter = normalizeFilters({ filters: request.filters ?? [] }, "trace");
  let plan: ReturnType<typeof traceMetricsPlan> | undefined;
  const result = await runAggregation(c, { projectId: request.projectId, runId: request.runId, family: "trace", filter, window, group }, (runMetrics) => (plan = traceMetricsPlan(runMetrics)));
  return { result, window, grouped: group.kind !== "none", keys: plan!.keys, figures: plan!.figures };
}
