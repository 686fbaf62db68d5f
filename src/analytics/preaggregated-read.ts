/**
 * metrics/search from the pre-aggregated cells (metric-cells.ts; docs/analytics.md,
 * "Pre-aggregates"), for what they serve: the traces of a run without filters, ungrouped or
 * grouped by `name`, `tags` or the project's declared analytics metadata key. A whole hour of the
 * window is read from its cells when it lies inside one bucket, is not marked for recomputation,
 * and (grouped by metadata) was computed for the key asked; the rest of the window (hours that a
 * bucket edge or the window's edges cut, marked hours, hours of an older key, everything while
 * the backfill runs) is scanned as before, and both sides are merged: counts and sums add, minima
 * and maxima combine, distinct sessions are counted over the union of the cells' session ids and
 * the scanned ones, and percentiles of duration_ns come from one histogram of both (the cells'
 * bins and the scanned values binned alike), within 1% of the nearest rank.
 */
import { type SQL, sql } from "drizzle-orm";
import {
  type AggregateScope,
  aggregateStatement,
  baseRows,
  type Bucketing,
  type CellStats,
  cellKey,
  type GroupSpec,
  OTHER_GROUP,
  readAggregates,
  type Statement,
  TOP_GROUPS,
  toStatement,
  type ValueExpression,
} from "./aggregate-records";
import { BACKFILLED, binOf, binValue, CELL_PERCENTILES, HOUR_MICROS, HOURS_A_DAY } from "./metric-cells";
import { nearestRank, nearestRankSql } from "./nearest-rank";
import { SqlParamPack } from "../search/sql-param-pack";

/** What the pre-aggregates hold of a plan's values: the cell name of each, and which one is duration_ns. */
export interface CellPlan {
  names: string[];
  durationIndex: number;
  percentiles: number[];
}

const GROUPINGS: Partial<Record<string, string>> = { none: "", tags: "tags", metadata: "metadata" };

/** The cells' grouping of a request's group, or null when no cell serves it. */
export function cellGrouping(group: GroupSpec, declaredKey: string | null): string | null {
  if (group.kind === "column") return group.storage === "name" ? "name" : null;
  if (group.kind === "metadata") return declaredKey !== null && group.key === declaredKey ? "metadata" : null;
  return GROUPINGS[group.kind] ?? null;
}

export interface CellCoverage {
  /** Whole hours read from cells: from hour cells, or from the day cell of their day when it is in `days`. */
  hours: number[];
  /** Days (their first hour) read from their day cell: every hour of the day served and in one bucket. */
  days: number[];
  /** [from, to) ranges scanned: the rest of the window. */
  ranges: [number, number][];
  scannedMicros: number;
}

/**
 * Which hours of [from, to) the cells serve and which ranges are scanned. An hour is served when
 * all of it is in the window and in one bucket, and it is not in `unusable` (marked, or of another
 * metadata key). A UTC day whose 24 hours are all served and in one bucket is read from its day
 * cell (the sum of those hour cells, recomputed with any of them: metric-cells.ts).
 */
export function cellCoverage(fromMicros: number, toMicros: number, bucketing: Bucketing, unusable: ReadonlySet<number>): CellCoverage {
  const hours: number[] = [];
  const ranges: [number, number][] = [];
  const bucketOf = (micros: number) => Math.floor((micros - bucketing.startMicros) / bucketing.intervalMicros);
  let cursor = fromMicros;
  for (let hour = Math.ceil(fromMicros / HOUR_MICROS); (hour + 1) * HOUR_MICROS <= toMicros; hour += 1) {
    const start = hour * HOUR_MICROS;
    if (unusable.has(hour) || bucketOf(start) !== bucketOf(start + HOUR_MICROS - 1)) continue;
    if (start > cursor) ranges.push([cursor, start]);
    hours.push(hour);
    cursor = start + HOUR_MICROS;
  }
  if (cursor < toMicros) ranges.push([cursor, toMicros]);
  const served = new Set(hours);
  const days: number[] = [];
  for (const hour of hours) {
    if (hour % HOURS_A_DAY !== 0 || bucketOf(hour * HOUR_MICROS) !== bucketOf((hour + HOURS_A_DAY) * HOUR_MICROS - 1)) continue;
    let whole = true;
    for (let h = hour + 1; h < hour + HOURS_A_DAY && whole; h += 1) whole = served.has(h);
    if (whole) days.push(hour);
  }
  return { hours, days, ranges, scannedMicros: ranges.reduce((total, [a, b]) => total + b - a, 0) };
}

