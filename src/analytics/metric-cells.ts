/**
 * The pre-aggregated metric cells (issue 21 point 4; migration 0018 / shard 0011;
 * docs/analytics.md, "Pre-aggregates"): per run, hour of a trace's created_at and group
 * (ungrouped, `name`, each tag, the value of the project's declared analytics metadata key), the
 * trace count, each value's count / sum / min / max / non-zero count, distinct session ids and a
 * log-scale histogram of `duration_ns`; each cell also keeps its own distinct session count and
 * percentile bins (a bucket that is one cell reads them). Day cells (migration 0021 / shard 0013)
 * hold the same per UTC day, each the sum of its 24 hour cells, recomputed in the batch of any of
 * them, so a day none of whose hours is marked is exact.
 *
 * A cell is recomputed from the records of its hour, never incremented: writes only mark the
 * hours they change (the triggers of the migration, one probe a row), and `refreshMetricCells`
 * recomputes the marked hours in chunks, each chunk's recomputation and the removal of its marks
 * one atomic batch. So a cell is exact whatever order writes, deletions, expiry and moves arrive
 * in, minima and maxima included, and a chunk run twice changes nothing. Reads scan the hours
 * still marked (preaggregated-read.ts).
 */

import { nearestRankSql } from "./nearest-rank";

export const HOUR_MICROS = 3_600_000_000;
export const HOURS_A_DAY = 24;

/**
 * Histogram bins of duration_ns: bin k holds [GROWTH^k, GROWTH^(k+1)); values under 1 are bin -1.
 * A bin answered by BIN_VALUE is within (GROWTH - 1) / (GROWTH + 1) = 0.99% of any value in it.
 */
export const GROWTH = 1.02;
export const UNDER_ONE_BIN = -1;

/** SQL of the bin of the number `x`. */
export const binOf = (x: string) => `CASE WHEN ${x} < 1 THEN ${UNDER_ONE_BIN} ELSE CAST(floor(ln(${x}) / ${Math.log(GROWTH)}) AS INTEGER) END`;

/** The value reported for a bin: the point of least relative error over [GROWTH^k, GROWTH^(k+1)). */
export function binValue(bin: number): number {
  if (bin === UNDER_ONE_BIN) return 0;
  const low = GROWTH ** bin;
  return (2 * low * GROWTH) / (1 + GROWTH);
}

/** Names of the derived values in metric_cell_values; every other name is a metric's. */
export const CELL_ERRORS = "$errors";
export const CELL_SPANS = "$spans";
export const CELL_TOTAL_TOKENS = "$total_tokens";

/** Hours a chunk recomputes in one batch: one hour of a busy run is thousands of traces, far under D1's 30 s. */
export const REFRESH_CHUNK_HOURS = 24;
/** Chunks per database per scheduled run (20 statements each): a small share of an invocation's 1,000 queries. */
export const REFRESH_MAX_CHUNKS = 10;
/** Rids per backfill window, and windows per run, as the roll-up backfill. */
export const BACKFILL_WINDOW = 5_000;
export const BACKFILL_MAX_WINDOWS = 20;

const CELL_TABLES = ["metric_cells", "metric_cell_values", "metric_cell_bins", "metric_cell_sessions"] as const;
const DAY_TABLES = ["metric_day_cells", "metric_day_cell_values", "metric_day_cell_bins", "metric_day_cell_sessions"] as const;

/** The percentiles of duration_ns each cell keeps its own answer of (as the bin of the nearest rank). */
export const CELL_PERCENTILES = [50, 90, 95, 99] as const;

/** The groupings of the cells: listed so a range of the tables' keys by hour can be read per grouping. */
const GROUPINGS_SQL = "('', 'name', 'tags', 'metadata')";

const IN_CHUNK = "(run_id, hour) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?1))";

const metric = (name: string) => `(SELECT lx.value FROM json_each(t.metrics) AS lx WHERE lx.key = '${name}' AND lx.type IN ('integer', 'real'))`;

