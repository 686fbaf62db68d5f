/**
 * A trace's start moves back when a write brings an earlier one for a trace first written without
 * its own (a record's `created_at` is otherwise fixed by its first write, src/ingest/write-records.ts).
 *
 * The OpenTelemetry intake (src/otlp) needs it: exporters send a trace's root span last, so the
 * trace is first stored from its children, starting when the earliest of them started, and its
 * root, which started before them, arrives later. To run before the upsert of the full record,
 * whose side rows are then rebuilt with the new start. Scoped to the run being written; found by
 * primary key.
 */
import type { WriteScope } from "./write-records";

/**
 * ?1: JSON [[trace id, created_at], ...]; ?2: the project; ?3: the run. The ids drive the update
 * (an `UPDATE ... FROM json_each` would walk every record of the project for each of them).
 */
const NEW_START = "(SELECT min(t.value ->> 1) FROM json_each(?1) AS t WHERE t.value ->> 0 = records.id)";
const MOVE_START_EARLIER = `
UPDATE records SET created_at = ${NEW_START}
WHERE project_id = ?2 AND id IN (SELECT value ->> 0 FROM json_each(?1)) AND +run_id = ?3 AND +record_type = 'trace'
  AND created_at > ${NEW_START}`;

export function earlierTraceStartStatements(db: D1Database, traces: { id: string; createdAt: number }[], scope: WriteScope): D1PreparedStatement[] {
  if (traces.length === 0) return [];
  return [db.prepare(MOVE_START_EARLIER).bind(JSON.stringify(traces.map((t) => [t.id, t.createdAt])), scope.projectId, scope.runId)];
}
