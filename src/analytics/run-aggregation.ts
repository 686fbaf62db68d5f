/**
 * Runs an aggregation on the project's shard (on each of its shards when its partitions span
 * several: run-across-shards.ts, merged exactly): the groups to show (when grouped), then in one
 * batch the whole window's figures (ungrouped) and every bucket's (per group), with the
 * percentiles asked for. The caller's run was proven its own before (catalog), and every
 * statement is confined to that run's family; the window is cut at the project's retention, so
 * expired records are never counted. Scan-class: it holds one of the organization's scan slots
 * (withinScanAdmission, docs/limits.md) while it runs, unless pre-aggregated cells serve all but
 * a day of the window (preaggregated-read.ts).
 */
import type { Context } from "hono";
import type { AppEnv } from "../http/app-env";
import { type QueryCost, withinScanAdmission } from "../limits/scan-admission";
import { homeWithOtherShards, onPartitionShard } from "../partitions/read-shards";
import {
  type AggregateScope,
  aggregateStatement,
  type Bucketing,
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
import { HOUR_MICROS } from "./metric-cells";
import { assertScanWithinBound, scanMaxRecords } from "./scan-bound";
import { type CellCoverage, cellCoverage, cellGrouping, type CellPlan, cellStatements, topGroupsFromCells } from "./preaggregated-read";
import { aggregateAcrossShards, type OnShard, shardBasics } from "./run-across-shards";
import type { AggregationPlan, AggregationRequest, AggregationResult } from "./aggregation-types";

export type { AggregationPlan, AggregationRequest, AggregationResult } from "./aggregation-types";

/**
 * Metrics read every record of the window whatever the filter keeps: scan-class by shape, stated
 * here as the deletion dry run states its own (src/search/search-cost.ts classifies searches).
 */
const METRICS_COST: QueryCost = { class: "scan", reasons: ["metrics aggregate every record of the window"] };

const prepared = (db: D1Database, statement: Statement) => db.prepare(statement.sql).bind(...statement.params);

/** Pre-aggregated answers that scan at most this much of their window run outside the scan admission. */
const CELL_SCAN_ALLOWANCE_MICROS = 24 * HOUR_MICROS;

/** The project's declared analytics metadata key (catalog), or null. */
async function declaredMetadataKey(c: Context<AppEnv>, projectId: string): Promise<string | null> {
  const row = await c.env.DB.prepare("SELECT metadata_key FROM project_analytics_settings WHERE project_id = ?1").bind(projectId).first<{ metadata_key: string | null }>();
  return row?.metadata_key ?? null;
}

export async function runAggregation(
  c: Context<AppEnv>,
  request: AggregationRequest,
  planFor: (runMetrics: ReadonlySet<string>) => AggregationPlan,
): Promise<AggregationResult> {
  const organizationId = c.get("principal").organizationId;
  const declaredKey = request.group.kind === "metadata" ? await declaredMetadataKey(c, request.projectId) : null;
  const grouping = cellGrouping(request.group, declaredKey);
  return homeWithOtherShards(c, request.projectId, async (home, otherShards) => {
    const { db } = home;
    const [basics, others] = await Promise.all([shardBasics(home, request, grouping, declaredKey), otherShards()]);
    if (others.length > 0) {
      // Partitions on other shards: their first step too, then the merged aggregation (run-across-shards.ts).
      const rest = await Promise.all(
        others.map(async (partition) => {
          const on: OnShard = (work) => onPartitionShard(c, request.projectId, partition, work);
          return { on, basics: await on((shard) => shardBasics(shard, request, grouping, declaredKey)) };
        }),
      );
      const onHome: OnShard = (work) => work(home);
      return aggregateAcrossShards(c, request, grouping, planFor, [{ on: onHome, basics }, ...rest]);
    }
    const { fromMicros, scope, states } = basics;
    const whole: Bucketing = { startMicros: request.window.startMicros, intervalMicros: request.window.endMicros - request.window.startMicros };
    const buckets: Bucketing = { startMicros: request.window.startMicros, intervalMicros: request.window.intervalMicros };
    const plan = planFor(new Set(basics.names));
    if (plan.cells && states !== undefined && grouping !== null) {
      const unusable = states?.unusable;
      const coverage = unusable && cellCoverage(fromMicros, scope.toMicros, buckets, unusable);
      // Cells only when some served hour has them: else the scan answers, with exact percentiles.
      if (unusable && coverage && coverage.hours.some((hour) => states.computed.has(hour))) {
        const cellPlan = plan.cells;
        const staleHours = coverage.ranges.length > 0 ? [...unusable].filter((hour) => hour * HOUR_MICROS < scope.toMicros && (hour + 1) * HOUR_MICROS > fromMicros).length : 0;
        await assertScanWithinBound(db, { runId: request.runId, family: request.family, ranges: coverage.ranges, max: scanMaxRecords(c.env.METRICS_SCAN_MAX_RECORDS), staleHours });
        const work = () => cellAggregation(db, request, scope, whole, buckets, plan.values(fromMicros), cellPlan, grouping, unusable, coverage);
        return coverage.scannedMicros > CELL_SCAN_ALLOWANCE_MICROS ? withinScanAdmission(c.env, organizationId, METRICS_COST, work) : work();
      }
    }
    // No cell serves it: the whole window is scanned. When cells could serve this shape, they lag
    // (not computed yet, or marked): the scan is long because the upkeep is behind.
    const lagging = states !== undefined && plan.cells ? Math.max(1, states?.unusable.size ?? 1) : 0;
    await assertScanWithinBound(db, { runId: request.runId, family: request.family, ranges: fromMicros < scope.toMicros ? [[fromMicros, scope.toMicros]] : [], max: scanMaxRecords(c.env.METRICS_SCAN_MAX_RECORDS), staleHours: lagging });
    return withinScanAdmission(c.env, organizationId, METRICS_COST, async () => {
      const values = plan.values(fromMicros);
      const groups = await rankGroups(request.group, () => prepared(db, topGroupsStatement(scope, request.group)), TOP_GROUPS + 1);
      const none: GroupSpec = { kind: "none" };
      const percentiled = [...plan.percentiles.entries()];
      const statements = [
        aggregateStatement(scope, whole, none, null, values),
        ...percentiled.map(([i, ps]) => percentileStatement(scope, whole, none, null, values[i]!, ps)),
        aggregateStatement(scope, buckets, request.group, groups.top, values),
        ...percentiled.map(([i, ps]) => percentileStatement(scope, buckets, request.group, groups.top, values[i]!, ps)),
      ];
      const results = await db.batch(statements.map((s) => prepared(db, s)));
      const wholeCells = readAggregates(results[0]!.results as never[], values.length);
      const cells = readAggregates(results[1 + percentiled.length]!.results as never[], values.length);
      percentiled.forEach(([i, ps], k) => {
        readPercentiles(wholeCells, results[1 + k]!.results as never[], i, ps);
        readPercentiles(cells, results[2 + percentiled.length + k]!.results as never[], i, ps);
      });
      return { groups: groups.shown, whole: [...wholeCells.values()][0], cells };
    });
  });
}

/**
 * "other"'s groups are read from the cells by their keys when there are at most this many (a
 * declared key of 50 customers: 30); past it, by the hour ranges less the shown groups.
 */
const OTHERS_READ_BY_KEY = 200;

/**
 * The groups to show (most records first, then "other" when there are more), the named ones when
 * "other" exists, and the groups under "other" when the statement (at most `limit` rows) listed
 * them all.
 */
async function rankGroups(group: GroupSpec, statement: () => D1PreparedStatement, limit: number): Promise<{ shown: string[]; top: string[] | null; others: string[] | null }> {
  if (group.kind === "none") return { shown: [], top: null, others: null };
  const ranked = (await statement().all<{ g: string; n: number }>()).results.map((row) => row.g);
  const shown = ranked.slice(0, TOP_GROUPS);
  if (ranked.length <= TOP_GROUPS) return { shown, top: null, others: null };
  return { shown: [...shown, OTHER_GROUP], top: shown, others: ranked.length < limit ? ranked.slice(TOP_GROUPS) : null };
}

/** The aggregation from the pre-aggregated cells of the served hours and a scan of the rest (preaggregated-read.ts). */
async function cellAggregation(
  db: D1Database,
  request: AggregationRequest,
  scope: AggregateScope,
  whole: Bucketing,
  buckets: Bucketing,
  values: ValueExpression[],
  plan: CellPlan,
  grouping: string,
  unusable: ReadonlySet<number>,
  coverage: CellCoverage,
): Promise<AggregationResult> {
  const wholeCoverage = cellCoverage(scope.fromMicros, scope.toMicros, whole, unusable);
  const wholeScope: AggregateScope = { ...scope, ranges: wholeCoverage.ranges };
  const bucketScope: AggregateScope = { ...scope, ranges: coverage.ranges };
  const limit = TOP_GROUPS + OTHERS_READ_BY_KEY + 1;
  const groups = await rankGroups(request.group, () => prepared(db, topGroupsFromCells(wholeScope, request.group, request.runId, grouping, wholeCoverage, limit)), limit);
  const wholeStatements = cellStatements(wholeScope, whole, { kind: "none" }, { top: null, others: null }, values, plan, request.runId, "", wholeCoverage);
  const bucketStatements = cellStatements(bucketScope, buckets, request.group, groups, values, plan, request.runId, grouping, coverage);
  const statements = [...wholeStatements.statements, ...bucketStatements.statements];
  const results = await db.batch(statements.map((s) => prepared(db, s)));
  const split = wholeStatements.statements.length;
  return { groups: groups.shown, whole: [...wholeStatements.read(results.slice(0, split)).values()][0], cells: bucketStatements.read(results.slice(split)) };
}
