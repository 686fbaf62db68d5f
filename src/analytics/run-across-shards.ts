/**
 * runAggregation for a project whose partitions sit on several shards (contract section 13,
 * "Reads are exact"; docs/partitions.md, "Metrics"): metrics/search, custom_search and the alerts'
 * and evaluations' figures that go through it. Each shard aggregates its own records as the
 * single-shard path does, but hands back what merges exactly instead of final figures:
 *
 * - counts, sums, minima, maxima and non-zero counts per (bucket, group), added or combined;
 * - distinct sessions per (bucket, group), added: a session never spans partitions, so never shards;
 * - the groups' record counts over the window, every group (not the top 21), added and ranked
 *   here as SQLite ranks them (count descending, then the group by code point), so every shard
 *   then folds the same groups under "other";
 * - duration percentiles on the pre-aggregates' path: each shard's histogram of every bucket
 *   (CellStats.bins), added, then ranked as one database ranks its cells' bins (within 1% of the
 *   nearest rank, the cells' own bound, and the very figure one database gives);
 * - percentiles on the scan's path: exact, by pivots and windows (percentiles-across-shards.ts).
 *
 * Whether the pre-aggregates serve is decided once for all shards, as one database holding the
 * union of their hours would decide it; each shard then reads its own cells and scans its own
 * marked hours. The scan bound applies per shard (it protects a database's time), the scan
 * admission once for the request (one of the organization's slots).
 */
import type { Context } from "hono";
import { nowMicros } from "../db/client";
import type { AppEnv } from "../http/app-env";
import { type QueryCost, withinScanAdmission } from "../limits/scan-admission";
import { retentionCutoffMicros } from "../retention/retention-policy";
import type { ProjectShard } from "../shards/project-shard";
import { bindAnnotationColumns } from "../search/bind-annotation-columns";
import { compareText } from "../search/merge-shard-pages";
import type { SearchQuery } from "../search/search-query";
import {
  type AggregateScope,
  aggregateStatement,
  type Bucketing,
  type CellStats,
  cellKey,
  type GroupSpec,
  OTHER_GROUP,
  readAggregates,
  type Statement,
  TOP_GROUPS,
  topGroupsStatement,
  type ValueExpression,
} from "./aggregate-records";
import { HOUR_MICROS } from "./metric-cells";
import { pivotStatement, readPivots, readWindows, settle, type WindowRequest, windowStatements } from "./percentiles-across-shards";
import { type CellCoverage, cellCoverage, cellStatements, type HourStates, hourStatesQuery, rankBins, type ShownGroups, topGroupsFromCells } from "./preaggregated-read";
import type { AggregationPlan, AggregationRequest, AggregationResult } from "./aggregation-types";
import { assertScanWithinBound, scanMaxRecords } from "./scan-bound";

/** Runs work on one shard of the project (its own session, state check and re-route). */
export type OnShard = <T>(work: (shard: ProjectShard) => Promise<T>) => Promise<T>;

/** What one shard answered to the first step: the scope cut at the retention, the run's metric names there, the hours' states. */
export interface ShardBasics {
  fromMicros: number;
  scope: AggregateScope;
  names: string[];
  /** The hours' states when the cells may serve the shape (null: backfill unfinished; undefined: not asked). */
  states: HourStates | null | undefined;
}

const unfiltered = (request: AggregationRequest) => request.filter.kind === "and" && request.filter.children.length === 0;

/** The first step on one shard: annotation leaves bound, the retention's cut, the run's metric names and the hours' states in one round trip. */
export async function shardBasics({ db, route }: ProjectShard, request: AggregationRequest, grouping: string | null, declaredKey: string | null): Promise<ShardBasics> {
  // Annotation leaves name the project's templates (a 422 for one it lacks or a leaf that does
  // not fit it) and fully_annotated needs the project, as in partial_search.
  await bindAnnotationColumns(db, request.projectId, { filter: request.filter, sort: null } as unknown as SearchQuery);
  const cutoff = retentionCutoffMicros(route.retentionDays, nowMicros());
  const fromMicros = Math.max(request.window.startMicros, cutoff ?? Number.MIN_SAFE_INTEGER);
  const scope: AggregateScope = { family: request.family, runId: request.runId, fromMicros, toMicros: request.window.endMicros, filter: request.filter };
  // The run's metric names, and the hours' states when cells may serve the request: one round trip.
  const statesQuery = request.family === "trace" && unfiltered(request) && grouping !== null && fromMicros < scope.toMicros
    ? hourStatesQuery(db, request.runId, fromMicros, scope.toMicros, grouping, declaredKey)
    : null;
  const [names, ...stateResults] = await db.batch<{ column_id: string }>([runMetricNames(db, request.runId, request.family), ...(statesQuery?.statements ?? [])]);
  return {
    fromMicros,
    scope,
    names: names!.results.map((row) => row.column_id.slice("metrics/".length)),
    states: statesQuery ? statesQuery.read(stateResults) : undefined,
  };
}