/**
 * The traces of the chunk's hours (t), the values of each (tv: derived ones and every numeric
 * metric, as metrics/search reads them), and each trace under each of its groups (g). The chunk
 * is ?1, a JSON list of [run_id, hour]; the metadata key is the project's, read from
 * metric_settings in the same transaction.
 */
const CHUNK_ROWS = `
WITH h AS MATERIALIZED (
  SELECT j.value ->> 0 AS run_id, j.value ->> 1 AS hour,
         (SELECT f.key FROM run_families AS f WHERE f.run_id = j.value ->> 0 AND f.record_type = 'trace') AS fkey,
         (SELECT s.metadata_key FROM runs AS ru JOIN metric_settings AS s ON s.project_id = ru.project_id WHERE ru.id = j.value ->> 0) AS mkey
  FROM json_each(?1) AS j),
t AS MATERIALIZED (
  SELECT h.run_id, h.hour, h.mkey, r.rid, r.id, r.project_id, r.name, r.session_id, r.metrics, r.status_code, r.error_message
  FROM h JOIN records AS r ON r.family_key = h.fkey AND r.created_at >= h.hour * ${HOUR_MICROS} AND r.created_at < (h.hour + 1) * ${HOUR_MICROS}),
tv AS MATERIALIZED (
  SELECT t.rid, '${CELL_ERRORS}' AS name, CASE WHEN t.status_code >= 400 OR (t.error_message IS NOT NULL AND t.error_message <> '') THEN 1 ELSE 0 END AS x FROM t
  UNION ALL
  SELECT t.rid, '${CELL_SPANS}', (SELECT count(*) FROM records AS c WHERE c.trace_id = t.id AND c.record_type = 'span' AND +c.project_id = t.project_id AND +c.run_id = t.run_id) FROM t
  UNION ALL
  SELECT t.rid, '${CELL_TOTAL_TOKENS}', coalesce(${metric("num_total_tokens")}, CASE WHEN ${metric("num_input_tokens")} IS NOT NULL OR ${metric("num_output_tokens")} IS NOT NULL
    THEN coalesce(${metric("num_input_tokens")}, 0) + coalesce(${metric("num_output_tokens")}, 0) END) FROM t
  UNION ALL
  SELECT t.rid, lx.key, lx.value FROM t, json_each(t.metrics) AS lx WHERE lx.type IN ('integer', 'real')),
g AS (
  SELECT t.run_id, t.hour, t.mkey, t.rid, t.session_id, '' AS grouping, '' AS gv FROM t
  UNION ALL SELECT t.run_id, t.hour, t.mkey, t.rid, t.session_id, 'name', t.name FROM t
  UNION ALL SELECT t.run_id, t.hour, t.mkey, t.rid, t.session_id, 'tags', rt.tag FROM t JOIN record_tags AS rt ON rt.record_rid = t.rid
  UNION ALL SELECT t.run_id, t.hour, t.mkey, t.rid, t.session_id, 'metadata', rm.value FROM t JOIN record_metadata AS rm ON rm.record_rid = t.rid AND rm.key = t.mkey)`;

/** The UTC days of the chunk's hours (d: run_id, day as its first hour). */
const DAYS = "(SELECT DISTINCT j.value ->> 0 AS run_id, (j.value ->> 1) / 24 * 24 AS day FROM json_each(?1) AS j) AS d";
const IN_DAYS = "(run_id, hour) IN (SELECT j.value ->> 0, (j.value ->> 1) / 24 * 24 FROM json_each(?1) AS j)";
/** The hour cells (x) of a day d: one key range per grouping. */
const DAY_HOURS = `x.run_id = d.run_id AND x.grouping IN ${GROUPINGS_SQL} AND x.hour >= d.day AND x.hour < d.day + 24`;

