/**
 * Records written only when absent: a trace known so far only through its spans, and a session
 * named by a span attribute (the OpenTelemetry intake, src/otlp: exporters send a trace's root
 * span last, often in another request, and name sessions by a string on their spans).
 *
 * A placeholder makes the run consistent at once (every stored span has its trace, every trace
 * its session) without ever overwriting the record it stands for: when that record is already
 * stored (the full trace, or a session with its own name and metadata), the placeholder changes
 * nothing, and when the full record comes later its ordinary upsert (recordWriteStatements)
 * replaces the placeholder. Retries are harmless either way.
 *
 * Placeholders carry no metadata, tags or metrics (side rows are not written for them): the
 * batch given must have none. An id that already belongs to another run is refused as the
 * ordinary upsert refuses it (the ownership trigger aborts the batch, answered as a conflict).
 */
import type { RecordBatch } from "./record-rows";
import { chunksBySize, insertRecordsSql, parentAndColumnStatements, recordTuple, type WriteScope } from "./write-records";

// The no-op update on a foreign record's owner columns is what lets the ownership trigger refuse
// it; on the run's own record the WHERE makes it do nothing at all.
const INSERT_ABSENT = insertRecordsSql(`ON CONFLICT (id) DO UPDATE SET
  organization_id = excluded.organization_id, project_id = excluded.project_id, run_id = excluded.run_id
WHERE records.organization_id IS NOT excluded.organization_id OR records.project_id IS NOT excluded.project_id
   OR records.run_id IS NOT excluded.run_id`);

/** The statements that write the records of `batch` that are not stored yet, and only those. */
export function placeholderRecordStatements(db: D1Database, batch: RecordBatch, scope: WriteScope): D1PreparedStatement[] {
  if (batch.records.length === 0) return [];
  if (batch.metadata.length + batch.tags.length + batch.metrics.length > 0) {
    throw new Error("placeholder records carry no metadata, tags or metrics");
  }
  return [
    ...chunksBySize(batch.records, recordTuple).map((rows) => db.prepare(INSERT_ABSENT).bind(rows)),
    ...parentAndColumnStatements(db, batch, scope),
  ];
}
