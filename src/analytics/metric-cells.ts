/**
 * The pre-aggregated metric cells (issue 21 point 4; migration 0018 / shard 0011;
 * docs/analytics.md, "Pre-aggregates"): per run, hour of a trace's created_at and group
 * (ungrouped, `name`, each tag, the value of the project's declared analytics metadata key), the
 * trace count, each value's count / sum / min / max / non-zero count, distinct session ids and a
 * log-scale histogram of `duration_ns`.
 *
 * A cell is recomputed from the records of its hour, never incremented: writes only mark the
 * hours they change (the triggers of the migration, one probe a row), and `refreshMetricCells`
 * recomputes the marked hours in chunks, each chunk's recomputation and the removal of its marks
 * one atomic batch. So a cell is exact whatever order writes, deletions, expiry and moves arrive
 * in, minima and maxima included, and a chunk run twice changes nothing. Reads scan the hours
 * still marked (preaggregated-read.ts).
 */

export const HOUR_MICROS = 3_600_000_000;

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
/** Chunks per database per scheduled run (9 statements each): a small share of an invocation's 1,000 queries. */
export const REFRESH_MAX_CHUNKS = 20;
/** Rids per backfill window, and windows per run, as the roll-up backfill. */
export const BACKFILL_WINDOW = 5_000;
export const BACKFILL_MAX_WINDOWS = 20;

const CELL_TABLES = ["metric_cells", "metric_cell_values", "metric_cell_bins", "metric_cell_sessions"] as const;

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

/** Whether every trace older than the triggers has its hour marked (reads scan everything until then). */
export async function cellsBackfilled(db: D1Database): Promise<boolean> {
  const row = await db.prepare("SELECT after_rid >= until_rid AS done FROM metric_cell_backfill WHERE id = 1").first<{ done: number }>();
  return row === null || row.done === 1;
}
