/**
 * The SQL of deletion by metadata. Plain text with bound parameters only: the metadata key and
 * value, the organization, the job id and the chunk limits are always bound, never spliced.
 *
 * What is deleted (the "deletion set" of one organization, key and value; contract section 6):
 * - MS: the organization's sessions whose user_metadata[key] = value;
 * - T:  its traces whose user_metadata[key] = value, and the traces of the sessions in MS;
 * - the spans of the traces in T and of the sessions in MS;
 * - MP: its spans whose own user_metadata[key] = value, with every span below them.
 * A child belongs to a parent when it names the parent (`session_id`, `trace_id`, `parent_id`)
 * from the same run, as streaming ingestion links them.
 * Matches are found per family of the organization's runs on this database (run_families, by
 * `run_families_organization_type`) through `record_metadata_family_key_value_order`
 * (family_key, key, value, created_at, record_id); children through `records_trace` (trace_id,
 * record_type), `records_session` (session_id, record_type) and `records_parent` (parent_id),
 * with the run checked on the row:
 * `+run_id` keeps the planner off the run indexes, which would walk a whole run to find one
 * parent's children. Joins from a bounded set (roots, a page) to `records` are written CROSS
 * JOIN, which SQLite reads as "keep this order". test/deletion-query-plans.test.ts holds every
 * statement to these plans.
 *
 * A chunk first writes a tombstone (record_tombstones) for every record it is about to delete,
 * stamped with the chunk's stamp, and then deletes exactly the records tombstoned with that
 * stamp (one database's part of a job: its status and progress are that database's
 * `shard_jobs` row, updated in the same batch; src/deletion/job-parts.ts sums the parts): the set is computed once, the tombstones are exactly what was erased, and a record,
 * span or update that arrives later naming an erased id is not stored (src/ingest/tombstones.ts).
 *
 * Order: a record is deleted only once nothing that hangs from it is left (spans before their
 * trace, traces and spans before their session, the spans below a matching span leaves first,
 * the matching span last), and a matching record is what makes its subtree findable. A crash
 * between two chunks therefore never strands records that no longer match: whatever is left is
 * still reachable from a surviving match.
 *
 * Metadata and tag rows go with their record by ON DELETE CASCADE, metric rows by the
 * `record_metrics_on_delete` trigger. Held updates (record_patches) of the erased ids go in the
 * same chunk. `changes()` counts only the records.
 */

import { MAX_CHAIN_DEPTH } from "../ingest/write-guards";

/** A statement and the positions of the chunk's values it binds, in order (see ChunkValues). */
export interface ChunkStatement {
  sql: string;
  params: readonly (keyof ChunkValues)[];
}

/** Everything a chunk's statements may bind. */
export interface ChunkValues {
  organizationId: string;
  key: string;
  value: string;
  jobId: string;
  /** Matching sessions, traces and spans looked at per chunk. */
  roots: number;
  /** Traces of matching sessions looked at per chunk. */
  sessionTraces: number;
  /** Spans deleted per chunk at most. */
  spans: number;
  /** The chunk's tombstone stamp (deleted_at): a time in microseconds, unique to the chunk. */
  stamp: number;
  now: number;
}

const statement = (sql: string, ...params: (keyof ChunkValues)[]): ChunkStatement => ({ sql, params });

/*
 * Parameter numbers used in the chunk statements: ?1 organization, ?2 key, ?3 value, ?4 job id,
 * ?5 roots looked at, ?6 traces of matching sessions looked at, ?7 spans at most, ?8 stamp.
 */
const CHUNK_PARAMS: readonly (keyof ChunkValues)[] = ["organizationId", "key", "value", "jobId", "roots", "sessionTraces", "spans", "stamp"];

const ACTIVE = `active AS (SELECT 1 FROM shard_jobs WHERE job_id = ?4 AND status IN ('queued', 'running'))`;

/**
 * A metadata row's record belongs to a project this database holds (docs/sharding.md, "Moving a
 * project"): not a move's copy still being filled (`importing`) nor a moved-away copy being
 * deleted (`gone`). The project's home deletes those records, counted once; the move carries the
 * deletion over. One rowid lookup and one primary-key probe per matching row.
 */
const HELD_HERE = `NOT EXISTS (
      SELECT 1 FROM records AS held CROSS JOIN shard_projects AS sp ON sp.project_id = held.project_id
      WHERE held.rid = record_metadata.record_rid AND sp.state IN ('importing', 'gone'))`;

/**
 * The metadata rows of the organization whose key and value are given (by default ?1, ?2, ?3),
 * in the families of the given record types: FROM and WHERE of a statement reading them as
 * `record_metadata`.
 */
