/**
 * Exact nearest-rank percentiles of a value whose records sit on several shards (contract section
 * 13: "the same counts, sums and percentiles" as one database; docs/partitions.md, "Metrics").
 * A shard's own percentile cannot be merged with another's, and shipping every value would cost
 * the whole scan again in transfer. So, in two steps:
 *
 * 1. Each shard answers, per (bucket, group), its count of values and its values at every
 *    step-th rank and its last (PIVOTS of them at most: `pivotStatement`, in the figures' batch).
 *    A cell with at most PIVOTS values on a shard thus sends all of them.
 * 2. For a percentile at global rank R, the pivots bound how many values lie at or below, and
 *    strictly below, any pivot value: `hi`, the least pivot value with at least R values surely at
 *    or below it, and `lo`, the greatest with surely fewer than R below it, enclose the R-th value.
 *    When every shard sent all its values, or lo = hi, that is the answer. Otherwise each shard
 *    answers its count below lo and its values in [lo, hi] (`windowStatements`: about
 *    shards x count / PIVOTS values per percentile), and the (R - below)-th of those is exact.
 *
 * So the answer is exactly what the single database's row_number() gives, at one more round trip
 * only for the cells whose pivots do not settle it (and one more scan of those buckets' records).
 */
import { sql } from "drizzle-orm";
import { type AggregateScope, baseRows, type Bucketing, type CellStats, type GroupSpec, type Statement, toStatement, type ValueExpression, type ValuePivots } from "./aggregate-records";
import { nearestRank } from "./nearest-rank";
import { SqlParamPack } from "../search/sql-param-pack";

/** Ranks each shard sends per (bucket, group) and value at most (plus the last). */
export const PIVOTS = 100;

/** One value's pivots per (bucket, group): rows (b, g, v, rn, cnt), the ranks every ceil(cnt / PIVOTS) and the last. */
export function pivotStatement(scope: AggregateScope, bucketing: Bucketing, group: GroupSpec, top: readonly string[] | null, value: ValueExpression): Statement {
  const pack = new SqlParamPack();
  return toStatement(
    sql`SELECT "b", "g", "v0" AS "v", "rn", "cnt" FROM (
        SELECT "b", "g", "v0", row_number() OVER (PARTITION BY "b", "g" ORDER BY "v0") AS "rn", count(*) OVER (PARTITION BY "b", "g") AS "cnt"
        FROM (${baseRows(scope, bucketing, group, top, [value], pack)}) WHERE "v0" IS NOT NULL)
      WHERE "rn" % (("cnt" + ${sql.raw(String(PIVOTS - 1))}) / ${sql.raw(String(PIVOTS))}) = 0 OR "rn" = "cnt"`,
    pack,
  );
}

/** Adds a pivot statement's rows (value `index`) to one shard's cells. */
export function readPivots(cells: Map<string, CellStats>, rows: { b: number; g: string | null; v: number; rn: number; cnt: number }[], index: number, keyOf: (b: number, g: string | null) => string): void {
  for (const row of rows) {
    const cell = cells.get(keyOf(row.b, row.g));
    if (!cell) continue;
    const pivots = (cell.pivots ??= new Map());
    let entry = pivots.get(index);
    if (!entry) pivots.set(index, (entry = { count: row.cnt, pivots: [] }));
    entry.pivots.push([row.rn, Number(row.v)]);
  }
  for (const cell of cells.values()) for (const entry of cell.pivots?.values() ?? []) entry.pivots.sort((x, y) => x[0] - y[0]);
}

/** A percentile the pivots did not settle: the R-th value lies in [lo, hi] (lo null: no lower bound). */
export interface Window {
  rank: number;
  lo: number | null;
  hi: number;
}

