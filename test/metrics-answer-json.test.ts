/**
 * metrics-answer.ts writes the metrics routes' JSON text itself (for speed at 720 buckets x 21
 * keys). These tests hold it to what the plain construction of the same answer would serialize
 * to: every bucket, bounds, values, groups with characters JSON must escape, and non-finite
 * figures written as null.
 */
import { describe, expect, it } from "vitest";
import type { CellStats } from "../src/analytics/aggregate-records";
import { cellKey } from "../src/analytics/aggregate-records";
import { type FigureWriter, metricsAnswerJson } from "../src/analytics/metrics-answer";
import type { MetricsWindow } from "../src/analytics/metrics-window";
import { microsToIso } from "../src/db/client";
import type { AggregationResult } from "../src/analytics/run-aggregation";

const HOUR = 3_600_000_000;
const window: MetricsWindow = { startMicros: 1_788_220_800_000_000, endMicros: 1_788_220_800_000_000 + 5 * HOUR - 1_234, intervalMicros: HOUR, buckets: 5 };
const keys = ["trace_count", "average_latency_ns", "error_rate"];

const cell = (records: number): CellStats => ({ records, sessions: 0, values: [], percentiles: [] });
const figures = (c: CellStats | undefined): Record<string, number | null> => ({
  trace_count: c?.records ?? 0,
  average_latency_ns: c ? c.records * 1.5 : null,
  error_rate: c ? (c.records === 3 ? Number.NaN : c.records === 4 ? Infinity : 1 / c.records) : null,
});
/** The same figures as the routes hand them over: in keys' order, into the array given. */
const write: FigureWriter = (c, out) => keys.forEach((key, k) => (out[k] = figures(c)[key]!));

/** Bucket i's bounds, the last one ending at the window's end. */
const bucketBounds = (w: MetricsWindow, i: number) => ({
  start_bucket_time: microsToIso(w.startMicros + i * w.intervalMicros),
  end_bucket_time: microsToIso(Math.min(w.startMicros + (i + 1) * w.intervalMicros, w.endMicros)),
});

/** The answer as objects, serialized by JSON.stringify: what the text must parse to. */
function expected(result: AggregationResult, grouped: boolean) {
  const bucketed: Record<string, Record<string, unknown>[]> = Object.fromEntries(keys.map((k) => [k, []]));
  for (let i = 0; i < window.buckets; i += 1) {
    const bounds = bucketBounds(window, i);
    for (const key of keys) {
      if (!grouped) bucketed[key]!.push({ ...bounds, value: figures(result.cells.get(cellKey(i, null)))[key] ?? null });
      else bucketed[key]!.push({ ...bounds, ...Object.fromEntries(result.groups.map((g) => [g, figures(result.cells.get(cellKey(i, g)))[key] ?? null])) });
    }
  }
  return JSON.stringify({ group_by_columns: result.groups, aggregate_metrics: figures(result.whole), bucketed_metrics: bucketed });
}

describe("metricsAnswerJson", () => {
  it("writes the ungrouped answer byte for byte as JSON.stringify would, empty buckets and non-finite figures included", () => {
    const cells = new Map([[cellKey(0, null), cell(2)], [cellKey(2, null), cell(3)], [cellKey(4, null), cell(4)]]);
    const result: AggregationResult = { groups: [], whole: cell(9), cells };
    const text = metricsAnswerJson(result, window, false, keys, write);
    expect(text).toBe(expected(result, false));
    const parsed = JSON.parse(text);
    expect(parsed.bucketed_metrics.trace_count).toHaveLength(5);
    expect(parsed.bucketed_metrics.error_rate.map((b: { value: unknown }) => b.value)).toEqual([0.5, null, null, null, null]);
    expect(parsed.bucketed_metrics.trace_count[4].end_bucket_time).toBe(bucketBounds(window, 4).end_bucket_time);
  });

  it("writes one property per shown group, escaping group names", () => {
    const groups = ['say "hi"', "back\\slash", "new\nline", "ünï", "other"];
    const cells = new Map(groups.flatMap((g, k) => [[cellKey(k, g), cell(k + 1)] as const]));
    const result: AggregationResult = { groups, whole: undefined, cells: new Map(cells) };
    const text = metricsAnswerJson(result, window, true, keys, write);
    expect(text).toBe(expected(result, true));
    expect(JSON.parse(text).bucketed_metrics.trace_count[0]).toMatchObject({ 'say "hi"': 1, "back\\slash": 0 });
  });
});