/** The metric names the run's records of a family hold (available_columns' rows). */
export function runMetricNames(db: D1Database, runId: string, family: string): D1PreparedStatement {
  return db
    .prepare("SELECT column_id FROM run_columns WHERE run_id = ?1 AND record_type = ?2 AND column_id >= 'metrics/' AND column_id < 'metrics0'")
    .bind(runId, family);
}

const METRICS_COST: QueryCost = { class: "scan", reasons: ["metrics aggregate every record of the window"] };
const CELL_SCAN_ALLOWANCE_MICROS = 24 * HOUR_MICROS;
/** As run-aggregation.ts: "other"'s groups are read from the cells by key when at most this many. */
const OTHERS_READ_BY_KEY = 200;

const prepared = (db: D1Database, statement: Statement) => db.prepare(statement.sql).bind(...statement.params);

interface Shard {
  on: OnShard;
  basics: ShardBasics;
  /** The cells' coverage of the buckets and of the whole window (the cells' path only). */
  coverage?: CellCoverage;
  wholeCoverage?: CellCoverage;
  unusable?: ReadonlySet<number>;
}

/** The whole aggregation across the shards; `shards[0]` is the project's own. */
export async function aggregateAcrossShards(
  c: Context<AppEnv>,
  request: AggregationRequest,
  grouping: string | null,
  planFor: (runMetrics: ReadonlySet<string>) => AggregationPlan,
  shards: Shard[],
): Promise<AggregationResult> {
  const plan = planFor(new Set(shards.flatMap((s) => s.basics.names)));
  const { fromMicros, scope } = shards[0]!.basics;
  const whole: Bucketing = { startMicros: request.window.startMicros, intervalMicros: request.window.endMicros - request.window.startMicros };
  const buckets: Bucketing = { startMicros: request.window.startMicros, intervalMicros: request.window.intervalMicros };
  const max = scanMaxRecords(c.env.METRICS_SCAN_MAX_RECORDS);

  // The cells serve when they would for one database holding every shard's hours: every shard's
  // backfill done, and some served hour computed somewhere.
  const cellPlan = plan.cells;
  const states = shards.map((s) => s.basics.states);
  let useCells = false;
  if (cellPlan && grouping !== null && states.every((s) => s)) {
    for (const [i, shard] of shards.entries()) {
      const unusable = states[i]!.unusable;
      shard.unusable = unusable;
      shard.coverage = cellCoverage(fromMicros, scope.toMicros, buckets, unusable);
      shard.wholeCoverage = cellCoverage(fromMicros, scope.toMicros, whole, unusable);
      if (shard.coverage.hours.some((hour) => states[i]!.computed.has(hour))) useCells = true;
    }
  }
  const eligible = cellPlan !== undefined && grouping !== null && states.every((s) => s !== undefined);
  const values = plan.values(fromMicros);

  // The scan bound on each shard, in parallel (what each would scan).
  await Promise.all(
    shards.map((shard, i) =>
      shard.on(async ({ db }) => {
        if (useCells) {
          const staleHours = shard.coverage!.ranges.length > 0 ? [...shard.unusable!].filter((hour) => hour * HOUR_MICROS < scope.toMicros && (hour + 1) * HOUR_MICROS > fromMicros).length : 0;
          await assertScanWithinBound(db, { runId: request.runId, family: request.family, ranges: shard.coverage!.ranges, max, staleHours });
        } else {
          const lagging = eligible ? Math.max(1, states[i]?.unusable.size ?? 1) : 0;
          await assertScanWithinBound(db, { runId: request.runId, family: request.family, ranges: fromMicros < scope.toMicros ? [[fromMicros, scope.toMicros]] : [], max, staleHours: lagging });
        }
      }),
    ),
  );

  const work = async (): Promise<AggregationResult> => {
    const groups = await rankAcrossShards(request, scope, shards, useCells ? grouping! : null);
    const none: GroupSpec = { kind: "none" };
    const percentiled = [...plan.percentiles.entries()];
    const answers = await Promise.all(
      shards.map((shard) =>
        shard.on(async ({ db }) => {
          if (useCells) {
            const wholeStatements = cellStatements({ ...scope, ranges: shard.wholeCoverage!.ranges }, whole, none, { top: null, others: null }, values, cellPlan!, request.runId, "", shard.wholeCoverage!, true);
            const bucketStatements = cellStatements({ ...scope, ranges: shard.coverage!.ranges }, buckets, request.group, groups, values, cellPlan!, request.runId, grouping!, shard.coverage!, true);
            const results = await db.batch([...wholeStatements.statements, ...bucketStatements.statements].map((s) => prepared(db, s)));
            const split = wholeStatements.statements.length;
            return { whole: wholeStatements.read(results.slice(0, split)), cells: bucketStatements.read(results.slice(split)) };
          }
          const statements = [
            aggregateStatement(scope, whole, none, null, values),
            ...percentiled.map(([i]) => pivotStatement(scope, whole, none, null, values[i]!)),
            aggregateStatement(scope, buckets, request.group, groups.top, values),
            ...percentiled.map(([i]) => pivotStatement(scope, buckets, request.group, groups.top, values[i]!)),
          ];
          const results = await db.batch(statements.map((s) => prepared(db, s)));
          const wholeCells = readAggregates(results[0]!.results as never[], values.length);
          const cells = readAggregates(results[1 + percentiled.length]!.results as never[], values.length);
          percentiled.forEach(([i], k) => {
            readPivots(wholeCells, results[1 + k]!.results as never[], i, cellKey);
            readPivots(cells, results[2 + percentiled.length + k]!.results as never[], i, cellKey);
          });
          return { whole: wholeCells, cells };
        }),
      ),
    );
    const wholeCells = mergeCells(answers.map((a) => a.whole));
    const cells = mergeCells(answers.map((a) => a.cells));
    if (useCells) {
      for (const cell of [...wholeCells.values(), ...cells.values()]) if (cell.bins) rankBins(cell, cell.bins, cellPlan!);
    } else if (percentiled.length > 0) {
      await exactPercentiles(request, scope, { whole, buckets }, groups.top, values, percentiled, shards, answers, { whole: wholeCells, cells });
    }
    for (const cell of [...wholeCells.values(), ...cells.values()]) {
      delete cell.bins;
      delete cell.pivots;
    }
    return { groups: groups.shown, whole: [...wholeCells.values()][0], cells };
  };
  const scans = useCells ? shards.some((s) => s.coverage!.scannedMicros > CELL_SCAN_ALLOWANCE_MICROS) : true;
  return scans ? withinScanAdmission(c.env, c.get("principal").organizationId, METRICS_COST, work) : work();
}