/**
 * The figures of a cell that do not add up across cells, kept on the cell itself so that a bucket
 * made of exactly one cell reads its row and nothing else: its distinct sessions, and the bin of
 * each duration percentile's nearest rank (the bin whose running count first reaches
 * ceil(p x n / 100)), as the read computes them from merged bins (preaggregated-read.ts).
 */
function cellAnswers(cells: string, sessions: string, bins: string, where: string): string {
  const same = (x: string) => `${x}.run_id = c.run_id AND ${x}.grouping = c.grouping AND ${x}.hour = c.hour AND ${x}.group_value = c.group_value`;
  const rankBin = (p: number) => `(SELECT k.bin FROM (SELECT x.bin, sum(x.n) OVER (ORDER BY x.bin) AS cum, sum(x.n) OVER () AS tot FROM ${bins} AS x WHERE ${same("x")}) AS k
    WHERE k.cum >= ${nearestRankSql(p, "k.tot")} ORDER BY k.bin LIMIT 1)`;
  return `UPDATE ${cells} AS c SET sessions = (SELECT count(*) FROM ${sessions} AS s WHERE ${same("s")}),
    ${CELL_PERCENTILES.map((p) => `p${p}_bin = ${rankBin(p)}`).join(", ")}
  WHERE ${where}`;
}

/** The statements that recompute the cells of a chunk (?1: JSON list of [run_id, hour]) and clear its marks. */
export const REFRESH_STATEMENTS: readonly string[] = [
  ...CELL_TABLES.map((table) => `DELETE FROM ${table} WHERE ${IN_CHUNK}`),
  `${CHUNK_ROWS}
  INSERT INTO metric_cells (run_id, hour, grouping, group_value, traces, metadata_key)
  SELECT run_id, hour, grouping, gv, count(*), CASE WHEN grouping = '' THEN mkey END FROM g GROUP BY run_id, hour, grouping, gv`,
  `${CHUNK_ROWS}
  INSERT INTO metric_cell_values (run_id, hour, grouping, group_value, name, n, total, lo, hi, trues)
  SELECT g.run_id, g.hour, g.grouping, g.gv, tv.name, count(tv.x), sum(tv.x), min(tv.x), max(tv.x), coalesce(sum(tv.x <> 0), 0)
  FROM g JOIN tv ON tv.rid = g.rid GROUP BY g.run_id, g.hour, g.grouping, g.gv, tv.name`,
  `${CHUNK_ROWS}
  INSERT INTO metric_cell_bins (run_id, hour, grouping, group_value, bin, n)
  SELECT g.run_id, g.hour, g.grouping, g.gv, ${binOf("tv.x")}, count(*)
  FROM g JOIN tv ON tv.rid = g.rid AND tv.name = 'duration_ns' WHERE tv.x IS NOT NULL GROUP BY 1, 2, 3, 4, 5`,
  `${CHUNK_ROWS}
  INSERT OR IGNORE INTO metric_cell_sessions (run_id, hour, grouping, group_value, session_id)
  SELECT DISTINCT run_id, hour, grouping, gv, session_id FROM g WHERE session_id IS NOT NULL`,
  cellAnswers("metric_cells", "metric_cell_sessions", "metric_cell_bins", IN_CHUNK),
  ...DAY_TABLES.map((table) => `DELETE FROM ${table} WHERE ${IN_DAYS}`),
  `INSERT INTO metric_day_cells (run_id, hour, grouping, group_value, traces)
  SELECT x.run_id, d.day, x.grouping, x.group_value, sum(x.traces) FROM ${DAYS} JOIN metric_cells AS x ON ${DAY_HOURS} GROUP BY 1, 2, 3, 4`,
  `INSERT INTO metric_day_cell_values (run_id, hour, grouping, group_value, name, n, total, lo, hi, trues)
  SELECT x.run_id, d.day, x.grouping, x.group_value, x.name, sum(x.n), sum(x.total), min(x.lo), max(x.hi), sum(x.trues)
  FROM ${DAYS} JOIN metric_cell_values AS x ON x.run_id = d.run_id AND x.hour >= d.day AND x.hour < d.day + 24 GROUP BY 1, 2, 3, 4, 5`,
  `INSERT INTO metric_day_cell_bins (run_id, hour, grouping, group_value, bin, n)
  SELECT x.run_id, d.day, x.grouping, x.group_value, x.bin, sum(x.n) FROM ${DAYS} JOIN metric_cell_bins AS x ON ${DAY_HOURS} GROUP BY 1, 2, 3, 4, 5`,
  `INSERT OR IGNORE INTO metric_day_cell_sessions (run_id, hour, grouping, group_value, session_id)
  SELECT DISTINCT x.run_id, d.day, x.grouping, x.group_value, x.session_id FROM ${DAYS} JOIN metric_cell_sessions AS x ON ${DAY_HOURS}`,
  cellAnswers("metric_day_cells", "metric_day_cell_sessions", "metric_day_cell_bins", IN_DAYS),
  `DELETE FROM metric_dirty_hours WHERE ${IN_CHUNK}`,
];

