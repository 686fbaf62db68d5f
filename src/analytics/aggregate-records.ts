/**
 * The statements that aggregate a run's records by time bucket and group, and the reading of
 * their rows (contract, section 9). Every statement reads the records of one run family in
 * [from, to) through `records_family_order` (family key, created_at: an index range), tests the
 * filter on each, and aggregates in SQLite: counts, sums, minima and maxima with GROUP BY, and
 * percentiles by nearest rank with `row_number()` over each (bucket, group) sorted by value, so
 * every figure is exact. Only the aggregated rows leave the database (at most buckets x 21 rows).
 * Every value travels in the one JSON parameter of a SqlParamPack.
 */
import { type SQL, sql } from "drizzle-orm";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import type { RecordFamily } from "../columns/standard-columns";
import { compileFilter } from "../search/compile-filter-tree";
import type { FilterNode } from "../search/search-query";
import { familyKeyOf, r } from "../search/search-tables";
import { SqlParamPack } from "../search/sql-param-pack";
import { nearestRank, nearestRankSql } from "./nearest-rank";

/** How records are grouped: by a column of theirs, by each of their tags, or by one metadata value. */
export type GroupSpec =
  | { kind: "none" }
  | { kind: "column"; storage: "name" | "status_code" | "type" | "model" }
  | { kind: "tags" }
  | { kind: "metadata"; key: string };

/** The most populous groups shown by name; the others are summed under OTHER_GROUP. */
export const TOP_GROUPS = 20;
export const OTHER_GROUP = "other";

export interface AggregateScope {
  family: RecordFamily;
  runId: string;
  /** Records created in [fromMicros, toMicros): the request's window cut by the retention. */
  fromMicros: number;
  toMicros: number;
  filter: FilterNode;
  /**
   * Only the records created in these [from, to) ranges (the hours no pre-aggregate serves); all
   * of the window when absent. CROSS JOIN keeps the ranges the outer loop: one index range of
   * records_family_order per range, never the whole window read and tested against each range.
   */
  ranges?: readonly (readonly [number, number])[];
}

/** A number per record (NULL: no value), built over the record alias `r`. */
export type ValueExpression = (pack: SqlParamPack) => SQL;

export interface Bucketing {
  startMicros: number;
  intervalMicros: number;
}

export interface ValueStats {
  count: number;
  sum: number | null;
  min: number | null;
  max: number | null;
  /** Records whose value is not 0 (booleans: true). */
  trues: number;
}

export interface CellStats {
  records: number;
  sessions: number;
  values: ValueStats[];
  /** Per value: percentile (1..99) -> value, for the values percentiles were asked of (others may have no map). */
  percentiles: Map<number, number>[];
  /** One shard's share of a project on several (run-across-shards.ts): the duration histogram (bin -> count) of the cells' path. */
  bins?: Map<number, number>;
  /** The same for the scan's path: per value index, its count and pivots (rank, value), to find exact percentiles across shards. */
  pivots?: Map<number, ValuePivots>;
}

/** A value's count in a cell of one shard and its values at some ranks (1-based, ascending; the last is rank `count`). */
export interface ValuePivots {
  count: number;
  pivots: [number, number][];
}

const dialect = new SQLiteAsyncDialect();

export interface Statement {
  sql: string;
  params: [string];
}

export function toStatement(statement: SQL, pack: SqlParamPack): Statement {
  return { sql: dialect.sqlToQuery(statement).sql, params: [pack.toParameter()] };
}

function groupJoin(group: GroupSpec, pack: SqlParamPack): SQL {
  switch (group.kind) {
    case "tags":
      return sql.raw(` JOIN "record_tags" AS "gt" ON "gt"."record_rid" = "r"."rid"`);
    case "metadata":
      return sql` JOIN "record_metadata" AS "gm" ON "gm"."record_rid" = "r"."rid" AND "gm"."key" = ${pack.value(group.key)}`;
    default:
      return sql.raw("");
  }
}

export function groupValue(group: GroupSpec): SQL {
  switch (group.kind) {
    case "none":
      return sql.raw("NULL");
    case "column":
      return sql.raw(`CAST("r"."${group.storage}" AS TEXT)`);
    case "tags":
      return sql.raw(`"gt"."tag"`);
    case "metadata":
      return sql.raw(`"gm"."value"`);
  }
}

