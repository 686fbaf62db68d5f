/** What an aggregation is asked, plans and answers (run-aggregation.ts, run-across-shards.ts). */
import type { RecordFamily } from "../columns/standard-columns";
import type { FilterNode } from "../search/search-query";
import type { CellStats, GroupSpec, ValueExpression } from "./aggregate-records";
import type { MetricsWindow } from "./metrics-window";
import type { CellPlan } from "./preaggregated-read";

export interface AggregationRequest {
  projectId: string;
  runId: string;
  family: RecordFamily;
  filter: FilterNode;
  window: MetricsWindow;
  group: GroupSpec;
}

/** What to aggregate, known once the run's metric names are read from its shard. */
export interface AggregationPlan {
  /** Values to aggregate, given the first created_at shown (the retention's cut-off or the window's start). */
  values: (fromMicros: number) => ValueExpression[];
  /** Percentiles (1..99) asked of some values, by index. */
  percentiles: Map<number, number[]>;
  /** What the pre-aggregated cells hold of these values, when they can serve the plan (metrics/search). */
  cells?: CellPlan;
}

export interface AggregationResult {
  /** Shown groups, most records first, then "other" when more exist; empty when ungrouped. */
  groups: string[];
  whole: CellStats | undefined;
  /** Per bucket index and group (null when ungrouped). */
  cells: Map<string, CellStats>;
}
