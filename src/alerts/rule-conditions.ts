/**
 * What a rule watches and how its state follows from a value (contract section 16). Pure;
 * test/alerts-rule-conditions-unit.test.ts.
 */

export type Comparison = "gt" | "gte" | "lt" | "lte";
export type AlertState = "ok" | "warning" | "firing";
export type NoData = "ok" | "alert" | "keep";

export const COMPARISONS: readonly Comparison[] = ["gt", "gte", "lt", "lte"];
export const NO_DATA: readonly NoData[] = ["ok", "alert", "keep"];

/** The keys of metrics/search a rule may watch besides `average_<metric>` (contract section 9). */
export const FIXED_METRICS = [
  "trace_count", "session_count", "span_count", "error_count", "error_rate",
  "average_latency_ns", "p50_latency_ns", "p90_latency_ns", "p95_latency_ns", "p99_latency_ns",
  "total_input_tokens", "total_output_tokens", "total_tokens", "total_cost", "average_cost",
] as const;

const FIXED = new Set<string>(FIXED_METRICS);

/**
 * A key of metrics/search: a fixed one, or `average_<metric>` for any metric name (the scores of
 * online evaluations included). A metric the run does not hold yet is accepted: scores often
 * arrive after the rule is written; until then the rule sees no value (no data).
 */
export function isWatchableMetric(metric: string): boolean {
  return FIXED.has(metric) || /^average_[^\s]{1,250}$/.test(metric);
}

export function crosses(value: number, comparison: Comparison, line: number): boolean {
  switch (comparison) {
    case "gt":
      return value > line;
    case "gte":
      return value >= line;
    case "lt":
      return value < line;
    case "lte":
      return value <= line;
  }
}

/**
 * The warning threshold must be met before the alert threshold as the value moves towards it:
 * below it for gt/gte, above it for lt/lte (equal is pointless: the rule would never warn).
 */
export function warningProblem(comparison: Comparison, threshold: number, warning: number | null | undefined): string | undefined {
  if (warning === null || warning === undefined) return undefined;
  const upward = comparison === "gt" || comparison === "gte";
  if (upward ? warning < threshold : warning > threshold) return undefined;
  return `warning_threshold must be ${upward ? "below" : "above"} threshold for comparison ${comparison} (it is reached first as the value moves towards the threshold)`;
}

export interface RuleCondition {
  comparison: Comparison;
  threshold: number;
  warningThreshold: number | null;
  noData: NoData;
}

/**
 * The state for a value. `traceCount` 0 is no data (contract: no trace in the window); a key with
 * no value although traces exist (an average of a metric none of them holds) is no data too.
 */
export function nextState(rule: RuleCondition, previous: AlertState, traceCount: number, value: number | null): AlertState {
  if (traceCount === 0 || value === null) {
    if (rule.noData === "ok") return "ok";
    if (rule.noData === "alert") return "firing";
    return previous;
  }
  if (crosses(value, rule.comparison, rule.threshold)) return "firing";
  if (rule.warningThreshold !== null && crosses(value, rule.comparison, rule.warningThreshold)) return "warning";
  return "ok";
}

export type NotificationType = "alert.firing" | "alert.warning" | "alert.resolved";

/**
 * The notification an evaluation sends, if any: on a change of state, and while firing again
 * every `renotify_minutes` since the last one (minutes since the epoch).
 */
export function notificationFor(
  previous: AlertState,
  next: AlertState,
  minute: number,
  lastNotifiedMinute: number | null,
  renotifyMinutes: number | null,
): NotificationType | null {
  if (next !== previous) return next === "firing" ? "alert.firing" : next === "warning" ? "alert.warning" : "alert.resolved";
  if (next === "firing" && renotifyMinutes !== null && lastNotifiedMinute !== null && minute - lastNotifiedMinute >= renotifyMinutes) return "alert.firing";
  return null;
}

/** The first minute at or after `from` in which a rule created in `createdMinute` is due. */
export function dueMinuteFrom(createdMinute: number, everyMinutes: number, from: number): number {
  if (from <= createdMinute) return createdMinute;
  const k = Math.ceil((from - createdMinute) / everyMinutes);
  return createdMinute + k * everyMinutes;
}