/** The hours read from hour cells: those of the coverage not inside a served day. */
function hourCellsOf(coverage: CellCoverage): number[] {
  const days = new Set(coverage.days);
  return coverage.hours.filter((hour) => !days.has(hour - (hour % HOURS_A_DAY)));
}

export interface HourStates {
  /** Hours the cells cannot serve: marked for recomputation, or computed for another metadata key. */
  unusable: Set<number>;
  /** Hours that have cells (an empty hour has none). */
  computed: Set<number>;
}

/**
 * The statements that read the states of the hours of [from, to) of a run (to run in the caller's
 * batch), and their reading: null while the backfill has not marked every older trace's hour.
 */
export function hourStatesQuery(db: D1Database, runId: string, fromMicros: number, toMicros: number, grouping: string, metadataKey: string | null) {
  const first = Math.floor(fromMicros / HOUR_MICROS);
  const last = Math.floor(toMicros / HOUR_MICROS);
  const statements = [
    db.prepare(BACKFILLED),
    db.prepare("SELECT hour FROM metric_dirty_hours WHERE run_id = ?1 AND hour >= ?2 AND hour <= ?3").bind(runId, first, last),
    db.prepare("SELECT hour, metadata_key FROM metric_cells WHERE run_id = ?1 AND grouping = '' AND hour >= ?2 AND hour <= ?3").bind(runId, first, last),
  ];
  const read = (results: D1Result[]): HourStates | null => {
    const [backfill, dirty, computed] = results as D1Result<{ hour: number; metadata_key: string | null; done: number }>[];
    const progress = backfill!.results[0];
    if (progress !== undefined && progress.done !== 1) return null;
    const unusable = new Set(dirty!.results.map((row) => row.hour));
    if (grouping === "metadata") for (const row of computed!.results) if (row.metadata_key !== metadataKey) unusable.add(row.hour);
    return { unusable, computed: new Set(computed!.results.map((row) => row.hour)) };
  };
  return { statements, read };
}

/** Which cells a source reads: hour cells and day cells, all groups or only those summed under "other". */
interface Periods {
  hours: readonly number[];
  days: readonly number[];
  /** Only the groups not in this list (the cells of a bucket's "other"). */
  notIn?: readonly string[];
}

/** The cell rows of the served hours and days, as (b: bucket, g: group) per bucketing and shown groups. */
class CellSource {
  constructor(
    private readonly runId: string,
    private readonly grouping: string,
    private readonly bucketing: Bucketing,
    private readonly top: readonly string[] | null,
  ) {}

  /**
   * Rows of a cell table `x` (hour cells, and its day twin for the days), with "b" and "g": per
   * table a range of its key (run, grouping[, names], first to last period) less the periods
   * between them not read, so a table is read in key order once, never probed per hour.
   */
  rows(pack: SqlParamPack, table: string, columns: string, periods: readonly Periods[], names: readonly string[] | null = null): SQL {
    const parts: SQL[] = [];
    for (const part of periods) {
      if (part.hours.length > 0) parts.push(this.range(pack, table, columns, part.hours, 1, names, part.notIn));
      if (part.days.length > 0) parts.push(this.range(pack, table.replace("metric_", "metric_day_"), columns, part.days, HOURS_A_DAY, names, part.notIn));
    }
    return parts.length > 0 ? sql.join(parts, sql.raw(" UNION ALL ")) : this.range(pack, table, columns, [], 1, names);
  }

