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
import { bucketEdgeIso, type MetricsWindow } from "./metrics-window";
import type { AggregationResult } from "./run-aggregation";

/**
 * Writes a cell's figures (undefined: no record there) into `out`, the figure of keys[k] at k. An
 * array filled in place, not an object per cell: 721 cells at 1-hour buckets over 30 days.
 */
export type FigureWriter = (cell: CellStats | undefined, out: (number | null)[]) => void;

/** A figure as JSON: null for none (and, as JSON.stringify writes them, for NaN and infinities). */
const figureJson = (value: number | null | undefined) => (typeof value === "number" && Number.isFinite(value) ? String(value) : "null");

/** The figures of `cell` in keys' order. */
function figuresOf(cell: CellStats | undefined, keys: readonly string[], write: FigureWriter): (number | null)[] {
  const out = new Array<number | null>(keys.length).fill(null);
  write(cell, out);
  return out;
}

export function metricsAnswerJson(result: AggregationResult, window: MetricsWindow, grouped: boolean, keys: string[], write: FigureWriter): string {
  // Per bucket: its bounds, open for the values that follow, and its figures (per shown group when grouped).
  const opening = new Array<string>(window.buckets);
  const perBucket = new Array<(number | null)[][]>(window.buckets);
  const groups = grouped ? result.groups : [null];
  const groupKeys = result.groups.map((g) => `${JSON.stringify(g)}:`);
  // A bucket's end is the next one's start: each edge is written once.
  let start = JSON.stringify(bucketEdgeIso(window, 0));
  for (let i = 0; i < window.buckets; i += 1) {
    const end = JSON.stringify(bucketEdgeIso(window, i + 1));
    opening[i] = `{"start_bucket_time":${start},"end_bucket_time":${end}`;
    start = end;
    const values = new Array<(number | null)[]>(groups.length);
    for (let k = 0; k < groups.length; k += 1) values[k] = figuresOf(result.cells.get(cellKey(i, groups[k]!)), keys, write);
    perBucket[i] = values;
  }
  const lists = keys.map((key, f) => {
    const items = new Array<string>(window.buckets);
    for (let i = 0; i < window.buckets; i += 1) {
      const values = perBucket[i]!;
      let item = opening[i]!;
      if (grouped) for (let k = 0; k < groupKeys.length; k += 1) item += `,${groupKeys[k]}${figureJson(values[k]![f])}`;
      else item += `,"value":${figureJson(values[0]![f])}`;
      items[i] = `${item}}`;
    }
    return `${JSON.stringify(key)}:[${items.join(",")}]`;
  });
  const whole = figuresOf(result.whole, keys, write);
  const aggregate = keys.map((key, f) => `${JSON.stringify(key)}:${figureJson(whole[f])}`).join(",");
  return `{"group_by_columns":${JSON.stringify(result.groups)},"aggregate_metrics":{${aggregate}},"bucketed_metrics":{${lists.join(",")}}}`;
}

export const ratio = (part: number | null, whole: number | null) => (part === null || !whole ? null : part / whole);