const MATCHES_IN = (types: string, [organization, key, value] = ["?1", "?2", "?3"]) => `run_families AS f
    CROSS JOIN record_metadata ON record_metadata.family_key = f.key AND record_metadata.key = ${key} AND record_metadata.value = ${value}
    WHERE f.organization_id = ${organization} AND f.record_type IN (${types})`;

const ROOTS = `
roots AS (
  SELECT r.rid, r.id, r.record_type AS kind, r.run_id, r.project_id FROM (
    SELECT record_rid FROM ${MATCHES_IN("'session', 'trace'")}
      AND EXISTS (SELECT 1 FROM active) AND ${HELD_HERE}
    LIMIT ?5
  ) AS m CROSS JOIN records AS r ON r.rid = m.record_rid
),
root_sessions AS (SELECT id, run_id, project_id FROM roots WHERE kind = 'session')`;

const CANDIDATE_TRACES = `
candidate_traces AS (
  SELECT rid, id, run_id, project_id FROM roots WHERE kind = 'trace'
  UNION ALL
  SELECT rid, id, run_id, project_id FROM (
    SELECT t.rid, t.id, t.run_id, t.project_id FROM root_sessions AS rs
    CROSS JOIN records AS t ON t.session_id = rs.id AND t.record_type = 'trace' AND +t.run_id = rs.run_id
    LIMIT ?6
  )
)`;

const TOMBSTONE = "INSERT OR REPLACE INTO record_tombstones (project_id, record_id, deleted_at)";

/** Spans of the candidate traces and of the matching sessions, at most ?7 of them. */
const TOMBSTONE_SPANS_OF_ROOTS = `
WITH ${ACTIVE}, ${ROOTS}, ${CANDIDATE_TRACES}
${TOMBSTONE}
SELECT project_id, id, ?8 FROM (
  SELECT s.project_id, s.id FROM candidate_traces AS ct
  CROSS JOIN records AS s ON s.trace_id = ct.id AND s.record_type = 'span' AND +s.run_id = ct.run_id
  UNION ALL
  SELECT s.project_id, s.id FROM root_sessions AS rs
  CROSS JOIN records AS s ON s.session_id = rs.id AND s.record_type = 'span' AND +s.run_id = rs.run_id
  LIMIT ?7
)`;

/**
 * How deep a chain of records may be (src/ingest/write-guards.ts): the depth-first walk below
 * meets its first leaf within that many steps. Older data may hold deeper chains: the walk is
 * bounded by rows (LIMIT), not depth, so it still reaches their leaves when the chunk allows.
 */
export const MAX_SPAN_DEPTH = MAX_CHAIN_DEPTH;

/**
 * Spans matching on their own metadata, with the spans below them, leaves first: the subtrees
 * are walked depth first and only the spans with no child left are taken (at most ?7), so every
 * span still standing stays reachable from its matching ancestor. Depth first, the walk meets
 * its first leaf within MAX_SPAN_DEPTH steps, so a chunk always makes progress.
 *
 * Loops stored before writes refused them (a span under itself or its descendant): a loop is
 * reachable from a seed only if the seed is on it (each span has one parent), so the walk never
 * steps back onto its seed, and a child that is the seed does not keep a span from being a leaf.
 * The loop is then erased from the seed's parent back round to the seed, as a chain.
 */
const TOMBSTONE_MATCHED_SPAN_LEAVES = `
WITH RECURSIVE ${ACTIVE},
seeds AS (
  SELECT record_rid FROM ${MATCHES_IN("'span'")} AND EXISTS (SELECT 1 FROM active)
    AND ${HELD_HERE}
  LIMIT ?5
),
subtree(project_id, id, run_id, depth, seed) AS (
  SELECT r.project_id, r.id, r.run_id, 0, r.id FROM seeds CROSS JOIN records AS r ON r.rid = seeds.record_rid
  UNION ALL
  SELECT c.project_id, c.id, c.run_id, subtree.depth + 1, subtree.seed FROM subtree
  CROSS JOIN records AS c ON c.parent_id = subtree.id AND +c.run_id = subtree.run_id AND +c.record_type = 'span'
  WHERE c.id != subtree.seed
  ORDER BY 4 DESC
  LIMIT ?7 + ${MAX_SPAN_DEPTH}
)
${TOMBSTONE}
SELECT project_id, id, ?8 FROM subtree
WHERE NOT EXISTS (SELECT 1 FROM records AS c WHERE c.parent_id = subtree.id AND +c.run_id = subtree.run_id AND c.id != subtree.seed)
LIMIT ?7`;