  private range(pack: SqlParamPack, table: string, columns: string, starts: readonly number[], step: number, names: readonly string[] | null, notIn?: readonly string[]): SQL {
    const first = starts[0] ?? 0;
    const last = starts[starts.length - 1] ?? -1;
    const served = new Set(starts);
    const skipped: string[] = [];
    for (let hour = first; hour <= last; hour += step) if (!served.has(hour)) skipped.push(String(hour));
    const raw = sql.raw(`"x"."group_value"`);
    const g = this.grouping === "" ? sql.raw("NULL") : this.top === null ? raw : sql`CASE WHEN ${raw} IN (SELECT value FROM json_each(${pack.list(this.top)})) THEN ${raw} ELSE ${pack.value(OTHER_GROUP)} END`;
    const named = names === null ? sql.raw("") : sql` AND "x"."name" IN (SELECT value FROM json_each(${pack.list(names)}))`;
    const others = notIn === undefined ? sql.raw("") : sql` AND "x"."group_value" NOT IN (SELECT value FROM json_each(${pack.list(notIn)}))`;
    return sql`SELECT ("x"."hour" * ${sql.raw(String(HOUR_MICROS))} - ${pack.value(this.bucketing.startMicros)}) / ${pack.value(this.bucketing.intervalMicros)} AS "b", ${g} AS "g", ${sql.raw(columns)}
      FROM ${sql.raw(`"${table}"`)} AS "x"
      WHERE "x"."run_id" = ${pack.value(this.runId)} AND "x"."grouping" = ${pack.value(this.grouping)}${named}${others}
        AND "x"."hour" >= ${pack.value(first)} AND "x"."hour" <= ${pack.value(last)} AND CAST("x"."hour" AS TEXT) NOT IN (SELECT value FROM json_each(${pack.list(skipped)}))`;
  }
}

/** The periods of a coverage: its hour cells and its day cells. */
const allPeriods = (coverage: CellCoverage): Periods[] => [{ hours: hourCellsOf(coverage), days: coverage.days }];

/**
 * The buckets made of exactly one cell and nothing scanned: there the cell's own distinct
 * sessions and percentile bins are the bucket's (for a shown group: "other" sums several). The
 * periods of every other bucket are merged from session ids and bins.
 */
function splitBySingleCell(coverage: CellCoverage, bucketing: Bucketing, top: readonly string[] | null): { single: Set<number>; merged: Periods[] } {
  const bucketOf = (micros: number) => Math.floor((micros - bucketing.startMicros) / bucketing.intervalMicros);
  const scanned = new Set<number>();
  for (const [from, to] of coverage.ranges) for (let b = bucketOf(from); b <= bucketOf(to - 1); b += 1) scanned.add(b);
  const periods = [...hourCellsOf(coverage).map((hour) => ({ hour, day: false })), ...coverage.days.map((hour) => ({ hour, day: true }))];
  const perBucket = new Map<number, number>();
  for (const period of periods) perBucket.set(bucketOf(period.hour * HOUR_MICROS), (perBucket.get(bucketOf(period.hour * HOUR_MICROS)) ?? 0) + 1);
  const single = new Set([...perBucket].filter(([b, n]) => n === 1 && !scanned.has(b)).map(([b]) => b));
  const isSingle = (period: { hour: number }) => single.has(bucketOf(period.hour * HOUR_MICROS));
  const pick = (day: boolean, inSingle: boolean) => periods.filter((period) => period.day === day && isSingle(period) === inSingle).map((period) => period.hour);
  const merged: Periods[] = [{ hours: pick(false, false), days: pick(true, false) }];
  if (top !== null) merged.push({ hours: pick(false, true), days: pick(true, true), notIn: top });
  return { single, merged };
}

