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
  type ValueStats,
} from "./aggregate-records";
import { BACKFILLED, binOf, binValue, CELL_PERCENTILES, HOUR_MICROS, HOURS_A_DAY } from "./metric-cells";
import { nearestRank } from "./nearest-rank";
import { SqlParamPack } from "../search/sql-param-pack";

/**
 * What the pre-aggregates hold of a plan's values: the cell name of each, and which one is
 * duration_ns (-1: none) with the percentiles asked of it (the only value with a histogram);
 * `sessions: false` when the answer has no distinct session count (custom_search), so their ids
 * are not read.
 */
export interface CellPlan {
  names: string[];
  durationIndex: number;
  percentiles: number[];
  sessions?: boolean;
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
  // Each list as one JSON text: 720 hours are one short row, not 720 (D1 hands over rows slowly).
  const statements = [
    db.prepare(BACKFILLED),
    db.prepare("SELECT json_group_array(hour) AS hours FROM metric_dirty_hours WHERE run_id = ?1 AND hour >= ?2 AND hour <= ?3").bind(runId, first, last),
    db
      .prepare("SELECT json_group_array(hour) AS hours, json_group_array(hour) FILTER (WHERE metadata_key IS NOT ?4) AS other_key FROM metric_cells WHERE run_id = ?1 AND grouping = '' AND hour >= ?2 AND hour <= ?3")
      .bind(runId, first, last, metadataKey),
  ];
  const read = (results: D1Result[]): HourStates | null => {
    const [backfill, dirty, computed] = results as D1Result<{ done: number; hours: string; other_key: string }>[];
    const progress = backfill!.results[0];
    if (progress !== undefined && progress.done !== 1) return null;
    const hours = (result: D1Result<{ hours: string; other_key: string }> | undefined, column: "hours" | "other_key") => JSON.parse(result!.results[0]![column]) as number[];
    const unusable = new Set(hours(dirty, "hours"));
    if (grouping === "metadata") for (const hour of hours(computed, "other_key")) unusable.add(hour);
    return { unusable, computed: new Set(hours(computed, "hours")) };
  };
  return { statements, read };
}

