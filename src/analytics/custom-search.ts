/**
 * `POST /v2/projects/{pid}/metrics/custom_search`: the caller's own aggregations of any metric or
 * number / boolean column of traces, spans or sessions (contract, section 9). Decisions where the
 * contract is silent (docs/analytics.md): `Count` counts the records that have a value;
 * `PercentageTrue` / `PercentageFalse` are percentages 0..100 of the records with a value whose
 * value is true (not 0) / false (0); an empty bucket's Count is 0, every other aggregation null.
 */
import type { CellStats, ValueExpression } from "./aggregate-records";
import { CELL_PERCENTILES } from "./metric-cells";
import type { CellPlan } from "./preaggregated-read";
import { type FigureWriter, ratio } from "./metrics-answer";

export const AGGREGATIONS = ["Count", "Sum", "Average", "Min", "Max", "P50", "P90", "P95", "P99", "PercentageTrue", "PercentageFalse"] as const;
export type Aggregation = (typeof AGGREGATIONS)[number];

export interface MetricDetail {
  id: string;
  aggregation: Aggregation;
  /** What is aggregated, and its name (details naming the same one share its statements). */
  value: ValueExpression;
  valueName: string;
}

export interface CustomPlan {
  values: ValueExpression[];
  /** The name of each value (MetricDetail.valueName), in the order of `values`. */
  valueNames: string[];
  percentiles: Map<number, number[]>;
  keys: string[];
  figures: FigureWriter;
}

function figureOf(cell: CellStats | undefined, index: number, aggregation: Aggregation): number | null {
  const stats = cell?.values[index];
  const count = stats?.count ?? 0;
  switch (aggregation) {
    case "Count":
      return count;
    case "Sum":
      return stats?.sum ?? null;
    case "Average":
      return ratio(stats?.sum ?? null, count);
    case "Min":
      return stats?.min ?? null;
    case "Max":
      return stats?.max ?? null;
    case "PercentageTrue":
      return count > 0 ? (100 * stats!.trues) / count : null;
    case "PercentageFalse":
      return count > 0 ? (100 * (count - stats!.trues)) / count : null;
    default:
      return cell?.percentiles[index]?.get(Number(aggregation.slice(1))) ?? null;
  }
}

/**
 * What the pre-aggregated cells hold of a plan (preaggregated-read.ts), or undefined when they
 * cannot answer it: every value a metric (`valueName` as `metrics/<name>`; cells keep no column),
 * and percentiles asked of duration_ns only (the one value with a histogram; answered within 1%
 * of the nearest rank, as metrics/search's are). Whether the request's shape is one the cells
 * keep (traces, no filter, ungrouped or by name, tags or the declared key) is run-aggregation.ts's
 * to decide, as for metrics/search.
 */
export function customCellPlan(plan: CustomPlan): CellPlan | undefined {
  if (!plan.valueNames.every((name) => name.startsWith("metrics/"))) return undefined;
  const names = plan.valueNames.map((name) => name.slice("metrics/".length));
  const durationIndex = names.indexOf("duration_ns");
  for (const index of plan.percentiles.keys()) if (index !== durationIndex) return undefined;
  const percentiles = durationIndex >= 0 ? (plan.percentiles.get(durationIndex) ?? []) : [];
  if (!percentiles.every((p) => (CELL_PERCENTILES as readonly number[]).includes(p))) return undefined;
  return { names, durationIndex, percentiles, sessions: false };
}

/** One aggregated value per detail (details on the same value share it). */
export function customPlan(details: MetricDetail[]): CustomPlan {
  const values: ValueExpression[] = [];
  const valueNames: string[] = [];
  const indexOf = new Map<string, number>();
  const percentiles = new Map<number, number[]>();
  const placed = details.map((detail) => {
    let index = indexOf.get(detail.valueName);
    if (index === undefined) {
      index = values.length;
      values.push(detail.value);
      valueNames.push(detail.valueName);
      indexOf.set(detail.valueName, index);
    }
    if (detail.aggregation.startsWith("P") && !detail.aggregation.startsWith("Percentage")) {
      const list = percentiles.get(index) ?? [];
      list.push(Number(detail.aggregation.slice(1)));
      percentiles.set(index, [...new Set(list)]);
    }
    return { ...detail, index };
  });
  return {
    values,
    valueNames,
    percentiles,
    keys: details.map((d) => d.id),
    figures: (cell, out) => {
      for (let k = 0; k < placed.length; k += 1) out[k] = figureOf(cell, placed[k]!.index, placed[k]!.aggregation);
    },
  };
}