/** The groups with the most traces over the window, cells and scanned records together. */
export function topGroupsFromCells(scope: AggregateScope, group: GroupSpec, runId: string, grouping: string, coverage: CellCoverage): Statement {
  const pack = new SqlParamPack();
  const whole: Bucketing = { startMicros: scope.fromMicros, intervalMicros: Math.max(1, scope.toMicros - scope.fromMicros) };
  const cells = new CellSource(runId, grouping, whole, null);
  return toStatement(
    sql`SELECT "g", sum("n") AS "n" FROM (
        SELECT "g", "n" FROM (${cells.rows(pack, "metric_cells", `"x"."traces" AS "n"`, allPeriods(coverage))})
        UNION ALL SELECT "g", 1 FROM (${baseRows(scope, whole, group, null, [], pack)}))
      GROUP BY "g" ORDER BY "n" DESC, "g" LIMIT ${sql.raw(String(TOP_GROUPS + 1))}`,
    pack,
  );
}

export interface CellStatements {
  statements: Statement[];
  /** Reads the batch's results (in the statements' order) into cells keyed by cellKey. */
  read: (results: D1Result[]) => Map<string, CellStats>;
}

/**
 * The statements of one bucketing: the scanned part's aggregates; the cells' counts (with each
 * cell's own distinct sessions and percentile bins, the answer of a bucket that is one cell) and
 * values; distinct sessions and the duration histogram of the buckets merged from several cells
 * or cells and scanned records.
 */
