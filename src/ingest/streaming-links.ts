/**
 * Spans that arrive before their trace (streaming ingestion delivers requests in any order).
 *
 * A span is stored as soon as it arrives, with the trace and parent ids it names; what only the
 * trace knows is filled in when both are there, whichever comes second:
 * - `session_id` and `is_complete` of a span are its trace's (a span's `is_complete` means "its
 *   trace is complete"); until the trace arrives, the span has no session and is incomplete.
 * - `has_children` of a parent that arrives after its children is computed when the parent is
 *   written (src/ingest/write-records.ts), and set on a parent already there when a child comes.
 *
 * Every statement is scoped to the run being written: a span never links to a trace of another
 * run (or organization) that happens to carry the id it names. The run test is written
 * `+run_id` so that SQLite never drives these statements through the run's indexes (a scan of
 * the whole run): spans are found through `records_trace`, traces and given ids by primary key.
 */
import type { RecordBatch } from "./record-rows";

/**
 * Before the traces of a batch are written: spans already stored under them take the incoming
 * trace's session and completeness. Runs before the upsert so that spans written by the same
 * batch keep the values they were sent with. Merged like the records themselves: a trace that
 * names no session leaves the spans' session alone, and completeness never goes back.
 */
const LINK_STORED_SPANS = `
UPDATE records SET session_id = coalesce(t.value ->> 1, records.session_id), is_complete = max(records.is_complete, t.value ->> 2)
FROM json_each(?1) AS t
WHERE records.trace_id = t.value ->> 0 AND records.record_type = 'span' AND +records.run_id = ?2
  AND ((t.value ->> 1 IS NOT NULL AND records.session_id IS NOT (t.value ->> 1)) OR records.is_complete < t.value ->> 2)`;

/** The run now has spans with a session (available columns: `session_id` is not empty). */
const SPAN_SESSION_PRESENT_FOR_TRACES = `
INSERT OR IGNORE INTO run_columns (run_id, record_type, column_id)
SELECT ?2, 'span', 'session_id'
WHERE EXISTS (SELECT 1 FROM json_each(?1) AS t JOIN records AS s ON s.trace_id = t.value ->> 0
              WHERE t.value ->> 1 IS NOT NULL AND s.record_type = 'span' AND +s.run_id = ?2)`;

/** Statements to run before a batch's records are written: spans already stored under its traces follow them. */
export function linkStoredSpansStatements(db: D1Database, batch: RecordBatch, scope: { runId: string }): D1PreparedStatement[] {
  const traces = batch.records.filter((r) => r.record_type === "trace").map((r) => [r.id, r.session_id, r.is_complete]);
  if (traces.length === 0) return [];
  const json = JSON.stringify(traces);
  const statements = [db.prepare(LINK_STORED_SPANS).bind(json, scope.runId)];
  if (traces.some(([, sessionId]) => sessionId !== null)) statements.push(db.prepare(SPAN_SESSION_PRESENT_FOR_TRACES).bind(json, scope.runId));
  return statements;
}

/** The trace of a span, in the span's own run. */
const TRACE_OF_SPAN = "t.project_id = records.project_id AND t.id = records.trace_id AND +t.record_type = 'trace' AND +t.run_id = records.run_id";

/** After spans are written: those whose trace is already there take its session and completeness. */
const LINK_TO_STORED_TRACE = `
UPDATE records SET
  session_id = (SELECT t.session_id FROM records AS t WHERE ${TRACE_OF_SPAN}),
  is_complete = (SELECT t.is_complete FROM records AS t WHERE ${TRACE_OF_SPAN})
WHERE project_id = ?3 AND id IN (SELECT value FROM json_each(?1)) AND +run_id = ?2 AND +record_type = 'span'
  AND EXISTS (SELECT 1 FROM records AS t WHERE ${TRACE_OF_SPAN})`;

const SPAN_SESSION_PRESENT_FOR_SPANS = `
INSERT OR IGNORE INTO run_columns (run_id, record_type, column_id)
SELECT ?2, 'span', 'session_id'
WHERE EXISTS (SELECT 1 FROM records WHERE project_id = ?3 AND id IN (SELECT value FROM json_each(?1)) AND +run_id = ?2 AND session_id IS NOT NULL)`;

export function linkToStoredTraceStatements(db: D1Database, spanIds: string[], scope: { projectId: string; runId: string }): D1PreparedStatement[] {
  const json = JSON.stringify(spanIds);
  return [
    db.prepare(LINK_TO_STORED_TRACE).bind(json, scope.runId, scope.projectId),
    db.prepare(SPAN_SESSION_PRESENT_FOR_SPANS).bind(json, scope.runId, scope.projectId),
  ];
}

/** The trace's session, read at the end of a batch for the answer (null while the trace is unknown). */
export function traceSessionQuery(db: D1Database, traceId: string, scope: { projectId: string; runId: string }): D1PreparedStatement {
  return db
    .prepare("SELECT session_id FROM records WHERE project_id = ?3 AND id = ?1 AND run_id = ?2 AND record_type = 'trace'")
    .bind(traceId, scope.runId, scope.projectId);
}