/** The records of the scope as rows (b: bucket, g: group, sid: session, v0..: values). */
export function baseRows(scope: AggregateScope, bucketing: Bucketing, group: GroupSpec, top: readonly string[] | null, values: ValueExpression[], pack: SqlParamPack): SQL {
  const raw = groupValue(group);
  const g = top === null ? raw : sql`CASE WHEN ${raw} IN (SELECT value FROM json_each(${pack.list(top)})) THEN ${raw} ELSE ${pack.value(OTHER_GROUP)} END`;
  const columns = values.map((value, i) => sql`, ${value(pack)} AS ${sql.raw(`"v${i}"`)}`);
  return sql`SELECT (${r.createdAt} - ${pack.value(bucketing.startMicros)}) / ${pack.value(bucketing.intervalMicros)} AS "b", ${g} AS "g", ${r.sessionId} AS "sid"${sql.join(columns, sql.raw(""))}
    FROM ${scope.ranges ? sql`json_each(${pack.value(JSON.stringify(scope.ranges))}) AS "sr" CROSS JOIN ` : sql.raw("")}"records" AS "r"${groupJoin(group, pack)}
    WHERE ${scope.ranges ? sql.raw(`"r"."created_at" >= "sr"."value" ->> 0 AND "r"."created_at" < "sr"."value" ->> 1 AND `) : sql.raw("")}${r.familyKey} = ${familyKeyOf(pack.value(scope.runId), pack.value(scope.family))}
      AND ${r.createdAt} >= ${pack.value(scope.fromMicros)} AND ${r.createdAt} < ${pack.value(scope.toMicros)}
      AND ${group.kind === "none" ? sql.raw("1") : sql`${raw} IS NOT NULL`} AND ${compileFilter(scope.filter, pack)}`;
}

/** The groups with the most records over the whole scope, most first: TOP_GROUPS + 1 rows at most. */
export function topGroupsStatement(scope: AggregateScope, group: GroupSpec, limit: number = TOP_GROUPS + 1): Statement {
  const pack = new SqlParamPack();
  const whole = { startMicros: scope.fromMicros, intervalMicros: Math.max(1, scope.toMicros - scope.fromMicros) };
  return toStatement(
    sql`SELECT "g", count(*) AS "n" FROM (${baseRows(scope, whole, group, null, [], pack)}) GROUP BY "g" ORDER BY "n" DESC, "g" LIMIT ${sql.raw(String(limit))}`,
    pack,
  );
}

/** Counts, distinct sessions, and count / sum / min / max / non-zero count of each value, per (bucket, group). */
export function aggregateStatement(scope: AggregateScope, bucketing: Bucketing, group: GroupSpec, top: readonly string[] | null, values: ValueExpression[]): Statement {
  const pack = new SqlParamPack();
  const perValue = values.map((_, i) =>
    sql.raw(`, count("v${i}") AS "n${i}", sum("v${i}") AS "s${i}", min("v${i}") AS "lo${i}", max("v${i}") AS "hi${i}", sum("v${i}" <> 0) AS "t${i}"`),
  );
  return toStatement(
    sql`SELECT "b", "g", count(*) AS "records", count(DISTINCT "sid") AS "sessions"${sql.join(perValue, sql.raw(""))}
      FROM (${baseRows(scope, bucketing, group, top, values, pack)}) GROUP BY "b", "g"`,
    pack,
  );
}

/** Nearest-rank percentiles (integers 1..99) of one value, per (bucket, group): the rows at rank ceil(p x n / 100). */
export function percentileStatement(scope: AggregateScope, bucketing: Bucketing, group: GroupSpec, top: readonly string[] | null, value: ValueExpression, percentiles: readonly number[]): Statement {
  const pack = new SqlParamPack();
  const ranks = percentiles.map((p) => sql.raw(`"rn" = ${nearestRankSql(p, '"cnt"')}`));
  return toStatement(
    sql`SELECT "b", "g", "v0" AS "v", "rn", "cnt" FROM (
        SELECT "b", "g", "v0", row_number() OVER (PARTITION BY "b", "g" ORDER BY "v0") AS "rn", count(*) OVER (PARTITION BY "b", "g") AS "cnt"
        FROM (${baseRows(scope, bucketing, group, top, [value], pack)}) WHERE "v0" IS NOT NULL)
      WHERE ${sql.join(ranks, sql.raw(" OR "))}`,
    pack,
  );
}

export const cellKey = (bucket: number, group: string | null) => `${bucket}\u0000${group ?? ""}`;

interface AggregateRow {
  b: number;
  g: string | null;
  records: number;
  sessions: number;
  [column: string]: number | string | null;
}

/** The cells of an aggregate statement's rows, keyed by cellKey. */
export function readAggregates(rows: AggregateRow[], valueCount: number): Map<string, CellStats> {
  const cells = new Map<string, CellStats>();
  for (const row of rows) {
    const values: ValueStats[] = [];
    for (let i = 0; i < valueCount; i += 1) {
      values.push({
        count: Number(row[`n${i}`] ?? 0),
        sum: row[`s${i}`] === null ? null : Number(row[`s${i}`]),
        min: row[`lo${i}`] === null ? null : Number(row[`lo${i}`]),
        max: row[`hi${i}`] === null ? null : Number(row[`hi${i}`]),
        trues: Number(row[`t${i}`] ?? 0),
      });
    }
    cells.set(cellKey(row.b, row.g), { records: row.records, sessions: row.sessions, values, percentiles: values.map(() => new Map()) });
  }
  return cells;
}

/** Adds a percentile statement's rows (value `index`) to the cells. */
export function readPercentiles(cells: Map<string, CellStats>, rows: { b: number; g: string | null; v: number; rn: number; cnt: number }[], index: number, percentiles: readonly number[]): void {
  for (const row of rows) {
    const cell = cells.get(cellKey(row.b, row.g));
    if (!cell) continue;
    for (const p of percentiles) {
      if (row.rn === nearestRank(p, row.cnt)) cell.percentiles[index]!.set(p, Number(row.v));
    }
  }
}