/**
 * The groups to show, as rankGroups answers for one database, from every group's count on every
 * shard added: most records first, then the group as SQLite orders text.
 */
async function rankAcrossShards(request: AggregationRequest, scope: AggregateScope, shards: Shard[], cellGrouping: string | null): Promise<{ shown: string[] } & ShownGroups> {
  if (request.group.kind === "none") return { shown: [], top: null, others: null };
  const counts = new Map<string, number>();
  const answers = await Promise.all(
    shards.map((shard) =>
      shard.on(async ({ db }) => {
        const statement = cellGrouping !== null
          ? topGroupsFromCells({ ...scope, ranges: shard.wholeCoverage!.ranges }, request.group, request.runId, cellGrouping, shard.wholeCoverage!, -1)
          : topGroupsStatement(scope, request.group, -1);
        return (await prepared(db, statement).all<{ g: string; n: number }>()).results;
      }),
    ),
  );
  for (const rows of answers) for (const row of rows) counts.set(String(row.g), (counts.get(String(row.g)) ?? 0) + row.n);
  const ranked = [...counts].sort((x, y) => y[1] - x[1] || compareText(x[0], y[0])).map(([g]) => g);
  const shown = ranked.slice(0, TOP_GROUPS);
  if (ranked.length <= TOP_GROUPS) return { shown, top: null, others: null };
  return { shown: [...shown, OTHER_GROUP], top: shown, others: ranked.length < TOP_GROUPS + OTHERS_READ_BY_KEY + 1 ? ranked.slice(TOP_GROUPS) : null };
}

