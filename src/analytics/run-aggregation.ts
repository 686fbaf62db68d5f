/**
 * Runs an aggregation on the project's shard: the groups to show (when grouped), then in one
 * batch the whole window's figures (ungrouped) and every bucket's (per group), with the
 * percentiles asked for. The caller's run was proven its own before (catalog), and every
 * statement is confined to that run's family; the window is cut at the project's retention, so
 * expired records are never counted. Scan-class: it holds one of the organization's scan slots
 * (withinScanAdmission, docs/limits.md) while it runs.
 */
import type { Context } from "hono";
import { nowMicros } from "../db/client";
import type { AppEnv } from "../http/app-env";
import { type QueryCost, withinScanAdmission } from "../limits/scan-admission";
import { retentionCutoffMicros } from "../retention/retention-policy";
import { onProjectShard } from "../shards/project-shard";
import type { RecordFamily } from "../columns/standard-columns";
import type { FilterNode } from "../search/search-query";
import {
  type AggregateScope,
  aggregateStatement,
  type Bucketing,
  type CellStats,
  type GroupSpec,
  OTHER_GROUP,
  percentileStatement,
  readAggregates,
  readPercentiles,
  type Statement,
  TOP_GROUPS,
  topGroupsStatement,
  type ValueExpression,
} from "./aggregate-records";
import type { MetricsWindow } from "./metrics-window";

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
}

export interface AggregationResult {
  /** Shown groups, most records first, then "other" when more exist; empty when ungrouped. */
  groups: string[];
  whole: CellStats | undefined;
  /** Per bucket index and group (null when ungrouped). */
  cells: Map<string, CellStats>;
}

/** The metric names the run's records of a family hold (available_columns' rows). */
export async function runMetricNames(db: D1Database, runId: string, family: RecordFamily): Promise<Set<string>> {
  const rows = await db
    .prepare("SELECT column_id FROM run_columns WHERE run_id = ?1 AND record_type = ?2 AND column_id >= 'metrics/' AND column_id < 'metrics0'")
    .bind(runId, family)
    .all<{ column_id: string }>();
  return new Set(rows.results.map((row) => row.column_id.slice("metrics/".length)));
}

/**
 * Metrics read every record of the window whatever the filter keeps: scan-class by shape, stated
 * here as the deletion dry run states its own (src/search/search-cost.ts classifies searches).
 */
const METRICS_COST: QueryCost = { class: "scan", reasons: ["metrics aggregate every record of the window"] };

const prepared = (db: D1Database, statement: Statement) => db.prepare(statement.sql).bind(...statement.params);

export async function runAggregation(
  c: Context<AppEnv>,
  request: AggregationRequest,
  planFor: (runMetrics: ReadonlySet<string>) => AggregationPlan,
): Promise<AggregationResult> {
  const organizationId = c.get("principal").organizationId;
  return onProjectShard(c, request.projectId, "read", async ({ db, route }) => {
    const plan = planFor(await runMetricNames(db, request.runId, request.family));
    return withinScanAdmission(c.env, organizationId, METRICS_COST, async () => {
      const cutoff = retentionCutoffMicros(route.retentionDays, nowMicros());
      const fromMicros = Math.max(request.window.startMicros, cutoff ?? Number.MIN_SAFE_INTEGER);
      const scope: AggregateScope = { family: request.family, runId: request.runId, fromMicros, toMicros: request.window.endMicros, filter: request.filter };
      const values = plan.values(fromMicros);
      let top: string[] | null = null;
      let groups: string[] = [];
      if (request.group.kind !== "none") {
        const ranked = (await prepared(db, topGroupsStatement(scope, request.group)).all<{ g: string; n: number }>()).results.map((row) => row.g);
        groups = ranked.slice(0, TOP_GROUPS);
        if (ranked.length > TOP_GROUPS) {
          top = groups;
          groups = [...groups, OTHER_GROUP];
        }
      }
      const whole: Bucketing = { startMicros: request.window.startMicros, intervalMicros: request.window.endMicros - request.window.startMicros };
      const buckets: Bucketing = { startMicros: request.window.startMicros, intervalMicros: request.window.intervalMicros };
      const none: GroupSpec = { kind: "none" };
      const percentiled = [...plan.percentiles.entries()];
      const statements = [
        aggregateStatement(scope, whole, none, null, values),
        ...percentiled.map(([i, ps]) => percentileStatement(scope, whole, none, null, values[i]!, ps)),
        aggregateStatement(scope, buckets, request.group, top, values),
        ...percentiled.map(([i, ps]) => percentileStatement(scope, buckets, request.group, top, values[i]!, ps)),
      ];
      const results = await db.batch(statements.map((s) => prepared(db, s)));
      const wholeCells = readAggregates(results[0]!.results as never[], values.length);
      const cells = readAggregates(results[1 + percentiled.length]!.results as never[], values.length);
      percentiled.forEach(([i, ps], k) => {
        readPercentiles(wholeCells, results[1 + k]!.results as never[], i, ps);
        readPercentiles(cells, results[2 + percentiled.length + k]!.results as never[], i, ps);
      });
      return { groups, whole: [...wholeCells.values()][0], cells };
    });
  });
}
