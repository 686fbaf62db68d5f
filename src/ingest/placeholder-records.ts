/**
 * Records written only when absent: a trace known so far only through its spans, and a session
 * named by a span attribute (the OpenTelemetry intake, src/otlp: exporters send a trace's root
 * span last, often in another request, and name sessions by a string on their spans).
 *
 * A placeholder makes the run consistent at once (every stored span has its trace, every trace
 * its session) without ever overwriting the record it stands for: when that record is already
 * stored (the full trace, or a session with its own name and metadata), the placeholder changes
 * nothing, and when the full record comes later its ordinary upsert (recordWriteStatements)
 * merges into the placeholder. Retries are harmless either way, and a placeholder of an erased
 * record is not written (tombstones, as for every write).
 *
 * Placeholders carry no metadata, tags or metrics (their side rows are not built): the batch
 * given must have none. An id that already belongs to another run or family of the project is
 * refused as the ordinary upsert refuses it (the ownership trigger aborts the batch).
 */
import type { RecordBatch } from "./record-rows";
import { insertRecordsSql, jsonArraysBySize, parentAndColumnStatements, type WriteScope } from "./write-records";

// The no-op update of a record of another run or family is what lets the ownership trigger
// refuse it; on the run's own record of the same family the WHERE makes it do nothing at all.
const INSERT_ABSENT = insertRecordsSql(`ON CONFLICT (project_id, id) DO UPDATE SET
  organization_id = excluded.organization_id, run_id = excluded.run_id, record_type = excluded.record_type
WHERE records.organization_id IS NOT excluded.organization_id OR records.run_id IS NOT excluded.run_id
   OR records.record_type IS NOT excluded.record_type`);

/** The statements that write the records of `batch` that are not stored yet, and only those. */
export function placeholderRecordStatements(db: D1Database, batch: RecordBatch, scope: WriteScope): D1PreparedStatement[] {
  if (batch.records.length === 0) return [];
  if (batch.records.some((r) => r.user_metadata !== "{}" || r.tags !== "[]" || r.metrics !== "{}")) {
    throw new Error("placeholder records carry no metadata, tags or metrics");
  }
  return [...jsonArraysBySize(batch.encoded).map((rows) => db.prepare(INSERT_ABSENT).bind(rows)), ...parentAndColumnStatements(db, batch, scope)];
}

/**
 * A trace's start moves back when its full record arrives with an earlier one: the placeholder
 * took the start of the spans that made it, and a trace's root starts before them (a record's
 * `created_at` is otherwise fixed by its first write). To run before the full record's upsert,
 * whose side rows are then rebuilt with the new start. ?1: JSON [[trace id, created_at], ...].
 */
const MOVE_START_EARLIER = `
UPDATE records SET created_at = t.value ->> 1
FROM json_each(?1) AS t
WHERE records.project_id = ?2 AND records.id = t.value ->> 0 AND +records.run_id = ?3 AND +records.record_type = 'trace'
  AND records.created_at > t.value ->> 1`;

export function earlierStartStatements(db: D1Database, traces: { id: string; createdAt: number }[], scope: WriteScope): D1PreparedStatement[] {
  if (traces.length === 0) return [];
  return [db.prepare(MOVE_START_EARLIER).bind(JSON.stringify(traces.map((t) => [t.id, t.createdAt])), scope.projectId, scope.runId)];
}