/** Which cells a source reads: hour cells and day cells, all groups or only those summed under "other". */
interface Periods {
  hours: readonly number[];
  days: readonly number[];
  /** Only the groups not in this list (the cells of a bucket's "other"). */
  notIn?: readonly string[];
  /**
   * Those groups by name, when every group of the window is known and they are few: the cells
   * are then read by their keys (hour, group) instead of every group's rows of the hour range.
   */
  only?: readonly string[];
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
    return this.union(pack, table, periods, names, (b, g) => sql`SELECT ${b} AS "b", ${g} AS "g", ${sql.raw(columns)}`);
  }

  /**
   * The same rows as JSON arrays [b, g, ...elements], one text per table range (column "v"):
   * aggregated in the Worker, not by a GROUP BY. A range is read in its key order without a sort,
   * and D1 hands over one long text much faster than thousands of short rows (at 1-hour buckets
   * over 30 days, 720 cells and 8 values each: metric-cells.ts, docs/analytics.md).
   */
  jsonRows(pack: SqlParamPack, table: string, elements: string, periods: readonly Periods[], names: readonly string[] | null = null): SQL {
    return this.union(pack, table, periods, names, (b, g) => sql`SELECT json_group_array(json_array(${b}, ${g}, ${sql.raw(elements)})) AS "v"`);
  }

  /**
   * The histogram bins of each cell read, as rows (b, g, "bins": "bin,n,bin,n,..."): one row per
   * cell, grouped in the table's key order (no sort), summed per bucket in the Worker. At 1-day
   * buckets grouped by a metadata key with 50 values, "other" merges 30 x 30 day cells of ~50
   * bins each: SQLite's GROUP BY (b, g, bin) sorted those 43,000 rows in ~30 ms.
   */
  binRows(pack: SqlParamPack, periods: readonly Periods[]): SQL {
    return this.union(pack, "metric_cell_bins", periods, null, (b, g) => sql`SELECT ${b} AS "b", ${g} AS "g", group_concat("x"."bin" || ',' || "x"."n") AS "bins"`, sql.raw(` GROUP BY "x"."hour", "x"."group_value"`));
  }

  private union(pack: SqlParamPack, table: string, periods: readonly Periods[], names: readonly string[] | null, select: (b: SQL, g: SQL) => SQL, suffix: SQL = sql.raw("")): SQL {
    const parts: SQL[] = [];
    for (const part of periods) {
      if (part.hours.length > 0) parts.push(sql`${this.range(pack, table, select, part.hours, 1, names, part)}${suffix}`);
      if (part.days.length > 0) parts.push(sql`${this.range(pack, table.replace("metric_", "metric_day_"), select, part.days, HOURS_A_DAY, names, part)}${suffix}`);
    }
    return parts.length > 0 ? sql.join(parts, sql.raw(" UNION ALL ")) : sql`${this.range(pack, table, select, [], 1, names)}${suffix}`;
  }

  private range(pack: SqlParamPack, table: string, select: (b: SQL, g: SQL) => SQL, starts: readonly number[], step: number, names: readonly string[] | null, groups: Pick<Periods, "notIn" | "only"> = {}): SQL {
    const { notIn, only } = groups;
    const raw = sql.raw(`"x"."group_value"`);
    // The rows of "other" alone (notIn: the shown groups) are all "other": no test per row.
    const g =
      this.grouping === "" ? sql.raw("NULL")
      : this.top === null ? raw
      : notIn !== undefined ? pack.value(OTHER_GROUP)
      : sql`CASE WHEN ${raw} IN (SELECT value FROM json_each(${pack.list(this.top)})) THEN ${raw} ELSE ${pack.value(OTHER_GROUP)} END`;
    const b = sql`("x"."hour" * ${sql.raw(String(HOUR_MICROS))} - ${pack.value(this.bucketing.startMicros)}) / ${pack.value(this.bucketing.intervalMicros)}`;
    const named = names === null ? sql.raw("") : sql` AND "x"."name" IN (SELECT value FROM json_each(${pack.list(names)}))`;
    if (only !== undefined) {
      // By key: each (period, group) of "other" is one seek of the primary key, in key order.
      return sql`${select(b, g)}
      FROM ${sql.raw(`"${table}"`)} AS "x"
      WHERE "x"."run_id" = ${pack.value(this.runId)} AND "x"."grouping" = ${pack.value(this.grouping)}${named}
        AND "x"."hour" IN (SELECT value FROM json_each(${pack.list(starts.map(String))})) AND "x"."group_value" IN (SELECT value FROM json_each(${pack.list(only)}))`;
    }
    const first = starts[0] ?? 0;
    const last = starts[starts.length - 1] ?? -1;
    const served = new Set(starts);
    const skipped: string[] = [];
    for (let hour = first; hour <= last; hour += step) if (!served.has(hour)) skipped.push(String(hour));
    const others = notIn === undefined ? sql.raw("") : sql` AND "x"."group_value" NOT IN (SELECT value FROM json_each(${pack.list(notIn)}))`;
    return sql`${select(b, g)}
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
function splitBySingleCell(coverage: CellCoverage, bucketing: Bucketing, top: readonly string[] | null, others: readonly string[] | null): { single: Set<number>; merged: Periods[] } {
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
  if (top !== null) merged.push({ hours: pick(false, true), days: pick(true, true), notIn: top, ...(others !== null ? { only: others } : {}) });
  return { single, merged };
}

/** The bin of a percentile as its value, kept within the cell's exact extremes. */
function binPercentile(cell: CellStats, plan: CellPlan, bin: number): number {
  const duration = cell.values[plan.durationIndex]!;
  return Math.min(Math.max(binValue(bin), duration.min ?? -Infinity), duration.max ?? Infinity);
}

/** The cell's duration percentiles from its histogram (bin -> count): the bin of each nearest rank, as its value. */
export function rankBins(cell: CellStats, bins: ReadonlyMap<number, number>, plan: CellPlan): void {
  const ordered = [...bins].sort((x, y) => x[0] - y[0]);
  const total = ordered.reduce((sum, [, n]) => sum + n, 0);
  for (const p of plan.percentiles) {
    const rank = nearestRank(p, total);
    let cumulative = 0;
    for (const [bin, n] of ordered) {
      cumulative += n;
      if (cumulative >= rank) {
        (cell.percentiles[plan.durationIndex] ??= new Map()).set(p, binPercentile(cell, plan, bin));
        break;
      }
    }
  }
}

/** The groups with the most traces over the window (at most `limit`), cells and scanned records together. */
export function topGroupsFromCells(scope: AggregateScope, group: GroupSpec, runId: string, grouping: string, coverage: CellCoverage, limit: number): Statement {
  const pack = new SqlParamPack();
  const whole: Bucketing = { startMicros: scope.fromMicros, intervalMicros: Math.max(1, scope.toMicros - scope.fromMicros) };
  const cells = new CellSource(runId, grouping, whole, null);
  return toStatement(
    sql`SELECT "g", sum("n") AS "n" FROM (
        SELECT "g", "n" FROM (${cells.rows(pack, "metric_cells", `"x"."traces" AS "n"`, allPeriods(coverage))})
        UNION ALL SELECT "g", 1 FROM (${baseRows(scope, whole, group, null, [], pack)}))
      GROUP BY "g" ORDER BY "n" DESC, "g" LIMIT ${sql.raw(String(limit))}`,
    pack,
  );
}

/** The shown groups when "other" exists (null: ungrouped or no "other"), and the groups of "other" when all are known (else null). */
export interface ShownGroups {
  top: readonly string[] | null;
  others: readonly string[] | null;
}

export interface CellStatements {
  statements: Statement[];
  /** Reads the batch's results (in the statements' order) into cells keyed by cellKey. */
  read: (results: D1Result[]) => Map<string, CellStats>;
}

/** A cell's figures as jsonRows hands them over: [b, g, traces, sessions, ...percentile bins]. */
type CountEntry = [number, string | null, number, number | null, ...(number | null)[]];
/** A cell's value as jsonRows hands it over: [b, g, name, n, total, lo, hi, trues]. */
type ValueEntry = [number, string | null, string, number, number | null, number | null, number | null, number];

/**
 * A cell with no record yet. Its percentiles are made when one is set (only duration_ns has them
 * here): at 1-hour buckets, 720 cells of ~8 values each would otherwise make ~6,000 empty maps.
 */
function emptyCell(values: number): CellStats {
  const stats: ValueStats[] = new Array(values);
  for (let i = 0; i < values; i += 1) stats[i] = { count: 0, sum: null, min: null, max: null, trues: 0 };
  return { records: 0, sessions: 0, values: stats, percentiles: [] };
}

/** The entries of jsonRows' texts (one row per table range read). */
const entriesOf = <T>(result: D1Result | undefined): T[] => (result?.results as { v: string }[]).flatMap((row) => JSON.parse(row.v) as T[]);

/**
 * The statements of one bucketing: the scanned part's aggregates (only when some of the window
 * is scanned); the cells' counts (with each cell's own distinct sessions and percentile bins, the
 * answer of a bucket that is one cell) and values; distinct sessions and the duration histogram
 * (ranked here, by nearest rank) of the buckets merged from several cells or cells and scanned records.
 */
export function cellStatements(scope: AggregateScope, bucketing: Bucketing, group: GroupSpec, shown: ShownGroups, values: ValueExpression[], plan: CellPlan, runId: string, grouping: string, coverage: CellCoverage, partial = false): CellStatements {
  const { top } = shown;
  const cells = new CellSource(runId, grouping, bucketing, top);
  const every = allPeriods(coverage);
  // Partial (one shard's share of a project on several, run-across-shards.ts): no bucket is one
  // cell (another shard may hold more of it), so every bucket's sessions and bins are read, and
  // the bins are handed back (CellStats.bins) for the caller to add across shards and rank.
  const { single, merged } = partial ? { single: new Set<number>(), merged: allPeriods(coverage) } : splitBySingleCell(coverage, bucketing, top, shown.others);
  // Nothing scanned: no statement for it (the sessions and histogram statements' scanned arm reads no row either).
  const scanned = coverage.ranges.length > 0 ? [aggregateStatement(scope, bucketing, group, top, values)] : [];

  let pack = new SqlParamPack();
  const counts = toStatement(cells.jsonRows(pack, "metric_cells", `"x"."traces", "x"."sessions", ${CELL_PERCENTILES.map((p) => `"x"."p${p}_bin"`).join(", ")}`, every), pack);

  pack = new SqlParamPack();
  const valueRows = toStatement(cells.jsonRows(pack, "metric_cell_values", `"x"."name", "x"."n", "x"."total", "x"."lo", "x"."hi", "x"."trues"`, every, plan.names), pack);

  pack = new SqlParamPack();
  const sessions = plan.sessions === false ? [] : [toStatement(
    sql`SELECT "b", "g", count(DISTINCT "sid") AS "sessions" FROM (
        SELECT "b", "g", "sid" FROM (${cells.rows(pack, "metric_cell_sessions", `"x"."session_id" AS "sid"`, merged)})
        UNION ALL SELECT "b", "g", "sid" FROM (${baseRows(scope, bucketing, group, top, [], pack)}) WHERE "sid" IS NOT NULL)
      GROUP BY "b", "g"`,
    pack,
  )];

  // The duration histogram of the merged buckets: the cells' bins, and the scanned records binned
  // alike (only when some of the window is scanned); summed and ranked in the Worker.
  // None when no percentile is asked (a custom_search without one): no bins are read.
  const binned = plan.percentiles.length > 0 && plan.durationIndex >= 0;
  pack = new SqlParamPack();
  const cellBins = binned ? [toStatement(cells.binRows(pack, merged), pack)] : [];
  pack = new SqlParamPack();
  const scannedBins = binned && coverage.ranges.length > 0
    ? [toStatement(sql`SELECT "b", "g", ${sql.raw(binOf(`"v0"`))} AS "bin", count(*) AS "n" FROM (${baseRows(scope, bucketing, group, top, [values[plan.durationIndex]!], pack)}) WHERE "v0" IS NOT NULL GROUP BY 1, 2, 3`, pack)]
    : [];

  const read = (results: D1Result[]): Map<string, CellStats> => {
    const rest = results.slice(scanned.length);
    const [countRows, valueTexts] = rest;
    const sessionRows = sessions.length > 0 ? rest[2] : undefined;
    const binRows = cellBins.length > 0 ? rest[2 + sessions.length] : undefined;
    const scannedBinRows = scannedBins.length > 0 ? rest[2 + sessions.length + 1] : undefined;
    const merged = scanned.length > 0 ? readAggregates(results[0]!.results as never[], values.length) : new Map<string, CellStats>();
    const cellOf = (b: number, g: string | null): CellStats => {
      const key = cellKey(b, g);
      let cell = merged.get(key);
      if (!cell) {
        cell = emptyCell(values.length);
        merged.set(key, cell);
      }
      return cell;
    };
    const percentileOf = (cell: CellStats, bin: number) => binPercentile(cell, plan, bin);
    // Cells per bucket and group: a bucket of one cell (and nothing scanned) takes that cell's own sessions and bins.
    const cellsIn = new Map<string, { entry: CountEntry; cells: number }>();
    for (const entry of entriesOf<CountEntry>(countRows)) {
      const [b, g, traces] = entry;
      cellOf(b, g).records += traces;
      const key = cellKey(b, g);
      const seen = cellsIn.get(key);
      if (seen) seen.cells += 1;
      else cellsIn.set(key, { entry, cells: 1 });
    }
    const indexOf = new Map(plan.names.map((name, i) => [name, i]));
    for (const [b, g, name, n, s, lo, hi, t] of entriesOf<ValueEntry>(valueTexts)) {
      const stats = cellOf(b, g).values[indexOf.get(name)!]!;
      stats.count += n;
      stats.trues += t;
      if (s !== null) stats.sum = (stats.sum ?? 0) + s;
      if (lo !== null) stats.min = stats.min === null ? lo : Math.min(stats.min, lo);
      if (hi !== null) stats.max = stats.max === null ? hi : Math.max(stats.max, hi);
    }
    for (const { entry, cells } of cellsIn.values()) {
      const [b, g, , sessions, ...bins] = entry;
      if (cells !== 1 || !single.has(b) || (top !== null && g === OTHER_GROUP)) continue;
      const cell = cellOf(b, g);
      cell.sessions = sessions ?? 0;
      for (const p of plan.percentiles) {
        const bin = bins[CELL_PERCENTILES.indexOf(p as (typeof CELL_PERCENTILES)[number])];
        if (typeof bin === "number") (cell.percentiles[plan.durationIndex] ??= new Map()).set(p, percentileOf(cell, bin));
      }
    }
    for (const row of (sessionRows?.results ?? []) as { b: number; g: string | null; sessions: number }[]) cellOf(row.b, row.g).sessions = row.sessions;
    const histograms = new Map<string, { b: number; g: string | null; bins: Map<number, number> }>();
    const addBin = (b: number, g: string | null, bin: number, n: number) => {
      const key = cellKey(b, g);
      let histogram = histograms.get(key);
      if (!histogram) histograms.set(key, (histogram = { b, g, bins: new Map() }));
      histogram.bins.set(bin, (histogram.bins.get(bin) ?? 0) + n);
    };
    for (const row of (binRows?.results ?? []) as { b: number; g: string | null; bins: string | null }[]) {
      const pairs = (row.bins ?? "").split(",");
      for (let i = 0; i + 1 < pairs.length; i += 2) addBin(row.b, row.g, Number(pairs[i]), Number(pairs[i + 1]));
    }
    for (const row of (scannedBinRows?.results ?? []) as { b: number; g: string | null; bin: number; n: number }[]) addBin(row.b, row.g, row.bin, row.n);
    for (const { b, g, bins } of histograms.values()) {
      if (partial) cellOf(b, g).bins = bins;
      else rankBins(cellOf(b, g), bins, plan);
    }
    return merged;
  };
  return { statements: [...scanned, counts, valueRows, ...sessions, ...cellBins, ...scannedBins], read };
}
