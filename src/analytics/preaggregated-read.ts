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
import { binOf, binValue, cellsBackfilled, HOUR_MICROS } from "./metric-cells";
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
  /** Whole hours read from cells. */
  hours: number[];
  /** [from, to) ranges scanned: the rest of the window. */
  ranges: [number, number][];
  scannedMicros: number;
}

/**
 * Which hours of [from, to) the cells serve and which ranges are scanned. An hour is served when
 * all of it is in the window and in one bucket, and it is not in `unusable` (marked, or of another
 * metadata key).
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
  return { hours, ranges, scannedMicros: ranges.reduce((total, [a, b]) => total + b - a, 0) };
}

export interface HourStates {
  /** Hours the cells cannot serve: marked for recomputation, or computed for another metadata key. */
  unusable: Set<number>;
  /** Hours that have cells (an empty hour has none). */
  computed: Set<number>;
}

/** The states of the hours of [from, to) of a run; null while the backfill has not marked every older trace's hour. */
export async function hourStates(db: D1Database, runId: string, fromMicros: number, toMicros: number, grouping: string, metadataKey: string | null): Promise<HourStates | null> {
  if (!(await cellsBackfilled(db))) return null;
  const first = Math.floor(fromMicros / HOUR_MICROS);
  const last = Math.floor(toMicros / HOUR_MICROS);
  const [dirty, computed] = await db.batch<{ hour: number; metadata_key: string | null }>([
    db.prepare("SELECT hour FROM metric_dirty_hours WHERE run_id = ?1 AND hour >= ?2 AND hour <= ?3").bind(runId, first, last),
    db.prepare("SELECT hour, metadata_key FROM metric_cells WHERE run_id = ?1 AND grouping = '' AND hour >= ?2 AND hour <= ?3").bind(runId, first, last),
  ]);
  const unusable = new Set(dirty!.results.map((row) => row.hour));
  if (grouping === "metadata") for (const row of computed!.results) if (row.metadata_key !== metadataKey) unusable.add(row.hour);
  return { unusable, computed: new Set(computed!.results.map((row) => row.hour)) };
}

/** The cell rows of the served hours, as (b: bucket, g: group) per bucketing and shown groups. */
class CellSource {
  constructor(
    private readonly runId: string,
    private readonly grouping: string,
    private readonly hours: readonly number[],
    private readonly bucketing: Bucketing,
    private readonly top: readonly string[] | null,
  ) {}

  /**
   * Rows of a cell table `x` in the served hours, with "b" and "g": a range of the table's key
   * (run, grouping[, names], first to last served hour) less the hours between them not served,
   * so the table is read in key order once, never probed per hour.
   */
  rows(pack: SqlParamPack, table: string, columns: string, names: readonly string[] | null = null): SQL {
    const first = this.hours[0] ?? 0;
    const last = this.hours[this.hours.length - 1] ?? -1;
    const served = new Set(this.hours);
    const skipped: string[] = [];
    for (let hour = first; hour <= last; hour += 1) if (!served.has(hour)) skipped.push(String(hour));
    const raw = sql.raw(`"x"."group_value"`);
    const g = this.grouping === "" ? sql.raw("NULL") : this.top === null ? raw : sql`CASE WHEN ${raw} IN (SELECT value FROM json_each(${pack.list(this.top)})) THEN ${raw} ELSE ${pack.value(OTHER_GROUP)} END`;
    const named = names === null ? sql.raw("") : sql` AND "x"."name" IN (SELECT value FROM json_each(${pack.list(names)}))`;
    return sql`SELECT ("x"."hour" * ${sql.raw(String(HOUR_MICROS))} - ${pack.value(this.bucketing.startMicros)}) / ${pack.value(this.bucketing.intervalMicros)} AS "b", ${g} AS "g", ${sql.raw(columns)}
      FROM ${sql.raw(`"${table}"`)} AS "x"
      WHERE "x"."run_id" = ${pack.value(this.runId)} AND "x"."grouping" = ${pack.value(this.grouping)}${named}
        AND "x"."hour" >= ${pack.value(first)} AND "x"."hour" <= ${pack.value(last)} AND CAST("x"."hour" AS TEXT) NOT IN (SELECT value FROM json_each(${pack.list(skipped)}))`;
  }
}

