/**
 * The SQL of retention expiry (docs/retention.md): one part of an `expire_retention` job erases,
 * on one database, what is older than the cut-off of each of the job's projects. Same engine as
 * deletion by metadata (delete-chunk.ts, advance-job.ts): one D1 batch per chunk, progress
 * counted with `changes()` in the same batch, the part's row in `shard_jobs`.
 *
 * What goes, per project (cut-off C, fixed when the job was created):
 * - every trace with created_at < C, with all of its spans (whole traces: a span of an expired
 *   trace goes whatever its own created_at);
 * - spans with created_at < C whose trace is not there (never arrived, or already gone);
 * - sessions with created_at < C that have no trace or span left;
 * - held streaming updates (record_patches) received before C.
 * A span older than C in a trace that is younger stays with its trace.
 *
 * Phases, so that no chunk walks what a later chunk will delete anyway: while an expired trace
 * is left, chunks take the spans of the first ?3 expired traces (at most ?4), then those of them
 * with no span left; only then orphan spans and empty sessions. Expired records are found by
 * `records_family_order` (family_key, created_at, id) per run family of the project (the shard's
 * copy of `runs`, by `runs_project_kind_name`, and its `run_families`); a trace's spans by
 * `records_trace`; the statements are held to these plans by test/retention-query-plans.test.ts.
 *
 * No tombstones: a record that arrives later is expired by the next run if it is old, and
 * searches never show it meanwhile.
 *
 * ?1 the targets, JSON [[project_id, cut-off µs], ...]; ?2 job id; ?3 expired traces (and
 * sessions) looked at per chunk; ?4 spans and held updates deleted per chunk at most; ?5 now (µs).
 */
/** The values of ?1 to ?5, in order. */
export type ExpiryChunkValues = readonly [targets: string, jobId: string, roots: number, spans: number, now: number];

/**
 * The values a statement binds: ?1 to its highest ?N (SQLite counts parameters up to the highest
 * number used, and D1 refuses a batch that binds more).
 */
export function bindingsOf(sql: string, values: ExpiryChunkValues): (string | number)[] {
  const highest = Math.max(0, ...[...sql.matchAll(/\?(\d+)/g)].map((m) => Number(m[1])));
  return values.slice(0, highest);
}

const ACTIVE = `active AS (SELECT 1 FROM shard_jobs WHERE job_id = ?2 AND status IN ('queued', 'running'))`;

/**
 * The runs of the listed projects on this database, each with its project's cut-off and the keys
 * of its three families (run_families); gated by the part being active in the chunks, not in the
 * cron's probe. Materialized, so that the family keys are plain values to the index lookups.
 */
const KINDS = ["session", "trace", "span"] as const;

const targetRuns = (gate: "while active" | "always") => `
target_runs AS MATERIALIZED (
  SELECT t.project_id, ru.id AS run_id, t.cutoff,
    ${KINDS.map((kind) => `(SELECT f.key FROM run_families AS f WHERE f.run_id = ru.id AND f.record_type = '${kind}') AS ${kind}_family`).join(",\n    ")}
  FROM (
    SELECT json_extract(value, '$[0]') AS project_id, json_extract(value, '$[1]') AS cutoff FROM json_each(?1)
  ) AS t CROSS JOIN runs AS ru ON ru.project_id = t.project_id
  ${gate === "while active" ? "WHERE EXISTS (SELECT 1 FROM active)" : ""}
)`;

const TARGET_RUNS = targetRuns("while active");

/*
 * What an expiry erases, as conditions on a row of `target_runs AS tr` (the chunks join them, the
 * cron's probe asks whether any row meets them): records of one kind older than the cut-off, a
 * span whose trace is not there, a session with nothing left in it, a held update received before
 * the cut-off.
 */
const olderThanCutoff = (alias: string, kind: (typeof KINDS)[number]) =>
  `${alias}.family_key = tr.${kind}_family AND ${alias}.created_at < tr.cutoff`;
const TRACE_NOT_HERE = `NOT EXISTS (SELECT 1 FROM records AS t WHERE t.project_id = s.project_id AND t.id = s.trace_id AND t.record_type = 'trace')`;
const NOTHING_IN_SESSION = `NOT EXISTS (SELECT 1 FROM records AS c WHERE c.session_id = se.id AND c.record_type IN ('trace', 'span') AND +c.run_id = se.run_id)`;
const PATCH_BEFORE_CUTOFF = `p.run_id = tr.run_id AND p.created_at < tr.cutoff`;

const EXPIRED_TRACES = `
expired_traces AS (
  SELECT r.rid, r.id, r.run_id FROM target_runs AS tr
  CROSS JOIN records AS r ON ${olderThanCutoff("r", "trace")}
  LIMIT ?3
)`;

const WITH = `WITH ${ACTIVE}, ${TARGET_RUNS}, ${EXPIRED_TRACES}`;

/** Spans of the first expired traces. */
const DELETE_SPANS_OF_EXPIRED_TRACES = `
${WITH}
DELETE FROM records WHERE rid IN (
  SELECT s.rid FROM expired_traces AS et
  CROSS JOIN records AS s ON s.trace_id = et.id AND s.record_type = 'span' AND +s.run_id = et.run_id
  LIMIT ?4
)`;

