/**
 * A new rule's form, prefilled from a dashboard chart: the chart's metric, the filter of the line
 * chosen (a group of a grouped chart), and the threshold drawn on the chart, carried in the alerts
 * page's query string (`?new=1&metric=&threshold=&filters=&window=`). Pure.
 */
import type { RuleFields } from "./alerts-api";

export interface RulePrefill {
  open: boolean;
  fields: Partial<RuleFields>;
}

export function prefillSearch(prefill: { metric: string; threshold: number; filters: unknown[]; windowMinutes: number; name: string }): string {
  const params = new URLSearchParams({ new: "1", metric: prefill.metric, threshold: String(prefill.threshold), window: String(prefill.windowMinutes), name: prefill.name });
  if (prefill.filters.length > 0) params.set("filters", JSON.stringify(prefill.filters));
  return `?${params.toString()}`;
}

export function parsePrefill(search: string): RulePrefill {
  const params = new URLSearchParams(search);
  const fields: Partial<RuleFields> = {};
  const metric = params.get("metric");
  if (metric) fields.metric = metric;
  const threshold = Number(params.get("threshold"));
  if (params.get("threshold") !== null && Number.isFinite(threshold)) fields.threshold = threshold;
  const window = Number(params.get("window"));
  if (Number.isInteger(window) && window >= 5 && window <= 1440) fields.window_minutes = window;
  const name = params.get("name");
  if (name) fields.name = name;
  try {
    const filters = JSON.parse(params.get("filters") ?? "[]") as unknown;
    if (Array.isArray(filters)) fields.filters = filters;
  } catch {
    // an edited URL: no filter
  }
  return { open: params.get("new") === "1", fields };
}

/** A rule window that fits a dashboard bucket: the bucket's length within the service's 5 to 1,440 minutes. */
export function windowForBucket(intervalMinutes: number): number {
  return Math.min(1440, Math.max(5, intervalMinutes));
}