export function cellStatements(scope: AggregateScope, bucketing: Bucketing, group: GroupSpec, top: readonly string[] | null, values: ValueExpression[], plan: CellPlan, runId: string, grouping: string, coverage: CellCoverage): CellStatements {
  const cells = new CellSource(runId, grouping, bucketing, top);
  const every = allPeriods(coverage);
  const { single, merged } = splitBySingleCell(coverage, bucketing, top);
  const scanned = aggregateStatement(scope, bucketing, group, top, values);
  const stored = CELL_PERCENTILES.map((p) => `min("p${p}") AS "p${p}"`).join(", ");

  let pack = new SqlParamPack();
  const counts = toStatement(
    sql`SELECT "b", "g", sum("n") AS "records", count(*) AS "cells", sum("sessions") AS "sessions", ${sql.raw(stored)}
      FROM (${cells.rows(pack, "metric_cells", `"x"."traces" AS "n", "x"."sessions" AS "sessions", ${CELL_PERCENTILES.map((p) => `"x"."p${p}_bin" AS "p${p}"`).join(", ")}`, every)}) GROUP BY "b", "g"`,
    pack,
  );

  pack = new SqlParamPack();
  const valueRows = toStatement(
    // One row per bucket and group, its values as one JSON text: D1 hands over a few long rows
    // faster than one short row per value (720 buckets x ~10 values at 1-hour buckets).
    sql`SELECT "b", "g", json_group_array(json_array("name", "n", "s", "lo", "hi", "t")) AS "v" FROM (
        SELECT "b", "g", "name", sum("n") AS "n", sum("total") AS "s", min("lo") AS "lo", max("hi") AS "hi", sum("trues") AS "t"
        FROM (${cells.rows(pack, "metric_cell_values", `"x"."name" AS "name", "x"."n" AS "n", "x"."total" AS "total", "x"."lo" AS "lo", "x"."hi" AS "hi", "x"."trues" AS "trues"`, every, plan.names)})
        GROUP BY "b", "g", "name")
      GROUP BY "b", "g"`,
    pack,
  );

  pack = new SqlParamPack();
  const sessions = toStatement(
    sql`SELECT "b", "g", count(DISTINCT "sid") AS "sessions" FROM (
        SELECT "b", "g", "sid" FROM (${cells.rows(pack, "metric_cell_sessions", `"x"."session_id" AS "sid"`, merged)})
        UNION ALL SELECT "b", "g", "sid" FROM (${baseRows(scope, bucketing, group, top, [], pack)}) WHERE "sid" IS NOT NULL)
      GROUP BY "b", "g"`,
    pack,
  );

  pack = new SqlParamPack();
  const ranks = plan.percentiles.map((p) => sql.raw(`("cum" - "n" < ${nearestRankSql(p, '"tot"')} AND "cum" >= ${nearestRankSql(p, '"tot"')})`));
  const histogram = toStatement(
    sql`WITH "hist" AS (SELECT "b", "g", "bin", sum("n") AS "n" FROM (
          SELECT "b", "g", "bin", "n" FROM (${cells.rows(pack, "metric_cell_bins", `"x"."bin" AS "bin", "x"."n" AS "n"`, merged)})
          UNION ALL SELECT "b", "g", ${sql.raw(binOf(`"v0"`))}, 1 FROM (${baseRows(scope, bucketing, group, top, [values[plan.durationIndex]!], pack)}) WHERE "v0" IS NOT NULL)
        GROUP BY "b", "g", "bin"),
      "acc" AS (SELECT "b", "g", "bin", "n", sum("n") OVER (PARTITION BY "b", "g" ORDER BY "bin" ROWS UNBOUNDED PRECEDING) AS "cum", sum("n") OVER (PARTITION BY "b", "g") AS "tot" FROM "hist")
      SELECT "b", "g", "bin", "n", "cum", "tot" FROM "acc" WHERE ${sql.join(ranks, sql.raw(" OR "))}`,
    pack,
  );

  const read = (results: D1Result[]): Map<string, CellStats> => {
    const merged = readAggregates(results[0]!.results as never[], values.length);
    const cellOf = (b: number, g: string | null): CellStats => {
      const key = cellKey(b, g);
      let cell = merged.get(key);
      if (!cell) {
        cell = { records: 0, sessions: 0, values: values.map(() => ({ count: 0, sum: null, min: null, max: null, trues: 0 })), percentiles: values.map(() => new Map()) };
        merged.set(key, cell);
      }
      return cell;
    };
    // The bin of a percentile as its value, kept within the cell's exact extremes.
    const percentileOf = (cell: CellStats, bin: number) => {
      const duration = cell.values[plan.durationIndex]!;
      return Math.min(Math.max(binValue(bin), duration.min ?? -Infinity), duration.max ?? Infinity);
    };
    type CountRow = { b: number; g: string | null; records: number; cells: number; sessions: number | null } & Record<string, number | string | null>;
    const oneCell: CountRow[] = [];
    for (const row of results[1]!.results as CountRow[]) {
      cellOf(row.b, row.g).records += row.records;
      if (single.has(row.b) && row.cells === 1 && (top === null || row.g !== OTHER_GROUP)) oneCell.push(row);
    }
    const indexOf = new Map(plan.names.map((name, i) => [name, i]));
    for (const row of results[2]!.results as { b: number; g: string | null; v: string }[]) {
      const cell = cellOf(row.b, row.g);
      for (const [name, n, s, lo, hi, t] of JSON.parse(row.v) as [string, number, number | null, number | null, number | null, number][]) {
        const stats = cell.values[indexOf.get(name)!]!;
        stats.count += n;
        stats.trues += t;
        if (s !== null) stats.sum = (stats.sum ?? 0) + s;
        if (lo !== null) stats.min = stats.min === null ? lo : Math.min(stats.min, lo);
        if (hi !== null) stats.max = stats.max === null ? hi : Math.max(stats.max, hi);
      }
    }
    for (const row of oneCell) {
      const cell = cellOf(row.b, row.g);
      cell.sessions = row.sessions ?? 0;
      for (const p of plan.percentiles) {
        const bin = row[`p${p}`];
        if (typeof bin === "number") cell.percentiles[plan.durationIndex]!.set(p, percentileOf(cell, bin));
      }
    }
    for (const row of results[3]!.results as { b: number; g: string | null; sessions: number }[]) cellOf(row.b, row.g).sessions = row.sessions;
    for (const row of results[4]!.results as { b: number; g: string | null; bin: number; n: number; cum: number; tot: number }[]) {
      const cell = cellOf(row.b, row.g);
      for (const p of plan.percentiles) {
        const rank = nearestRank(p, row.tot);
        if (row.cum - row.n < rank && row.cum >= rank) cell.percentiles[plan.durationIndex]!.set(p, percentileOf(cell, row.bin));
      }
    }
    return merged;
  };
  return { statements: [scanned, counts, valueRows, sessions, histogram], read };
}