export interface RefreshOutcome {
  hours: number;
  complete: boolean;
}

/** Recomputes up to maxChunks chunks of marked hours on one database, oldest hours first. */
export async function refreshMetricCells(db: D1Database, maxChunks: number = REFRESH_MAX_CHUNKS, chunkHours: number = REFRESH_CHUNK_HOURS): Promise<RefreshOutcome> {
  let hours = 0;
  for (let chunk = 0; chunk < maxChunks; chunk += 1) {
    const rows = await db.prepare("SELECT run_id, hour FROM metric_dirty_hours ORDER BY run_id, hour LIMIT ?1").bind(chunkHours).all<{ run_id: string; hour: number }>();
    if (rows.results.length === 0) return { hours, complete: true };
    const pairs = JSON.stringify(rows.results.map((row) => [row.run_id, row.hour]));
    await db.batch(REFRESH_STATEMENTS.map((statement) => db.prepare(statement).bind(pairs)));
    hours += rows.results.length;
  }
  const left = await db.prepare("SELECT 1 FROM metric_dirty_hours LIMIT 1").first();
  return { hours, complete: left === null };
}

const MARK_WINDOW = `INSERT OR IGNORE INTO metric_dirty_hours (run_id, hour)
  SELECT DISTINCT run_id, created_at / ${HOUR_MICROS} FROM records WHERE rid > ?1 AND rid <= ?2 AND record_type = 'trace'`;
const ADVANCE = "UPDATE metric_cell_backfill SET after_rid = ?2 WHERE id = 1 AND after_rid = ?1";

/**
 * The backfill of traces written before the marking triggers: marks their hours, a window of rids
 * at a time (resumable: metric_cell_backfill keeps how far it got), so the refresh computes them.
 */
export async function backfillMetricCells(db: D1Database, maxWindows: number = BACKFILL_MAX_WINDOWS, window: number = BACKFILL_WINDOW): Promise<{ windows: number; complete: boolean }> {
  let progress = await db.prepare("SELECT after_rid, until_rid FROM metric_cell_backfill WHERE id = 1").first<{ after_rid: number; until_rid: number }>();
  let windows = 0;
  while (progress && progress.after_rid < progress.until_rid) {
    if (windows >= maxWindows) return { windows, complete: false };
    const to = Math.min(progress.after_rid + window, progress.until_rid);
    await db.batch([db.prepare(MARK_WINDOW).bind(progress.after_rid, to), db.prepare(ADVANCE).bind(progress.after_rid, to)]);
    windows += 1;
    progress = { after_rid: to, until_rid: progress.until_rid };
  }
  return { windows, complete: true };
}

/** One row `done` (1 when every trace older than the triggers has its hour marked; reads scan everything until then), or none. */
export const BACKFILLED = "SELECT after_rid >= until_rid AS done FROM metric_cell_backfill WHERE id = 1";