/** Those of the first expired traces that have no span left. */
const DELETE_EMPTY_EXPIRED_TRACES = `
${WITH}
DELETE FROM records WHERE rid IN (
  SELECT et.rid FROM expired_traces AS et
  WHERE NOT EXISTS (SELECT 1 FROM records AS s WHERE s.trace_id = et.id AND s.record_type = 'span' AND +s.run_id = et.run_id)
)`;

/** An old span whose trace is not there (its trace is looked up by (project_id, id)). */
const ORPHAN_OLD_SPANS = `
  SELECT s.rid FROM target_runs AS tr
  CROSS JOIN records AS s ON ${olderThanCutoff("s", "span")}
  WHERE ${TRACE_NOT_HERE}`;

/** Once no expired trace is left: old spans without their trace. */
const DELETE_ORPHAN_OLD_SPANS = `
${WITH}
DELETE FROM records WHERE rid IN (
  ${ORPHAN_OLD_SPANS}
    AND NOT EXISTS (SELECT 1 FROM expired_traces)
  LIMIT ?4
)`;

/** An old session with no trace or span left. */
const EMPTY_OLD_SESSIONS = `
  SELECT se.rid FROM target_runs AS tr
  CROSS JOIN records AS se ON ${olderThanCutoff("se", "session")}
  WHERE ${NOTHING_IN_SESSION}`;

/** Once no expired trace is left: old sessions that have nothing left in them. */
const DELETE_EMPTY_OLD_SESSIONS = `
${WITH}
DELETE FROM records WHERE rid IN (
  ${EMPTY_OLD_SESSIONS}
    AND NOT EXISTS (SELECT 1 FROM expired_traces)
  LIMIT ?3
)`;

/** Held updates received before the cut-off (by `record_patches_run`). */
const OLD_PATCHES = `
  SELECT p.rowid FROM target_runs AS tr
  CROSS JOIN record_patches AS p ON ${PATCH_BEFORE_CUTOFF}`;

const DELETE_OLD_PATCHES = `
WITH ${ACTIVE}, ${TARGET_RUNS}
DELETE FROM record_patches WHERE rowid IN (${OLD_PATCHES} LIMIT ?4)`;

const countDeleted = (column: "spans_deleted" | "traces_deleted" | "sessions_deleted") =>
  `UPDATE shard_jobs SET ${column} = ${column} + changes(), updated_at = ?5 WHERE job_id = ?2`;

/** How many held updates the previous statement removed (progress counts records only). */
const PATCHES_REMOVED = `SELECT changes() AS patches_removed`;

/** Completes the part when nothing expired is left, in the batch that removed the last of it. */
const COMPLETE_IF_DONE = `
WITH ${ACTIVE}, ${TARGET_RUNS}, ${EXPIRED_TRACES}
UPDATE shard_jobs SET status = 'completed', updated_at = ?5
WHERE job_id = ?2 AND status IN ('queued', 'running')
  AND NOT EXISTS (SELECT 1 FROM expired_traces)
  AND NOT EXISTS (${ORPHAN_OLD_SPANS})
  AND NOT EXISTS (${EMPTY_OLD_SESSIONS})
  AND NOT EXISTS (${OLD_PATCHES})`;

const MARK_RUNNING = `UPDATE shard_jobs SET status = 'running', updated_at = ?5 WHERE job_id = ?2 AND status = 'queued'`;

const JOB_PROGRESS = `SELECT status, sessions_deleted, traces_deleted, spans_deleted FROM shard_jobs WHERE job_id = ?2`;

/**
 * One chunk, in order, as one D1 batch. The statement after the held updates' DELETE answers how
 * many it removed; the last answers the part's status and progress.
 */
export const EXPIRY_CHUNK_STATEMENTS: readonly string[] = [
  MARK_RUNNING,
  DELETE_SPANS_OF_EXPIRED_TRACES,
  countDeleted("spans_deleted"),
  DELETE_EMPTY_EXPIRED_TRACES,
  countDeleted("traces_deleted"),
  DELETE_ORPHAN_OLD_SPANS,
  countDeleted("spans_deleted"),
  DELETE_EMPTY_OLD_SESSIONS,
  countDeleted("sessions_deleted"),
  DELETE_OLD_PATCHES,
  PATCHES_REMOVED,
  COMPLETE_IF_DONE,
  JOB_PROGRESS,
];

/** Index of PATCHES_REMOVED in EXPIRY_CHUNK_STATEMENTS. */
export const PATCHES_REMOVED_INDEX = EXPIRY_CHUNK_STATEMENTS.indexOf(PATCHES_REMOVED);

/**
 * The projects (of a JSON target list, ?1 as above) that have anything an expiry would erase on
 * this database, by the same rules as the chunks: what the cron asks each shard before it
 * creates a job, so that no job is created for nothing (an old span of a young trace, an old
 * session with a young trace, stay).
 */
export const PROJECTS_WITH_EXPIRED_DATA = `
WITH ${targetRuns("always")}
SELECT DISTINCT tr.project_id FROM target_runs AS tr
WHERE EXISTS (SELECT 1 FROM records AS r WHERE ${olderThanCutoff("r", "trace")})
  OR EXISTS (SELECT 1 FROM records AS s WHERE ${olderThanCutoff("s", "span")} AND ${TRACE_NOT_HERE})
  OR EXISTS (SELECT 1 FROM records AS se WHERE ${olderThanCutoff("se", "session")} AND ${NOTHING_IN_SESSION})
  OR EXISTS (SELECT 1 FROM record_patches AS p WHERE ${PATCH_BEFORE_CUTOFF})`;