/** The shards' cells added per (bucket, group); histograms added, pivots left on each shard's cell. */
function mergeCells(maps: readonly Map<string, CellStats>[]): Map<string, CellStats> {
  const merged = new Map<string, CellStats>();
  for (const map of maps) {
    for (const [key, cell] of map) {
      const into = merged.get(key);
      if (!into) {
        merged.set(key, { records: cell.records, sessions: cell.sessions, values: cell.values.map((v) => ({ ...v })), percentiles: cell.values.map(() => new Map()), ...(cell.bins ? { bins: new Map(cell.bins) } : {}) });
        continue;
      }
      into.records += cell.records;
      into.sessions += cell.sessions;
      cell.values.forEach((v, i) => {
        const to = into.values[i]!;
        to.count += v.count;
        to.trues += v.trues;
        if (v.sum !== null) to.sum = (to.sum ?? 0) + v.sum;
        if (v.min !== null) to.min = to.min === null ? v.min : Math.min(to.min, v.min);
        if (v.max !== null) to.max = to.max === null ? v.max : Math.max(to.max, v.max);
      });
      if (cell.bins) {
        const bins = (into.bins ??= new Map());
        for (const [bin, n] of cell.bins) bins.set(bin, (bins.get(bin) ?? 0) + n);
      }
    }
  }
  return merged;
}

/** Splits a cellKey back into its bucket and group (null: ungrouped). */
function keyParts(key: string, grouped: boolean): { b: number; g: string | null } {
  const at = key.indexOf("\u0000");
  return { b: Number(key.slice(0, at)), g: grouped ? key.slice(at + 1) : null };
}

/** Every asked percentile of the scan's path, exact: from the pivots, then one more round trip for the windows they leave open. */
async function exactPercentiles(
  request: AggregationRequest,
  scope: AggregateScope,
  bucketings: { whole: Bucketing; buckets: Bucketing },
  top: readonly string[] | null,
  values: ValueExpression[],
  percentiled: [number, number[]][],
  shards: Shard[],
  answers: { whole: Map<string, CellStats>; cells: Map<string, CellStats> }[],
  merged: { whole: Map<string, CellStats>; cells: Map<string, CellStats> },
): Promise<void> {
  const open: { kind: "whole" | "cells"; index: number; requests: (WindowRequest & { cell: CellStats; p: number })[] }[] = [];
  for (const kind of ["whole", "cells"] as const) {
    const grouped = kind === "cells" && request.group.kind !== "none";
    for (const [index, ps] of percentiled) {
      const requests: (WindowRequest & { cell: CellStats; p: number })[] = [];
      for (const [key, cell] of merged[kind]) {
        const parts = answers.map((a) => a[kind].get(key)?.pivots?.get(index)).filter((part) => part !== undefined);
        for (const p of ps) {
          const settled = settle(parts, p);
          if (settled === null) continue;
          if ("value" in settled) cell.percentiles[index]!.set(p, settled.value);
          else requests.push({ ...keyParts(key, grouped), window: settled.window, cell, p });
        }
      }
      if (requests.length > 0) open.push({ kind, index, requests });
    }
  }
  if (open.length === 0) return;
  const none: GroupSpec = { kind: "none" };
  const perShard = await Promise.all(
    shards.map((shard) =>
      shard.on(async ({ db }) => {
        const statements = open.flatMap(({ kind, index, requests }) =>
          kind === "whole" ? windowStatements(scope, bucketings.whole, none, null, values[index]!, requests) : windowStatements(scope, bucketings.buckets, request.group, top, values[index]!, requests),
        );
        return db.batch(statements.map((s) => prepared(db, s)));
      }),
    ),
  );
  open.forEach(({ index, requests }, k) => {
    const found = readWindows(requests, perShard.map((results) => [results[2 * k]!, results[2 * k + 1]!] as [D1Result, D1Result]));
    requests.forEach((r, i) => {
      if (found[i] !== null && found[i] !== undefined) r.cell.percentiles[index]!.set(r.p, found[i]!);
    });
  });
}