/** Candidate traces that have no span left. */
const TOMBSTONE_TRACES = `
WITH ${ACTIVE}, ${ROOTS}, ${CANDIDATE_TRACES}
${TOMBSTONE}
SELECT ct.project_id, ct.id, ?8 FROM candidate_traces AS ct
WHERE NOT EXISTS (SELECT 1 FROM records AS s WHERE s.trace_id = ct.id AND s.record_type = 'span' AND +s.run_id = ct.run_id)`;

/** Matching sessions that have no trace or span left. */
const TOMBSTONE_SESSIONS = `
WITH ${ACTIVE}, ${ROOTS}
${TOMBSTONE}
SELECT rs.project_id, rs.id, ?8 FROM root_sessions AS rs
WHERE NOT EXISTS (
  SELECT 1 FROM records AS c
  WHERE c.session_id = rs.id AND c.record_type IN ('trace', 'span') AND +c.run_id = rs.run_id
)`;

/** The records tombstoned by this chunk (stamp ?1) of the organization (?2), as `g`. */
const GOING = `record_tombstones AS gt CROSS JOIN records AS g ON g.project_id = gt.project_id AND g.id = gt.record_id
  WHERE gt.deleted_at = ?1 AND g.organization_id = ?2`;

/**
 * Parents that lose their last child with this chunk: has_children goes back to 0. A parent
 * that goes too, or keeps a child that stays, is left alone. Runs before the DELETE it prepares.
 */
export const REFRESH_PARENTS = `
UPDATE records SET has_children = 0
WHERE rid IN (
    SELECT p.rid FROM ${GOING.replace("WHERE", "CROSS JOIN records AS p ON p.project_id = g.project_id AND p.id = g.parent_id AND +p.run_id = g.run_id WHERE")}
  )
  AND has_children = 1
  AND NOT EXISTS (SELECT 1 FROM record_tombstones AS pt WHERE pt.project_id = records.project_id AND pt.record_id = records.id)
  AND NOT EXISTS (
    SELECT 1 FROM records AS c
    WHERE c.parent_id = records.id AND +c.run_id = records.run_id
      AND NOT EXISTS (SELECT 1 FROM record_tombstones AS ct WHERE ct.project_id = c.project_id AND ct.record_id = c.id AND ct.deleted_at = ?1)
  )`;

/** Deletes the records of one family that this chunk tombstoned: ?1 stamp, ?2 organization, ?3 family. */
export const DELETE_GOING = `DELETE FROM records WHERE rid IN (SELECT g.rid FROM ${GOING} AND g.record_type = ?3)`;

/** Held updates of the ids this chunk erased. */
export const FORGET_HELD_PATCHES = `
DELETE FROM record_patches WHERE rowid IN (
  SELECT p.rowid FROM record_tombstones AS gt
  CROSS JOIN record_patches AS p ON p.record_id = gt.record_id AND p.project_id = gt.project_id
  WHERE gt.deleted_at = ?1 AND p.organization_id = ?2
)`;

/** Counts the previous statement's deletions: ?1 job id, ?2 now (microseconds). */
const countDeleted = (column: "spans_deleted" | "traces_deleted" | "sessions_deleted") =>
  statement(`UPDATE shard_jobs SET ${column} = ${column} + changes(), updated_at = ?2 WHERE job_id = ?1`, "jobId", "now");

/** Every kind of record a deletion matches, as an SQL list. */
const ALL_KINDS = "'session', 'trace', 'span'";

/** ?1 job id, ?2 now. A queued job becomes running with its first chunk, atomically. */
const MARK_RUNNING = statement(`UPDATE shard_jobs SET status = 'running', updated_at = ?2 WHERE job_id = ?1 AND status = 'queued'`, "jobId", "now");

/**
 * Completes an active job when no matching session, trace or span is left: with the chunk that
 * deleted the last one, in the same batch.
 */
const COMPLETE_IF_DONE = statement(
  `UPDATE shard_jobs SET status = 'completed', updated_at = ?2
   WHERE job_id = ?1 AND status IN ('queued', 'running')
     AND NOT EXISTS (SELECT 1 FROM ${MATCHES_IN(ALL_KINDS, ["?3", "?4", "?5"])} AND ${HELD_HERE})`,
  "jobId",
  "now",
  "organizationId",
  "key",
  "value",
);

const JOB_PROGRESS = statement(`SELECT status, sessions_deleted, traces_deleted, spans_deleted FROM shard_jobs WHERE job_id = ?1`, "jobId");

const chunkStatement = (sql: string) => statement(sql, ...CHUNK_PARAMS);