/** The greatest rank whose value is at most x (0: none): values at or below x, at least. */
function atLeastUpTo(part: ValuePivots, x: number): number {
  let lo = 0;
  let hi = part.pivots.length - 1;
  let found = 0;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (part.pivots[mid]![1] <= x) {
      found = part.pivots[mid]![0];
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

/** One less than the least rank whose value is at least x (the count when none): values below x, at most. */
function atMostBelow(part: ValuePivots, x: number): number {
  let lo = 0;
  let hi = part.pivots.length - 1;
  let found = part.count;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (part.pivots[mid]![1] >= x) {
      found = part.pivots[mid]![0] - 1;
      hi = mid - 1;
    } else lo = mid + 1;
  }
  return found;
}

const complete = (part: ValuePivots) => part.pivots.length === part.count;

/** Percentile p of the values the shards' pivots describe: the value, or the window to read, or null without values. */
export function settle(parts: readonly ValuePivots[], p: number): { value: number } | { window: Window } | null {
  const total = parts.reduce((sum, part) => sum + part.count, 0);
  if (total === 0) return null;
  const rank = nearestRank(p, total);
  if (parts.every(complete)) {
    const all = parts.flatMap((part) => part.pivots.map(([, v]) => v)).sort((x, y) => x - y);
    return { value: all[rank - 1]! };
  }
  const candidates = [...new Set(parts.flatMap((part) => part.pivots.map(([, v]) => v)))].sort((x, y) => x - y);
  const upTo = (x: number) => parts.reduce((sum, part) => sum + atLeastUpTo(part, x), 0);
  const below = (x: number) => parts.reduce((sum, part) => sum + atMostBelow(part, x), 0);
  // hi: the least candidate with at least `rank` values surely at or below it (the greatest, every shard's last, has them all).
  let a = 0;
  let b = candidates.length - 1;
  while (a < b) {
    const mid = (a + b) >> 1;
    if (upTo(candidates[mid]!) >= rank) b = mid;
    else a = mid + 1;
  }
  const hi = candidates[a]!;
  // lo: the greatest candidate with surely fewer than `rank` values below it.
  let lo: number | null = null;
  a = 0;
  b = candidates.length - 1;
  while (a <= b) {
    const mid = (a + b) >> 1;
    if (below(candidates[mid]!) < rank) {
      lo = candidates[mid]!;
      a = mid + 1;
    } else b = mid - 1;
  }
  if (lo === hi) return { value: hi };
  return { window: { rank, lo, hi } };
}

/**
 * The window's bounds as sent: widened by a relative 1e-12 so that a bound's trip through the
 * statement's JSON parameter cannot exclude the value it came from (any lo' <= lo and hi' >= hi
 * still enclose the R-th value; the count below is taken at lo' itself).
 */
const widen = (x: number, direction: -1 | 1) => x + direction * (Math.abs(x) * 1e-12 + Number.MIN_VALUE);

/** A window to read on every shard: the (b, g) cell of a bucketing, its id in the answer. */
export interface WindowRequest {
  b: number;
  g: string | null;
  window: Window;
}

/**
 * The statements that read, for the windows of one value and bucketing, each window's count of
 * values below lo (rows w, below) and its values in [lo, hi] (rows w, v). The windows are a
 * materialized table joined on (b, g), which SQLite indexes automatically: one probe per record.
 */
export function windowStatements(scope: AggregateScope, bucketing: Bucketing, group: GroupSpec, top: readonly string[] | null, value: ValueExpression, windows: readonly WindowRequest[]): [Statement, Statement] {
  const list = JSON.stringify(windows.map((w) => [w.b, w.g ?? "", w.window.lo === null ? null : widen(w.window.lo, -1), widen(w.window.hi, 1)]));
  const joined = (pack: SqlParamPack) =>
    sql`WITH "w" AS MATERIALIZED (SELECT "key" AS "k", "value" ->> 0 AS "b", "value" ->> 1 AS "g", "value" ->> 2 AS "lo", "value" ->> 3 AS "hi" FROM json_each(${pack.value(list)}))
      SELECT "w"."k" AS "w", "x"."v0" AS "v", "w"."lo" AS "lo", "w"."hi" AS "hi" FROM (${baseRows(scope, bucketing, group, top, [value], pack)}) AS "x"
      JOIN "w" ON "w"."b" = "x"."b" AND "w"."g" = ifnull("x"."g", '') WHERE "x"."v0" IS NOT NULL`;
  let pack = new SqlParamPack();
  const below = toStatement(sql`SELECT "w", count(*) AS "below" FROM (${joined(pack)}) WHERE "lo" IS NOT NULL AND "v" < "lo" GROUP BY "w"`, pack);
  pack = new SqlParamPack();
  const inside = toStatement(sql`SELECT "w", "v" FROM (${joined(pack)}) WHERE ("lo" IS NULL OR "v" >= "lo") AND "v" <= "hi"`, pack);
  return [below, inside];
}

/** The R-th value of each window from every shard's rows of windowStatements. */
export function readWindows(windows: readonly WindowRequest[], shards: readonly [D1Result, D1Result][]): (number | null)[] {
  const below = windows.map(() => 0);
  const inside: number[][] = windows.map(() => []);
  for (const [belowRows, insideRows] of shards) {
    for (const row of belowRows.results as { w: number; below: number }[]) below[row.w] = below[row.w]! + row.below;
    for (const row of insideRows.results as { w: number; v: number }[]) inside[row.w]!.push(Number(row.v));
  }
  return windows.map((w, i) => {
    const values = inside[i]!.sort((x, y) => x - y);
    return values[w.window.rank - below[i]! - 1] ?? null;
  });
}
