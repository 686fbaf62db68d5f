/**
 * The answer shape of both metrics routes (contract, section 9): `aggregate_metrics` over the
 * whole window (ungrouped), and `bucketed_metrics`: per key, every bucket of the window, empty
 * ones included, with `value`, or one property per shown group when grouped.
 */
import { type CellStats, cellKey } from "./aggregate-records";
import { bucketBounds, type MetricsWindow } from "./metrics-window";
import type { AggregationResult } from "./run-aggregation";

export type Figures = Record<string, number | null>;

export interface MetricsAnswer {
  group_by_columns: string[];
  aggregate_metrics: Figures;
  bucketed_metrics: Record<string, Record<string, string | number | null>[]>;
}

/** `figures` turns a cell (undefined: no record there) into key -> value. */
export function metricsAnswer(result: AggregationResult, window: MetricsWindow, grouped: boolean, keys: string[], figures: (cell: CellStats | undefined) => Figures): MetricsAnswer {
  const bucketed: MetricsAnswer["bucketed_metrics"] = Object.fromEntries(keys.map((k) => [k, []]));
  for (let i = 0; i < window.buckets; i += 1) {
    const bounds = bucketBounds(window, i);
    if (!grouped) {
      const values = figures(result.cells.get(cellKey(i, null)));
      for (const key of keys) bucketed[key]!.push({ ...bounds, value: values[key] ?? null });
      continue;
    }
    const perGroup = result.groups.map((g) => [g, figures(result.cells.get(cellKey(i, g)))] as const);
    for (const key of keys) bucketed[key]!.push({ ...bounds, ...Object.fromEntries(perGroup.map(([g, values]) => [g, values[key] ?? null])) });
  }
  return { group_by_columns: result.groups, aggregate_metrics: figures(result.whole), bucketed_metrics: bucketed };
}

export const ratio = (part: number | null, whole: number | null) => (part === null || !whole ? null : part / whole);
