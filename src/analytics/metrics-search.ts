/**
 * `POST /v2/projects/{pid}/metrics/search`: the fixed keys over a run's traces (contract,
 * section 9). Decisions where the contract is silent (docs/analytics.md): `total_tokens` sums
 * each trace's `num_total_tokens`, or its input plus output tokens when it has no total; sums and
 * averages with no value in a bucket are null, counts 0; `average_<metric>` for every other metric
 * the run's traces hold.
 */
import { sql } from "drizzle-orm";
import type { ValueExpression, ValueStats } from "./aggregate-records";
import { type FigureWriter, ratio } from "./metrics-answer";
import { CELL_ERRORS, CELL_PERCENTILES, CELL_SPANS, CELL_TOTAL_TOKENS } from "./metric-cells";
import { metricValue } from "./metric-values";
import type { CellPlan } from "./preaggregated-read";

/** Metrics that have keys of their own; every other metric of the run gets `average_<name>`. */
const OWN_KEYS = new Set(["duration_ns", "num_input_tokens", "num_output_tokens", "num_total_tokens", "cost"]);

/** The cells keep each of their own (metric-cells.ts): a bucket that is one cell reads them. */
const LATENCY_PERCENTILES: number[] = [...CELL_PERCENTILES];

const errorFlag: ValueExpression = () =>
  sql.raw(`(CASE WHEN "r"."status_code" >= 400 OR ("r"."error_message" IS NOT NULL AND "r"."error_message" <> '') THEN 1 ELSE 0 END)`);

/** The spans of the trace (those shown: created at or after the retention's cut-off). */
const spanCount = (fromMicros: number): ValueExpression => (pack) =>
  sql`(SELECT count(*) FROM "records" AS "c" WHERE "c"."trace_id" = "r"."id" AND "c"."record_type" = 'span'
        AND +"c"."project_id" = "r"."project_id" AND +"c"."run_id" = "r"."run_id" AND "c"."created_at" >= ${pack.value(fromMicros)})`;

const totalTokens: ValueExpression = (pack) => {
  const [total, input, output] = ["num_total_tokens", "num_input_tokens", "num_output_tokens"].map((n) => metricValue(n)(pack));
  return sql`coalesce(${total}, CASE WHEN ${input} IS NOT NULL OR ${output} IS NOT NULL THEN coalesce(${input}, 0) + coalesce(${output}, 0) END)`;
};

/** The mean of a value's figures, null without any. */
const meanOf = (stats: ValueStats | undefined) => ratio(stats?.sum ?? null, stats?.count ?? 0);

export interface TraceMetricsPlan {
  values: (fromMicros: number) => ValueExpression[];
  percentiles: Map<number, number[]>;
  keys: string[];
  figures: FigureWriter;
  cells: CellPlan;
}

export function traceMetricsPlan(runMetrics: ReadonlySet<string>): TraceMetricsPlan {
  const averaged = [...runMetrics].filter((m) => !OWN_KEYS.has(m)).sort();
  const fixed = ["duration_ns", "num_input_tokens", "num_output_tokens", "cost"];
  const values = (fromMicros: number): ValueExpression[] => [
    errorFlag,
    spanCount(fromMicros),
    totalTokens,
    ...fixed.map(metricValue),
    ...averaged.map(metricValue),
  ];
  const [ERRORS, SPANS, TOTAL, DURATION, INPUT, OUTPUT, COST] = [0, 1, 2, 3, 4, 5, 6];
  const keys = [
    "trace_count", "session_count", "span_count", "error_count", "error_rate",
    "average_latency_ns", ...LATENCY_PERCENTILES.map((p) => `p${p}_latency_ns`),
    "total_input_tokens", "total_output_tokens", "total_tokens", "total_cost", "average_cost",
    ...averaged.map((m) => `average_${m}`),
  ];
  // In keys' order; no closure per cell (the bundle names every closure it creates: shape-record.ts).
  const figures: FigureWriter = (cell, out) => {
    const records = cell?.records ?? 0;
    const errors = cell?.values[ERRORS]?.sum ?? 0;
    let k = 0;
    out[k++] = records;
    out[k++] = cell?.sessions ?? 0;
    out[k++] = cell?.values[SPANS]?.sum ?? 0;
    out[k++] = errors;
    out[k++] = records > 0 ? errors / records : null;
    out[k++] = meanOf(cell?.values[DURATION]);
    const latency = cell?.percentiles[DURATION];
    for (const p of LATENCY_PERCENTILES) out[k++] = latency?.get(p) ?? null;
    out[k++] = cell?.values[INPUT]?.sum ?? null;
    out[k++] = cell?.values[OUTPUT]?.sum ?? null;
    out[k++] = cell?.values[TOTAL]?.sum ?? null;
    out[k++] = cell?.values[COST]?.sum ?? null;
    out[k++] = meanOf(cell?.values[COST]);
    for (let m = 0; m < averaged.length; m += 1) out[k++] = meanOf(cell?.values[COST + 1 + m]);
  };
  // The pre-aggregated cells hold every one of these values under these names (metric-cells.ts).
  const cells: CellPlan = { names: [CELL_ERRORS, CELL_SPANS, CELL_TOTAL_TOKENS, ...fixed, ...averaged], durationIndex: DURATION, percentiles: LATENCY_PERCENTILES };
  return { values, percentiles: new Map([[DURATION, LATENCY_PERCENTILES]]), keys, figures, cells };
}
