/**
 * The SQL of deletion by metadata. Plain text with bound parameters only: the metadata key and
 * value, the organization, the job id and the chunk limits are always bound, never spliced.
 *
 * What is deleted (the "deletion set" of one organization, key and value):
 * - MS: the organization's sessions whose user_metadata[key] = value;
 * - T:  its traces whose user_metadata[key] = value, and the traces of the sessions in MS;
 * - the spans of the traces in T and of the sessions in MS.
 * A child belongs to a parent when it names the parent (`session_id`, `trace_id`) from the same
 * run, as streaming ingestion links them: ids are chosen by clients, so a record of another run,
 * or of another organization, may name one of ours without being part of it.
 * Matches are found through `record_metadata_org_key_value` (organization_id, key, value,
 * record_type); children through `records_trace` (trace_id, record_type) and `records_session`
 * (session_id, record_type), with the run checked on the row: `+run_id` keeps the planner off the
 * run indexes, which would walk a whole run to find one parent's children. Joins from a bounded
 * set (roots, a page) to `records` are written CROSS JOIN, which SQLite reads as "keep this
 * order": left alone, it may scan `records` and probe the small set instead.
 * test/deletion-query-plans.test.ts holds every statement to these plans.
 *
 * Order: a record is deleted only once nothing that hangs from it is left (spans before their
 * trace, traces and spans before their session), and a matching session or trace is what makes
 * its subtree findable. A crash between two chunks therefore never strands records that no
 * longer match: whatever is left is still reachable from a surviving match.
 *
 * Metadata, tag and metric rows go with their record by ON DELETE CASCADE: that is one primary-key
 * probe per side table and record, which an explicit DELETE before it would only repeat (the
 * foreign-key check still probes after it). `changes()` counts only the records themselves.
 */

/*
 * Chunk statements bind, in this order: ?1 organization, ?2 key, ?3 value, ?4 job id, ?5 matching
 * sessions and traces looked at, ?6 traces of matching sessions looked at, ?7 spans deleted at most.
 */
const ACTIVE_ROOTS = `
active AS (SELECT 1 FROM org_jobs WHERE id = ?4 AND status IN ('queued', 'running')),
roots AS (
  SELECT record_id AS id, record_type AS kind, run_id FROM record_metadata
  WHERE organization_id = ?1 AND key = ?2 AND value = ?3 AND record_type IN ('session', 'trace')
    AND EXISTS (SELECT 1 FROM active)
  LIMIT ?5
),
root_sessions AS (SELECT id, run_id FROM roots WHERE kind = 'session')`;

const CANDIDATE_TRACES = `
candidate_traces AS (
  SELECT id, run_id FROM roots WHERE kind = 'trace'
  UNION ALL
  SELECT id, run_id FROM (
    SELECT t.id, t.run_id FROM root_sessions AS rs
    CROSS JOIN records AS t ON t.session_id = rs.id AND t.record_type = 'trace' AND +t.run_id = rs.run_id
    LIMIT ?6
  )
)`;

/**
 * Spans of the candidate traces and of the matching sessions, at most ?7 of them. Parameters
 * ?1..?7. Nothing happens unless job ?4 is queued or running, so a message of a
 * completed or failed job deletes nothing.
 */
export const DELETE_SPANS = `
WITH ${ACTIVE_ROOTS}, ${CANDIDATE_TRACES}
DELETE FROM records WHERE organization_id = ?1 AND id IN (
  SELECT id FROM (
    SELECT s.id FROM candidate_traces AS ct
    CROSS JOIN records AS s ON s.trace_id = ct.id AND s.record_type = 'span' AND +s.run_id = ct.run_id
    UNION ALL
    SELECT s.id FROM root_sessions AS rs
    CROSS JOIN records AS s ON s.session_id = rs.id AND s.record_type = 'span' AND +s.run_id = rs.run_id
  )
  LIMIT ?7
)`;

/** A trace (alias `t`) none of whose spans is left: what DELETE_TRACES may take. */
const NO_SPAN_LEFT = (t: string) =>
  `NOT EXISTS (SELECT 1 FROM records AS s WHERE s.trace_id = ${t}.id AND s.record_type = 'span' AND +s.run_id = ${t}.run_id)`;

/**
 * The parents (sessions) that lose their last child with this chunk's traces: has_children goes
 * back to 0. Runs between DELETE_SPANS and DELETE_TRACES, so `going` is exactly what
 * DELETE_TRACES is about to delete (the same candidates, those without spans left); a parent
 * keeps has_children while any other child names it in its run. Parameters ?1..?6.
 */
export const REFRESH_PARENTS = `
WITH ${ACTIVE_ROOTS}, ${CANDIDATE_TRACES},
going AS (
  SELECT t.id, t.parent_id, t.run_id FROM candidate_traces AS ct
  CROSS JOIN records AS t ON t.id = ct.id AND t.record_type = 'trace' AND t.organization_id = ?1
  WHERE t.parent_id IS NOT NULL
    AND ${NO_SPAN_LEFT("t")}
)
UPDATE records SET has_children = 0
WHERE id IN (SELECT parent_id FROM going) AND has_children = 1 AND organization_id = ?1
  AND EXISTS (SELECT 1 FROM going AS g WHERE g.parent_id = records.id AND g.run_id = records.run_id)
  AND NOT EXISTS (
    SELECT 1 FROM records AS c
    WHERE c.parent_id = records.id AND +c.run_id = records.run_id AND c.id NOT IN (SELECT id FROM going)
  )`;