/** The groups with the most traces over the window, cells and scanned records together. */
export function topGroupsFromCells(scope: AggregateScope, group: GroupSpec, runId: string, grouping: string, hours: readonly number[]): Statement {
  const pack = new SqlParamPack();
  const whole: Bucketing = { startMicros: scope.fromMicros, intervalMicros: Math.max(1, scope.toMicros - scope.fromMicros) };
  const cells = new CellSource(runId, grouping, hours, whole, null);
  return toStatement(
    sql`SELECT "g", sum("n") AS "n" FROM (
        SELECT "g", "n" FROM (${cells.rows(pack, "metric_cells", `"x"."traces" AS "n"`)})
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

/** The statements of one bucketing: the scanned part's aggregates, the cells' counts and values, sessions of both, the duration histogram of both. */
export function cellStatements(scope: AggregateScope, bucketing: Bucketing, group: GroupSpec, top: readonly string[] | null, values: ValueExpression[], plan: CellPlan, runId: string, grouping: string, hours: readonly number[]): CellStatements {
  const cells = new CellSource(runId, grouping, hours, bucketing, top);
  const scanned = aggregateStatement(scope, bucketing, group, top, values);

  let pack = new SqlParamPack();
  const counts = toStatement(sql`SELECT "b", "g", sum("n") AS "records" FROM (${cells.rows(pack, "metric_cells", `"x"."traces" AS "n"`)}) GROUP BY "b", "g"`, pack);

  pack = new SqlParamPack();
  const valueRows = toStatement(
    sql`SELECT "b", "g", "name", sum("n") AS "n", sum("total") AS "s", min("lo") AS "lo", max("hi") AS "hi", sum("trues") AS "t"
      FROM (${cells.rows(pack, "metric_cell_values", `"x"."name" AS "name", "x"."n" AS "n", "x"."total" AS "total", "x"."lo" AS "lo", "x"."hi" AS "hi", "x"."trues" AS "trues"`, plan.names)})
      GROUP BY "b", "g", "name"`,
    pack,
  );

  pack = new SqlParamPack();
  const sessions = toStatement(
    sql`SELECT "b", "g", count(DISTINCT "sid") AS "sessions" FROM (
        SELECT "b", "g", "sid" FROM (${cells.rows(pack, "metric_cell_sessions", `"x"."session_id" AS "sid"`)})
        UNION ALL SELECT "b", "g", "sid" FROM (${baseRows(scope, bucketing, group, top, [], pack)}) WHERE "sid" IS NOT NULL)
      GROUP BY "b", "g"`,
    pack,
  );

  pack = new SqlParamPack();
  const ranks = plan.percentiles.map((p) => sql.raw(`("cum" - "n" < (${Math.round(p)} * "tot" + 99) / 100 AND "cum" >= (${Math.round(p)} * "tot" + 99) / 100)`));
  const histogram = toStatement(
    sql`WITH "hist" AS (SELECT "b", "g", "bin", sum("n") AS "n" FROM (
          SELECT "b", "g", "bin", "n" FROM (${cells.rows(pack, "metric_cell_bins", `"x"."bin" AS "bin", "x"."n" AS "n"`)})
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
    for (const row of results[1]!.results as { b: number; g: string | null; records: number }[]) cellOf(row.b, row.g).records += row.records;
    const indexOf = new Map(plan.names.map((name, i) => [name, i]));
    for (const row of results[2]!.results as { b: number; g: string | null; name: string; n: number; s: number | null; lo: number | null; hi: number | null; t: number }[]) {
      const stats = cellOf(row.b, row.g).values[indexOf.get(row.name)!]!;
      stats.count += row.n;
      stats.trues += row.t;
      if (row.s !== null) stats.sum = (stats.sum ?? 0) + row.s;
      if (row.lo !== null) stats.min = stats.min === null ? row.lo : Math.min(stats.min, row.lo);
      if (row.hi !== null) stats.max = stats.max === null ? row.hi : Math.max(stats.max, row.hi);
    }
    for (const row of results[3]!.results as { b: number; g: string | null; sessions: number }[]) cellOf(row.b, row.g).sessions = row.sessions;
    for (const row of results[4]!.results as { b: number; g: string | null; bin: number; n: number; cum: number; tot: number }[]) {
      const cell = cellOf(row.b, row.g);
      const duration = cell.values[plan.durationIndex]!;
      for (const p of plan.percentiles) {
        const rank = Math.floor((Math.round(p) * row.tot + 99) / 100);
        if (row.cum - row.n < rank && row.cum >= rank) {
          // The bin's value, kept within the cell's exact extremes.
          cell.percentiles[plan.durationIndex]!.set(p, Math.min(Math.max(binValue(row.bin), duration.min ?? -Infinity), duration.max ?? Infinity));
        }
      }
    }
    return merged;
  };
  return { statements: [scanned, counts, valueRows, sessions, histogram], read };
}
