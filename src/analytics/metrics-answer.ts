/**
 * The answer shape of both metrics routes (contract, section 9): `aggregate_metrics` over the
 * whole window (ungrouped), and `bucketed_metrics`: per key, every bucket of the window, empty
 * ones included, with `value`, or one property per shown group when grouped.
 *
 * Written as JSON text directly: at 1-hour buckets over 30 days the answer is 720 buckets x ~21
 * keys, 15,000 objects and 1.4 MB; building them and handing them to JSON.stringify cost twice
 * what writing the text does (the bytes are those JSON.stringify would write, key order included).
 */
import { type CellStats, cellKey } from "./aggregate-records";
import { bucketBounds, type MetricsWindow } from "./metrics-window";
import type { AggregationResult } from "./run-aggregation";

export type Figures = Record<string, number | null>;

/** A figure as JSON: null for none (and, as JSON.stringify writes them, for NaN and infinities). */
const figureJson = (value: number | null | undefined) => (typeof value === "number" && Number.isFinite(value) ? String(value) : "null");

/** `figures` turns a cell (undefined: no record there) into key -> value. */
export function metricsAnswerJson(result: AggregationResult, window: MetricsWindow, grouped: boolean, keys: string[], figures: (cell: CellStats | undefined) => Figures): string {
  // Per bucket: its bounds, open for the values that follow, and its figures (per shown group when grouped).
  const opening: string[] = [];
  const perBucket: Figures[][] = [];
  const groups = grouped ? result.groups : [null];
  const groupKeys = result.groups.map((g) => `${JSON.stringify(g)}:`);
  for (let i = 0; i < window.buckets; i += 1) {
    const bounds = bucketBounds(window, i);
    opening.push(`{"start_bucket_time":${JSON.stringify(bounds.start_bucket_time)},"end_bucket_time":${JSON.stringify(bounds.end_bucket_time)}`);
    perBucket.push(groups.map((g) => figures(result.cells.get(cellKey(i, g)))));
  }
  const lists = keys.map((key) => {
    const items = new Array<string>(window.buckets);
    for (let i = 0; i < window.buckets; i += 1) {
      const values = perBucket[i]!;
      let item = opening[i]!;
      if (grouped) for (let k = 0; k < groupKeys.length; k += 1) item += `,${groupKeys[k]}${figureJson(values[k]![key])}`;
      else item += `,"value":${figureJson(values[0]![key])}`;
      items[i] = `${item}}`;
    }
    return `${JSON.stringify(key)}:[${items.join(",")}]`;
  });
  return `{"group_by_columns":${JSON.stringify(result.groups)},"aggregate_metrics":${JSON.stringify(figures(result.whole))},"bucketed_metrics":{${lists.join(",")}}}`;
}

export const ratio = (part: number | null, whole: number | null) => (part === null || !whole ? null : part / whole);