/** Candidate traces that have no span left. Parameters ?1..?6. */
export const DELETE_TRACES = `
WITH ${ACTIVE_ROOTS}, ${CANDIDATE_TRACES}
DELETE FROM records
WHERE id IN (SELECT id FROM candidate_traces) AND record_type = 'trace' AND organization_id = ?1
  AND ${NO_SPAN_LEFT("records")}`;

/** Matching sessions that have no trace or span left. Parameters ?1..?5. */
export const DELETE_SESSIONS = `
WITH ${ACTIVE_ROOTS}
DELETE FROM records
WHERE id IN (SELECT id FROM root_sessions) AND record_type = 'session' AND organization_id = ?1
  AND NOT EXISTS (
    SELECT 1 FROM records AS c
    WHERE c.session_id = records.id AND c.record_type IN ('trace', 'span') AND +c.run_id = records.run_id
  )`;

/** Counts the previous statement's deletions: ?1 job id, ?2 now (microseconds). */
export const COUNT_DELETED_SPANS = `UPDATE org_jobs SET spans_deleted = spans_deleted + changes(), updated_at = ?2 WHERE id = ?1`;
export const COUNT_DELETED_TRACES = `UPDATE org_jobs SET traces_deleted = traces_deleted + changes(), updated_at = ?2 WHERE id = ?1`;
export const COUNT_DELETED_SESSIONS = `UPDATE org_jobs SET sessions_deleted = sessions_deleted + changes(), updated_at = ?2 WHERE id = ?1`;

/** ?1 job id, ?2 now. A queued job becomes running with its first chunk, atomically. */
export const MARK_RUNNING = `UPDATE org_jobs SET status = 'running', updated_at = ?2 WHERE id = ?1 AND status = 'queued'`;

/**
 * ?1 job id, ?2 now, ?3 organization, ?4 key, ?5 value. Completes an active job when no matching
 * session or trace is left: with the chunk that deleted the last one, in the same batch.
 */
export const COMPLETE_IF_DONE = `
UPDATE org_jobs SET status = 'completed', updated_at = ?2
WHERE id = ?1 AND status IN ('queued', 'running')
  AND NOT EXISTS (
    SELECT 1 FROM record_metadata
    WHERE organization_id = ?3 AND key = ?4 AND value = ?5 AND record_type IN ('session', 'trace')
  )`;

/** ?1 job id. */
export const JOB_PROGRESS = `
SELECT status, sessions_deleted, traces_deleted, spans_deleted FROM org_jobs WHERE id = ?1`;

/** ?1 organization, ?2 key, ?3 value: is there anything to delete at all? */
export const ANY_MATCH = `
SELECT EXISTS (
  SELECT 1 FROM record_metadata
  WHERE organization_id = ?1 AND key = ?2 AND value = ?3 AND record_type IN ('session', 'trace')
) AS matched`;

/**
 * Dry-run counting walks the matching sessions, then the matching traces, a page at a time in
 * index order (keyset on the metadata row's rowid), so no statement is long. Each record of the
 * deletion set is counted on exactly one page: a trace on its session's page when its session
 * matches, else on its own page; a span on its session's page when its session matches, else on
 * its trace's.
 *
 * ?1 organization, ?2 key, ?3 value, ?4 last rowid seen (0 to start), ?5 page size. Answers the
 * page's size and last rowid, and the traces and spans counted on it.
 */
const IN_MATCHING_SESSION = (alias: string) => `EXISTS (
    SELECT 1 FROM record_metadata AS m
    WHERE m.record_id = ${alias}.session_id AND m.key = ?2 AND m.value = ?3 AND m.record_type = 'session'
      AND +m.run_id = ${alias}.run_id
  )`;

const PAGE = (kind: "session" | "trace") => `
page AS (
  SELECT rowid AS rid, record_id AS id, run_id FROM record_metadata
  WHERE organization_id = ?1 AND key = ?2 AND value = ?3 AND record_type = '${kind}' AND rowid > ?4
  ORDER BY rowid LIMIT ?5
)`;

const PAGE_TRACE_SPANS = `(SELECT count(*) FROM page_traces AS pt
    CROSS JOIN records AS s ON s.trace_id = pt.id AND s.record_type = 'span' AND +s.run_id = pt.run_id
    WHERE NOT ${IN_MATCHING_SESSION("s")})`;

export const COUNT_SESSION_PAGE = `
WITH ${PAGE("session")},
page_traces AS (
  SELECT t.id, t.run_id FROM page AS p
  CROSS JOIN records AS t ON t.session_id = p.id AND t.record_type = 'trace' AND +t.run_id = p.run_id
)
SELECT
  (SELECT count(*) FROM page) AS roots,
  (SELECT max(rid) FROM page) AS last_rowid,
  (SELECT count(*) FROM page_traces) AS traces,
  (SELECT count(*) FROM page AS p
    CROSS JOIN records AS s ON s.session_id = p.id AND s.record_type = 'span' AND +s.run_id = p.run_id)
  + ${PAGE_TRACE_SPANS} AS spans`;

export const COUNT_TRACE_PAGE = `
WITH ${PAGE("trace")},
page_traces AS (
  SELECT t.id, t.run_id FROM page AS p
  CROSS JOIN records AS t ON t.id = p.id AND t.record_type = 'trace'
  WHERE NOT ${IN_MATCHING_SESSION("t")}
)
SELECT
  (SELECT count(*) FROM page) AS roots,
  (SELECT max(rid) FROM page) AS last_rowid,
  (SELECT count(*) FROM page_traces) AS traces,
  ${PAGE_TRACE_SPANS} AS spans`;