/**
 * The statements of one chunk, in order, as one D1 batch: it commits whole or not at all. The
 * last statement answers the job's status and progress.
 */
export const CHUNK_STATEMENTS: readonly ChunkStatement[] = [
  MARK_RUNNING,
  chunkStatement(TOMBSTONE_SPANS_OF_ROOTS),
  chunkStatement(TOMBSTONE_MATCHED_SPAN_LEAVES),
  statement(REFRESH_PARENTS, "stamp", "organizationId"),
  statement(DELETE_GOING.replace("?3", "'span'"), "stamp", "organizationId"),
  countDeleted("spans_deleted"),
  chunkStatement(TOMBSTONE_TRACES),
  statement(REFRESH_PARENTS, "stamp", "organizationId"),
  statement(DELETE_GOING.replace("?3", "'trace'"), "stamp", "organizationId"),
  countDeleted("traces_deleted"),
  chunkStatement(TOMBSTONE_SESSIONS),
  statement(DELETE_GOING.replace("?3", "'session'"), "stamp", "organizationId"),
  countDeleted("sessions_deleted"),
  statement(FORGET_HELD_PATCHES, "stamp", "organizationId"),
  COMPLETE_IF_DONE,
  JOB_PROGRESS,
];

/** ?1 organization, ?2 key, ?3 value: is there anything to delete at all? */
export const ANY_MATCH = `
SELECT EXISTS (SELECT 1 FROM ${MATCHES_IN(ALL_KINDS)} AND ${HELD_HERE}) AS matched`;

/**
 * Dry-run counting walks the matching sessions, then the matching traces, then the matching
 * spans, a page at a time in index order (keyset on the metadata row's key), so no statement is
 * long. Each record of the deletion set is counted on exactly one page: a trace on its session's
 * page when its session matches, else on its own page; a span on its session's page when its
 * session matches, else on its trace's page when its trace is counted, else on the page of its
 * highest matching ancestor span (itself included).
 *
 * ?1 organization, ?2 key, ?3 value, ?4 ?6 ?7 the last metadata row seen (its family key,
 * created_at and record id; 0, 0, '' to start: family keys start at 1), ?5 page size. Answers the
 * metadata rows examined and the last one's keyset, the roots counted (those of projects this
 * database holds), and the traces and spans counted on the page.
 */
const IN_MATCHING_SESSION = (alias: string) => `EXISTS (
    SELECT 1 FROM records AS ms CROSS JOIN record_metadata AS m ON m.record_rid = ms.rid AND m.key = ?2
    WHERE ms.project_id = ${alias}.project_id AND ms.id = ${alias}.session_id AND +ms.run_id = ${alias}.run_id
      AND ms.record_type = 'session' AND m.value = ?3
  )`;

/** Record `alias` (of the family its caller checked) matches on its own metadata. */
const MATCHING_RECORD = (alias: string) => `EXISTS (
    SELECT 1 FROM record_metadata AS m WHERE m.record_rid = ${alias}.rid AND m.key = ?2 AND m.value = ?3
  )`;

/** The trace of span `s` is counted (it matches, or its session does). */
const IN_COUNTED_TRACE = (s: string) => `EXISTS (
    SELECT 1 FROM records AS st WHERE st.project_id = ${s}.project_id AND st.id = ${s}.trace_id AND +st.run_id = ${s}.run_id
      AND st.record_type = 'trace' AND (${MATCHING_RECORD("st")} OR ${IN_MATCHING_SESSION("st")})
  )`;

// The page's metadata rows (`examined`: the keyset moves over them, in the order of the
// organization's families and, within one, of record_metadata_family_key_value_order: the rest of
// the family the last page ended in, then the families after it) and their records, but those
// of projects this database does not hold (a move's copies: docs/sharding.md, "Moving a
// project"), which their home counts.
const PAGE = (kind: "session" | "trace" | "span") => `
examined AS MATERIALIZED (
  SELECT * FROM (
    SELECT record_rid, family_key, created_at, record_id FROM record_metadata
    WHERE family_key = ?4 AND key = ?2 AND value = ?3 AND (created_at, record_id) > (?6, ?7)
      AND EXISTS (SELECT 1 FROM run_families AS f WHERE f.key = ?4 AND f.organization_id = ?1 AND f.record_type = '${kind}')
    ORDER BY created_at, record_id LIMIT ?5
  )
  UNION ALL
  SELECT * FROM (
    SELECT record_metadata.record_rid, record_metadata.family_key, record_metadata.created_at, record_metadata.record_id
    FROM ${MATCHES_IN(`'${kind}'`)} AND f.key > ?4
    ORDER BY f.key, record_metadata.created_at, record_metadata.record_id LIMIT ?5
  )
  LIMIT ?5
),
last_examined AS (SELECT family_key, created_at, record_id FROM examined ORDER BY family_key DESC, created_at DESC, record_id DESC LIMIT 1),
page AS (
  SELECT r.rid, r.id, r.run_id, r.project_id, r.session_id, r.trace_id, r.parent_id
  FROM examined AS m CROSS JOIN records AS r ON r.rid = m.record_rid
  WHERE NOT EXISTS (SELECT 1 FROM shard_projects AS sp WHERE sp.project_id = r.project_id AND sp.state IN ('importing', 'gone'))
)`;

