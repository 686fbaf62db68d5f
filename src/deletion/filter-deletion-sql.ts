/**
 * The SQL of deletion by filter (contract section 10; docs/deletion.md, "Deletion by filter"):
 * one chunk erases, on the project's database, the subtrees of a set of root records that the
 * search's filter matched just before the chunk (delete-chunk.ts reads them with the job's
 * compiled search statement, so every chunk matches live records). Same engine and guarantees
 * as deletion by metadata (deletion-sql.ts): one D1 batch per chunk, tombstones stamped with the
 * chunk's stamp and exactly the tombstoned records deleted, children before their parents (so
 * whatever a crash leaves is still reachable from a root that still matches), progress counted
 * with `changes()` in the same batch, `has_children` refreshed, held updates forgotten.
 *
 * The roots travel as one JSON parameter (a list of ids), looked up by `records_project_record_id`
 * and confined to the job's project, run and organization on the row, so a list can never reach
 * another run's records. Nothing runs once the part is over (`active`) or while the project is
 * not held here (a move's copy: docs/sharding.md, "Moving a project").
 *
 * ?1 root ids (JSON list), ?2 job id, ?3 project, ?4 run, ?5 organization, ?6 spans at most,
 * ?7 the chunk's stamp, ?8 now (µs), ?9 traces of root sessions looked at.
 */
import { DELETE_GOING, FORGET_HELD_PATCHES, MAX_SPAN_DEPTH, REFRESH_PARENTS } from "./deletion-sql";

/** The values of ?1 to ?9, in order. */
export type FilterChunkValues = readonly [roots: string, jobId: string, projectId: string, runId: string, organizationId: string, spans: number, stamp: number, now: number, sessionTraces: number];

const ACTIVE = `active AS (
  SELECT 1 FROM shard_jobs WHERE job_id = ?2 AND status IN ('queued', 'running')
    AND NOT EXISTS (SELECT 1 FROM shard_projects AS sp WHERE sp.project_id = ?3 AND sp.state IN ('importing', 'gone'))
)`;

const ROOTS = `
roots AS (
  SELECT r.rid, r.id, r.record_type AS kind, r.run_id, r.project_id
  FROM json_each(?1) AS j CROSS JOIN records AS r ON r.project_id = ?3 AND r.id = j.value
  WHERE +r.run_id = ?4 AND r.organization_id = ?5 AND EXISTS (SELECT 1 FROM active)
),
root_sessions AS (SELECT id, run_id, project_id FROM roots WHERE kind = 'session')`;

const CANDIDATE_TRACES = `
candidate_traces AS (
  SELECT rid, id, run_id, project_id FROM roots WHERE kind = 'trace'
  UNION ALL
  SELECT rid, id, run_id, project_id FROM (
    SELECT t.rid, t.id, t.run_id, t.project_id FROM root_sessions AS rs
    CROSS JOIN records AS t ON t.session_id = rs.id AND t.record_type = 'trace' AND +t.run_id = rs.run_id
    LIMIT ?9
  )
)`;

const TOMBSTONE = "INSERT OR REPLACE INTO record_tombstones (project_id, record_id, deleted_at)";

/** Spans of root traces, of the traces of root sessions, and of root sessions: at most ?6. */
const TOMBSTONE_SPANS_OF_ROOTS = `
WITH ${ACTIVE}, ${ROOTS}, ${CANDIDATE_TRACES}
${TOMBSTONE}
SELECT project_id, id, ?7 FROM (
  SELECT s.project_id, s.id FROM candidate_traces AS ct
  CROSS JOIN records AS s ON s.trace_id = ct.id AND s.record_type = 'span' AND +s.run_id = ct.run_id
  UNION ALL
  SELECT s.project_id, s.id FROM root_sessions AS rs
  CROSS JOIN records AS s ON s.session_id = rs.id AND s.record_type = 'span' AND +s.run_id = rs.run_id
  LIMIT ?6
)`;

/**
 * Root spans with the spans below them, leaves first (at most ?6), walked depth first as in
 * deletion by metadata (deletion-sql.ts, TOMBSTONE_MATCHED_SPAN_LEAVES), loops included.
 */
