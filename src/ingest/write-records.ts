/**
 * Writes a RecordBatch in one D1 `batch` (atomic: all of it or none of it). Rows travel as JSON
 * arrays in one bound parameter per statement (`json_each(?)`), so a request of thousands of
 * records never comes near D1's 100-parameter limit; parameters are cut at MAX_PARAM_BYTES to
 * stay under D1's 2 MB value limit.
 *
 * Writes are upserts keyed by the client's ids: re-sending a trace updates it in place and
 * replaces its metadata, tags and metrics, so a retried request never duplicates records. The
 * `records_ownership_guard` trigger aborts the batch if an id belongs to another run.
 */
import { RECORD_COLUMNS, type RecordBatch, type RecordRow } from "./record-rows";

const MAX_PARAM_BYTES = 1_000_000;

/** `rows` encoded as JSON arrays of at most MAX_PARAM_BYTES each (one bound parameter per chunk). */
export function chunksBySize<T>(rows: T[], encode: (row: T) => unknown): string[] {
  const chunks: string[] = [];
  let current: string[] = [];
  let size = 2;
  for (const row of rows) {
    const json = JSON.stringify(encode(row));
    if (current.length > 0 && size + json.length + 1 > MAX_PARAM_BYTES) {
      chunks.push(`[${current.join(",")}]`);
      current = [];
      size = 2;
    }
    current.push(json);
    size += json.length + 1;
  }
  if (current.length > 0) chunks.push(`[${current.join(",")}]`);
  return chunks;
}

const column = (i: number) => `record ->> ${i}`;

/** A record as the JSON row `insertRecordsSql` reads: its column values in RECORD_COLUMNS order. */
export const recordTuple = (r: RecordRow) => RECORD_COLUMNS.map((c) => r[c]);

const UPDATABLE = RECORD_COLUMNS.filter((c) => c !== "id");

/**
 * An INSERT of the records given as a JSON array of rows in ?1, with `has_children` computed,
 * ended by `onConflict` (the upsert below; placeholders, src/ingest/placeholder-records.ts).
 *
 * Each record is a JSON array of its ~46 column values. `json_each` renders an element's text
 * anew every time its `value` is read, so extracting the columns straight from it renders each
 * ~1 KB row 46 times; the materialized CTE renders each row once and the extractions read that
 * copy. Measured in workerd on the 1,100 records of one benchmark request: 61 ms -> 19 ms.
 * `+child.run_id`: the run check must not lure the planner onto a run index (a scan of the run
 * per row); the parent index finds the few children, the run is checked on them.
 */
export function insertRecordsSql(onConflict: string): string {
  return `
WITH incoming AS MATERIALIZED (SELECT value AS record FROM json_each(?1))
INSERT INTO records (${RECORD_COLUMNS.join(", ")}, has_children)
SELECT ${RECORD_COLUMNS.map((_, i) => column(i)).join(", ")},
       EXISTS (SELECT 1 FROM records AS child WHERE child.parent_id = record ->> 0 AND +child.run_id = record ->> 3)
FROM incoming WHERE true
${onConflict}`;
}

const UPSERT_RECORDS = insertRecordsSql(`ON CONFLICT (id) DO UPDATE SET ${UPDATABLE.map((c) => `${c} = excluded.${c}`).join(", ")},
  has_children = max(records.has_children, excluded.has_children)`);

const SIDE_TABLES = ["record_metadata", "record_tags", "record_metrics"] as const;

const INSERT_METADATA = `
INSERT INTO record_metadata (record_id, key, value, organization_id, run_id, record_type, created_at)
SELECT value ->> 0, value ->> 1, value ->> 2, ?2, ?3, value ->> 3, value ->> 4 FROM json_each(?1)`;

const INSERT_TAGS = `
INSERT INTO record_tags (record_id, tag, run_id, record_type, created_at)
SELECT value ->> 0, value ->> 1, ?2, value ->> 2, value ->> 3 FROM json_each(?1)`;

const INSERT_METRICS = `
INSERT INTO record_metrics (record_id, name, value, run_id, record_type, created_at)
SELECT value ->> 0, value ->> 1, value ->> 2, ?2, value ->> 3, value ->> 4 FROM json_each(?1)`;

const MARK_PARENTS = `
UPDATE records SET has_children = 1
WHERE id IN (SELECT value FROM json_each(?1)) AND has_children = 0 AND +run_id = ?2`;

const RECORD_PRESENT_COLUMNS = `
INSERT OR IGNORE INTO run_columns (run_id, record_type, column_id)
SELECT ?2, value ->> 0, value ->> 1 FROM json_each(?1)`;

export interface WriteScope {
  organizationId: string;
  runId: string;
}

/** The statements that write a batch, in dependency order (records before their side rows). */
export function recordWriteStatements(db: D1Database, batch: RecordBatch, scope: WriteScope): D1PreparedStatement[] {
  const statements: D1PreparedStatement[] = [];
  for (const chunk of chunksBySize(batch.records, recordTuple)) {
    statements.push(db.prepare(UPSERT_RECORDS).bind(chunk));
  }
  // Replace, not merge, the side rows of re-sent records.
  for (const ids of chunksBySize(batch.records, (r) => r.id)) {
    for (const table of SIDE_TABLES) {
      statements.push(db.prepare(`DELETE FROM ${table} WHERE record_id IN (SELECT value FROM json_each(?1))`).bind(ids));
    }
  }
  for (const chunk of chunksBySize(batch.metadata, (m) => [m.record_id, m.key, m.value, m.record_type, m.created_at])) {
    statements.push(db.prepare(INSERT_METADATA).bind(chunk, scope.organizationId, scope.runId));
  }
  for (const chunk of chunksBySize(batch.tags, (t) => [t.record_id, t.tag, t.record_type, t.created_at])) {
    statements.push(db.prepare(INSERT_TAGS).bind(chunk, scope.runId));
  }
  for (const chunk of chunksBySize(batch.metrics, (m) => [m.record_id, m.name, m.value, m.record_type, m.created_at])) {
    statements.push(db.prepare(INSERT_METRICS).bind(chunk, scope.runId));
  }
  statements.push(...parentAndColumnStatements(db, batch, scope));
  return statements;
}

/** What a batch's records imply beyond themselves: their parents have children, their columns hold values. */
export function parentAndColumnStatements(db: D1Database, batch: RecordBatch, scope: WriteScope): D1PreparedStatement[] {
  const statements: D1PreparedStatement[] = [];
  if (batch.parentIds.length > 0) {
    // A parent is only ever in the child's own run: an id named from another run marks nothing.
    statements.push(db.prepare(MARK_PARENTS).bind(JSON.stringify(batch.parentIds), scope.runId));
  }
  if (batch.presentColumns.length > 0) {
    statements.push(db.prepare(RECORD_PRESENT_COLUMNS).bind(JSON.stringify(batch.presentColumns), scope.runId));
  }
  return statements;
}