/** The page's keyset columns: where the next page starts. */
const PAGE_END = `(SELECT family_key FROM last_examined) AS last_family_key,
  (SELECT created_at FROM last_examined) AS last_created_at,
  (SELECT record_id FROM last_examined) AS last_record_id`;

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
  (SELECT count(*) FROM examined) AS examined,
  ${PAGE_END},
  (SELECT count(*) FROM page_traces) AS traces,
  (SELECT count(*) FROM page AS p
    CROSS JOIN records AS s ON s.session_id = p.id AND s.record_type = 'span' AND +s.run_id = p.run_id)
  + ${PAGE_TRACE_SPANS} AS spans`;

export const COUNT_TRACE_PAGE = `
WITH ${PAGE("trace")},
page_traces AS (
  SELECT p.id, p.run_id FROM page AS p WHERE NOT ${IN_MATCHING_SESSION("p")}
)
SELECT
  (SELECT count(*) FROM page) AS roots,
  (SELECT count(*) FROM examined) AS examined,
  ${PAGE_END},
  (SELECT count(*) FROM page_traces) AS traces,
  ${PAGE_TRACE_SPANS} AS spans`;

/**
 * Matching spans not already counted (their trace or session is counted) and with no matching
 * ancestor span (which counts them), each with its whole subtree.
 *
 * Both walks stop at MAX_CHAIN_DEPTH levels, so a loop or an over-deep chain stored before
 * writes refused them cannot hang the database (a chain deeper than that is counted to that
 * depth). On a loop every member is an ancestor of every other: the ancestor walk stops when it
 * is back at its start, the member with the least id among the loop's matching spans counts the
 * loop, and the subtree walk never steps back onto its root, so each member is counted once.
 */
export const COUNT_SPAN_PAGE = `
WITH RECURSIVE ${PAGE("span")},
ancestors(start, start_id, project_id, id, run_id, depth) AS (
  SELECT p.rid, p.id, p.project_id, p.parent_id, p.run_id, 1 FROM page AS p
  UNION ALL
  SELECT a.start, a.start_id, r.project_id, r.parent_id, r.run_id, a.depth + 1 FROM ancestors AS a
  CROSS JOIN records AS r ON r.project_id = a.project_id AND r.id = a.id AND +r.run_id = a.run_id AND +r.record_type = 'span'
  WHERE a.depth < ${MAX_CHAIN_DEPTH} AND a.id != a.start_id
),
counted_roots AS (
  SELECT p.rid, p.id, p.run_id FROM page AS p
  WHERE NOT ${IN_MATCHING_SESSION("p")} AND NOT ${IN_COUNTED_TRACE("p")}
    AND NOT EXISTS (
      SELECT 1 FROM ancestors AS a CROSS JOIN records AS ar ON ar.project_id = a.project_id AND ar.id = a.id AND +ar.run_id = a.run_id
      WHERE a.start = p.rid AND ar.record_type = 'span' AND ar.id != p.id AND ${MATCHING_RECORD("ar")}
        AND (ar.id < p.id OR NOT EXISTS (SELECT 1 FROM ancestors AS own WHERE own.start = p.rid AND own.id = p.id))
    )
),
subtree(root, id, run_id, depth) AS (
  SELECT id, id, run_id, 1 FROM counted_roots
  UNION ALL
  SELECT subtree.root, c.id, c.run_id, subtree.depth + 1 FROM subtree
  CROSS JOIN records AS c ON c.parent_id = subtree.id AND +c.run_id = subtree.run_id AND +c.record_type = 'span'
  WHERE subtree.depth < ${MAX_CHAIN_DEPTH} AND c.id != subtree.root
)
SELECT
  (SELECT count(*) FROM page) AS roots,
  (SELECT count(*) FROM examined) AS examined,
  ${PAGE_END},
  0 AS traces,
  (SELECT count(*) FROM subtree) AS spans`;