const TOMBSTONE_ROOT_SPAN_LEAVES = `
WITH RECURSIVE ${ACTIVE}, ${ROOTS},
subtree(project_id, id, run_id, depth, seed) AS (
  SELECT project_id, id, run_id, 0, id FROM roots WHERE kind = 'span'
  UNION ALL
  SELECT c.project_id, c.id, c.run_id, subtree.depth + 1, subtree.seed FROM subtree
  CROSS JOIN records AS c ON c.parent_id = subtree.id AND +c.run_id = subtree.run_id AND +c.record_type = 'span'
  WHERE c.id != subtree.seed
  ORDER BY 4 DESC
  LIMIT ?6 + ${MAX_SPAN_DEPTH}
)
${TOMBSTONE}
SELECT project_id, id, ?7 FROM subtree
WHERE NOT EXISTS (SELECT 1 FROM records AS c WHERE c.parent_id = subtree.id AND +c.run_id = subtree.run_id AND c.id != subtree.seed)
LIMIT ?6`;

/** Candidate traces with no span left. */
const TOMBSTONE_TRACES = `
WITH ${ACTIVE}, ${ROOTS}, ${CANDIDATE_TRACES}
${TOMBSTONE}
SELECT ct.project_id, ct.id, ?7 FROM candidate_traces AS ct
WHERE NOT EXISTS (SELECT 1 FROM records AS s WHERE s.trace_id = ct.id AND s.record_type = 'span' AND +s.run_id = ct.run_id)`;

/** Root sessions with no trace or span left. */
const TOMBSTONE_SESSIONS = `
WITH ${ACTIVE}, ${ROOTS}
${TOMBSTONE}
SELECT rs.project_id, rs.id, ?7 FROM root_sessions AS rs
WHERE NOT EXISTS (
  SELECT 1 FROM records AS c WHERE c.session_id = rs.id AND c.record_type IN ('trace', 'span') AND +c.run_id = rs.run_id
)`;

/**
 * A statement and the positions (0-based) of the chunk values it binds, in order: up to its
 * highest ?N exactly (D1 refuses a statement bound with more values than it names).
 */
export interface FilterChunkStatement {
  sql: string;
  params: readonly number[];
}

const ALL = [0, 1, 2, 3, 4, 5, 6, 7, 8];
/** The stamped-removal statements of deletion-sql.ts bind ?1 stamp, ?2 organization. */
const STAMP_ORG = [6, 4];
const countDeleted = (column: "spans_deleted" | "traces_deleted" | "sessions_deleted"): FilterChunkStatement => ({
  sql: `UPDATE shard_jobs SET ${column} = ${column} + changes(), updated_at = ?2 WHERE job_id = ?1`,
  params: [1, 7],
});

export const FILTER_CHUNK_STATEMENTS: readonly FilterChunkStatement[] = [
  { sql: `UPDATE shard_jobs SET status = 'running', updated_at = ?2 WHERE job_id = ?1 AND status = 'queued'`, params: [1, 7] },
  { sql: TOMBSTONE_SPANS_OF_ROOTS, params: ALL },
  { sql: TOMBSTONE_ROOT_SPAN_LEAVES, params: ALL.slice(0, 7) },
  { sql: REFRESH_PARENTS, params: STAMP_ORG },
  { sql: DELETE_GOING.replace("?3", "'span'"), params: STAMP_ORG },
  countDeleted("spans_deleted"),
  { sql: TOMBSTONE_TRACES, params: ALL },
  { sql: REFRESH_PARENTS, params: STAMP_ORG },
  { sql: DELETE_GOING.replace("?3", "'trace'"), params: STAMP_ORG },
  countDeleted("traces_deleted"),
  { sql: TOMBSTONE_SESSIONS, params: ALL.slice(0, 7) },
  { sql: DELETE_GOING.replace("?3", "'session'"), params: STAMP_ORG },
  countDeleted("sessions_deleted"),
  { sql: FORGET_HELD_PATCHES, params: STAMP_ORG },
  { sql: `SELECT status, sessions_deleted, traces_deleted, spans_deleted FROM shard_jobs WHERE job_id = ?1`, params: [1] },
];

/** Ends the part when the filter matches nothing any more, and answers its state (?1 job id, ?2 now). */
export const COMPLETE_FILTER_PART = [
  `UPDATE shard_jobs SET status = 'completed', updated_at = ?2 WHERE job_id = ?1 AND status IN ('queued', 'running')`,
  `SELECT status, sessions_deleted, traces_deleted, spans_deleted FROM shard_jobs WHERE job_id = ?1`,
] as const;
