/**
 * The thin adapter between a rule and metrics/search: the analytics read takes a request's Hono
 * context (the caller's principal, the environment, the shard session's bookmark), and the cron
 * has no request. This builds a real Hono Context for the rule's organization and calls the same
 * function the route calls (src/analytics/trace-metrics-read.ts): same window, same filters, same
 * pre-aggregates and scans, same retention cut-off, so a rule's value is metrics/search's number.
 */
import { Context } from "hono";
import { traceMetricsAggregate } from "../analytics/trace-metrics-read";
import { microsToIso } from "../db/client";
import type { Env } from "../env";
import type { AppEnv } from "../http/app-env";

export interface RuleWindow {
  organizationId: string;
  projectId: string;
  runId: string;
  filters: unknown[];
  startMicros: number;
  endMicros: number;
  windowMinutes: number;
}

/** metrics/search's `aggregate_metrics` for the rule's run, filters and window. */
export function windowFigures(env: Env, window: RuleWindow): Promise<Record<string, number | null>> {
  const c = new Context<AppEnv>(new Request("https://alerts.invalid/v2/metrics/search", { method: "POST" }), { env });
  // The rule's organization, as a member: reads only (scan admission and routing are the organization's).
  c.set("principal", { userId: "alert-evaluation", organizationId: window.organizationId, role: "member", email: "" });
  return traceMetricsAggregate(c, {
    projectId: window.projectId,
    runId: window.runId,
    start_time: microsToIso(window.startMicros),
    end_time: microsToIso(window.endMicros),
    interval: window.windowMinutes,
    filters: window.filters,
  });
}
