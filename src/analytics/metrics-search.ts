/**
 * `POST /v2/projects/{pid}/metrics/search`: the fixed keys over a run's traces (contract,
 * section 9). Decisions where the contract is silent (docs/analytics.md): `total_tokens` sums
 * each trace's `num_total_tokens`, or its input plus output tokens when it has no total; sums and
 * averages with no value in a bucket are null, counts 0; `average_<metric>` for every other metric
 * the run's traces hold.
 */
import { sql } from "drizzle-orm";
import type { CellStats, ValueExpression } from "./aggregate-records";
import { type Figures, ratio } from "./metrics-answer";
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

export interface TraceMetricsPlan {
  values: (fromMicros: number) => ValueExpression[];
  percentiles: Map<number, number[]>;
  keys: string[];
  figures: (cell: CellStats | undefined) => Figures;
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
  const figures = (cell: CellStats | undefined): Figures => {
    const v = (i: number) => cell?.values[i];
    const mean = (i: number) => ratio(v(i)?.sum ?? null, v(i)?.count ?? 0);
    const records = cell?.records ?? 0;
    const errors = v(ERRORS)?.sum ?? 0;
    return {
      trace_count: records,
      session_count: cell?.sessions ?? 0,
      span_count: v(SPANS)?.sum ?? 0,
      error_count: errors,
      error_rate: records > 0 ? errors / records : null,
      average_latency_ns: mean(DURATION),
      ...Object.fromEntries(LATENCY_PERCENTILES.map((p) => [`p${p}_latency_ns`, cell?.percentiles[DURATION]?.get(p) ?? null])),
      total_input_tokens: v(INPUT)?.sum ?? null,
      total_output_tokens: v(OUTPUT)?.sum ?? null,
      total_tokens: v(TOTAL)?.sum ?? null,
      total_cost: v(COST)?.sum ?? null,
      average_cost: mean(COST),
      ...Object.fromEntries(averaged.map((m, k) => [`average_${m}`, mean(COST + 1 + k)])),
    };
  };
  // The pre-aggregated cells hold every one of these values under these names (metric-cells.ts).
  const cells: CellPlan = { names: [CELL_ERRORS, CELL_SPANS, CELL_TOTAL_TOKENS, ...fixed, ...averaged], durationIndex: DURATION, percentiles: LATENCY_PERCENTILES };
  return { values, percentiles: new Map([[DURATION, LATENCY_PERCENTILES]]), keys, figures, cells };
}
