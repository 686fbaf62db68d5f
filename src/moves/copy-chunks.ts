/**
 * The chunks a move copies (docs/sharding.md, "Moving a project"): reads on the source, one
 * atomic batch of writes on the target, every list bound as one json_each(?) parameter.
 *
 * Records go through the ingest write path (recordWriteStatements): the target rebuilds their
 * metadata, tag and metric rows from the record's stored JSON, as every write does, so this file
 * never names a side-table column. A copied record first replaces the target's copy of the same
 * id (delete, then write), so a record copied twice, or changed on the source after its first
 * copy, ends exactly as the source has it (the merging upsert alone could not drop a tag or a
 * metadata key). `has_children` is set to the source's value: the write path derives it from the
 * children present, which a copy in id order has not all written yet.
 *
 * The other tables (runs, held updates, tombstones, run columns) are copied row by row with the
 * columns src/db/schema.ts declares, so a column added there is copied with no change here.
 */
import { getTableColumns } from "drizzle-orm";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import { annotationTemplates, recordPatches, recordTombstones, runColumns, runs } from "../db/schema";
import { RECORD_COLUMNS, type RecordBatch, type RecordRow } from "../ingest/record-rows";
import { jsonArraysBySize, recordWriteStatements } from "../ingest/write-records";

export interface MoveScope {
  projectId: string;
  organizationId: string;
}

const columnsOf = (table: SQLiteTable) => Object.values(getTableColumns(table)).map((column) => column.name);

const RUN_COLUMNS = columnsOf(runs);
const PATCH_COLUMNS = columnsOf(recordPatches);
const TOMBSTONE_COLUMNS = columnsOf(recordTombstones);
const RUN_COLUMN_COLUMNS = columnsOf(runColumns);
const TEMPLATE_COLUMNS = columnsOf(annotationTemplates);

/**
 * Annotations (docs/annotations.md, "Moves"): a record's ratings travel with it, keyed on the
 * target by the target's row key of the record (found by the project and the record's id), so
 * that the copy's delete-then-write replaces them exactly; templates are copied row by row, all
 * of the project's at the start of the copy and again whenever the change log names one
 * (`annotation_template:<id>`, logged by the annotation_templates_changes_* triggers).
 */
export const TEMPLATE_CHANGE_PREFIX = "annotation_template:";
const READ_RATINGS = `
SELECT json_array(a.template_id, a.annotator_id, r.id, a.value, a.num_value, a.explanation, a.created_at, a.updated_at) AS row
FROM records AS r JOIN annotation_ratings AS a ON a.record_rid = r.rid WHERE r.project_id = ?1 AND r.id IN (SELECT value FROM json_each(?2))`;
const INSERT_RATINGS = `
INSERT OR REPLACE INTO annotation_ratings (record_rid, template_id, annotator_id, project_id, record_id, family_key, record_created_at, value, num_value, explanation, created_at, updated_at)
SELECT r.rid, j.value ->> 0, j.value ->> 1, r.project_id, r.id, r.family_key, r.created_at, j.value ->> 3, j.value ->> 4, j.value ->> 5, j.value ->> 6, j.value ->> 7
FROM json_each(?1) AS j JOIN records AS r ON r.project_id = ?2 AND r.id = j.value ->> 2`;
/**
 * Annotation queue entries (docs/annotations.md, "Annotation queues") travel the same way: read
 * with their record by its id, written after it keyed by the target's row key, with the same
 * position (`seq`) in their queue; the entries triggers log a change while the source exports.
 */
const READ_ENTRIES = `
SELECT json_array(e.queue_id, e.seq, r.id, e.added_at) AS row
FROM records AS r JOIN annotation_queue_entries AS e ON e.record_rid = r.rid WHERE r.project_id = ?1 AND r.id IN (SELECT value FROM json_each(?2))`;
const INSERT_ENTRIES = `
INSERT OR REPLACE INTO annotation_queue_entries (record_rid, queue_id, seq, project_id, record_id, added_at)
SELECT r.rid, j.value ->> 0, j.value ->> 1, r.project_id, r.id, j.value ->> 3
FROM json_each(?1) AS j JOIN records AS r ON r.project_id = ?2 AND r.id = j.value ->> 2`;
const DELETE_TEMPLATES = `DELETE FROM annotation_templates WHERE project_id = ?1 AND id IN (SELECT value FROM json_each(?2))`;

const jsonRow = (columns: readonly string[], alias = "") => `json_array(${columns.map((c) => `${alias}${c}`).join(", ")})`;
const fromJson = (columns: readonly string[]) => columns.map((_, i) => `value ->> ${i}`).join(", ");
const insertFromJson = (table: string, columns: readonly string[], conflict: "OR IGNORE" | "OR REPLACE") =>
  `INSERT ${conflict} INTO ${table} (${columns.join(", ")}) SELECT ${fromJson(columns)} FROM json_each(?1)`;

const RECORD_JSON = jsonRow(RECORD_COLUMNS, "r.");
const IDS = "(SELECT value FROM json_each(?2))";

/** The record's size as the copy reads it (its JSON row, in bytes). */
export const RECORD_BYTES = `length(CAST(${RECORD_JSON} AS BLOB))`;

// Reads on the source: ?1 project, ?2 the ids (JSON array).
const READ_RECORDS = `SELECT r.id, r.has_children, ${RECORD_JSON} AS row FROM records AS r WHERE r.project_id = ?1 AND r.id IN ${IDS}`;
const READ_RUNS = `
SELECT ${jsonRow(RUN_COLUMNS)} AS row FROM runs WHERE project_id = ?1 AND id IN (
  SELECT run_id FROM records WHERE project_id = ?1 AND id IN ${IDS}
  UNION SELECT run_id FROM record_patches WHERE project_id = ?1 AND record_id IN ${IDS})`;
const READ_PATCHES = `SELECT ${jsonRow(PATCH_COLUMNS)} AS row FROM record_patches WHERE project_id = ?1 AND record_id IN ${IDS}`;
const READ_TOMBSTONES = `SELECT ${jsonRow(TOMBSTONE_COLUMNS)} AS row FROM record_tombstones WHERE project_id = ?1 AND record_id IN ${IDS}`;

// Writes on the target.
const INSERT_RUNS = insertFromJson("runs", RUN_COLUMNS, "OR IGNORE");
const INSERT_PATCHES = insertFromJson("record_patches", PATCH_COLUMNS, "OR REPLACE");
const INSERT_TOMBSTONES = insertFromJson("record_tombstones", TOMBSTONE_COLUMNS, "OR REPLACE");
const INSERT_RUN_COLUMNS = insertFromJson("run_columns", RUN_COLUMN_COLUMNS, "OR IGNORE");
const INSERT_TEMPLATES = insertFromJson("annotation_templates", TEMPLATE_COLUMNS, "OR REPLACE");
const READ_TEMPLATES = `SELECT ${jsonRow(TEMPLATE_COLUMNS)} AS row FROM annotation_templates WHERE project_id = ?1 AND id IN (SELECT value FROM json_each(?2))`;
const READ_ALL_TEMPLATES = `SELECT ${jsonRow(TEMPLATE_COLUMNS)} AS row FROM annotation_templates WHERE project_id = ?1`;
const DELETE_RECORDS = `DELETE FROM records WHERE project_id = ?1 AND id IN ${IDS}`;
const DELETE_PATCHES = `DELETE FROM record_patches WHERE project_id = ?1 AND record_id IN ${IDS}`;
const DELETE_TOMBSTONES = `DELETE FROM record_tombstones WHERE project_id = ?1 AND record_id IN ${IDS}`;
const SET_HAS_CHILDREN = (value: 0 | 1) =>
  `UPDATE records SET has_children = ${value} WHERE project_id = ?1 AND id IN ${IDS} AND has_children <> ${value}`;

interface SourceRecord {
  id: string;
  has_children: number;
  row: string;
}

/** A stored row (the JSON array of RECORD_COLUMNS) as the write path's batch. */
function batchOf(records: readonly SourceRecord[]): RecordBatch {
  return {
    records: records.map((record) => {
      const values = JSON.parse(record.row) as unknown[];
      return Object.fromEntries(RECORD_COLUMNS.map((column, i) => [column, values[i] ?? null])) as unknown as RecordRow;
    }),
    encoded: records.map((record) => record.row),
    parentIds: [],
    presentColumns: [],
  };
}

const rowsJson = (rows: readonly { row: string }[]) => `[${rows.map((r) => r.row).join(",")}]`;

export interface CopyOutcome {
  /** Records written on the target. */
  records: number;
}

/**
 * Copies the project's records with these ids (and the runs they belong to) from the source to
 * the target; with `everything`, also their held updates and tombstones, and an id the source no
 * longer has is removed from the target (replaying the change log). Two round trips: one read
 * batch on the source, one write batch on the target.
 */
export async function copyIds(source: D1Database, target: D1Database, scope: MoveScope, ids: readonly string[], everything: boolean): Promise<CopyOutcome> {
  if (ids.length === 0) return { records: 0 };
  const templateIds = ids.filter((id) => id.startsWith(TEMPLATE_CHANGE_PREFIX)).map((id) => id.slice(TEMPLATE_CHANGE_PREFIX.length));
  const list = JSON.stringify(ids);
  const reads = [READ_RECORDS, READ_RUNS, READ_RATINGS, READ_ENTRIES, ...(everything ? [READ_PATCHES, READ_TOMBSTONES] : [])].map((sql) => source.prepare(sql).bind(scope.projectId, list));
  if (templateIds.length > 0) reads.push(source.prepare(READ_TEMPLATES).bind(scope.projectId, JSON.stringify(templateIds)));
  const [records, runRows, ratings, entries, patches, tombstones, templates] = everything
    ? await source.batch(reads)
    : await source.batch(reads).then(([a, b, c, d, ...rest]) => [a, b, c, d, undefined, undefined, ...rest]);
  const found = records!.results as unknown as SourceRecord[];
  const statements: D1PreparedStatement[] = [];
  const bind = (sql: string, ...params: unknown[]) => statements.push(target.prepare(sql).bind(...params));
  if (runRows!.results.length > 0) bind(INSERT_RUNS, rowsJson(runRows!.results as unknown as { row: string }[]));
  if (everything) bind(DELETE_TOMBSTONES, scope.projectId, list);
  bind(DELETE_RECORDS, scope.projectId, list);
  statements.push(...recordWriteStatements(target, batchOf(found), { ...scope, runId: "" }, { copy: true }));
  // The records' ratings and queue entries, after the records (the delete above took the target's old ones).
  for (const chunk of jsonArraysBySize(ratings!.results.map((r) => (r as { row: string }).row))) bind(INSERT_RATINGS, chunk, scope.projectId);
  for (const chunk of jsonArraysBySize(entries!.results.map((r) => (r as { row: string }).row))) bind(INSERT_ENTRIES, chunk, scope.projectId);
  if (templateIds.length > 0) {
    // A template changed or deleted on the source since the copy: the target ends as the source has it.
    bind(DELETE_TEMPLATES, scope.projectId, JSON.stringify(templateIds));
    if (templates!.results.length > 0) bind(INSERT_TEMPLATES, rowsJson(templates!.results as unknown as { row: string }[]));
  }
  const withChildren = found.filter((r) => r.has_children === 1).map((r) => r.id);
  const withoutChildren = found.filter((r) => r.has_children !== 1).map((r) => r.id);
  for (const [value, group] of [[1, withChildren], [0, withoutChildren]] as const) {
    for (const chunk of jsonArraysBySize(group.map((id) => JSON.stringify(id)))) bind(SET_HAS_CHILDREN(value), scope.projectId, chunk);
  }
  if (everything) {
    bind(DELETE_PATCHES, scope.projectId, list);
    for (const chunk of jsonArraysBySize(patches!.results.map((r) => (r as { row: string }).row))) bind(INSERT_PATCHES, chunk);
    if (tombstones!.results.length > 0) bind(INSERT_TOMBSTONES, rowsJson(tombstones!.results as unknown as { row: string }[]));
  }
  await target.batch(statements);
  return { records: found.length };
}

export interface KeysetPage<K> {
  keys: K[];
  /** The last key of the page: where the next page starts. */
  last: K | undefined;
}

/**
 * The next ids of the project's records after `after`, in id order, at most `limit` of them and
 * about `maxBytes` of record JSON (always at least one). Served by records_project_record_id.
 */
export async function nextRecordIds(source: D1Database, projectId: string, after: string, limit: number, maxBytes: number): Promise<KeysetPage<string>> {
  const { results } = await source
    .prepare(`SELECT r.id, ${RECORD_BYTES} AS bytes FROM records AS r WHERE r.project_id = ?1 AND r.id > ?2 ORDER BY r.id LIMIT ?3`)
    .bind(projectId, after, limit)
    .all<{ id: string; bytes: number }>();
  return cutByBytes(results, maxBytes, (r) => r.id);
}

export function cutByBytes<T extends { bytes: number }, K>(rows: readonly T[], maxBytes: number, key: (row: T) => K): KeysetPage<K> {
  const keys: K[] = [];
  let bytes = 0;
  for (const row of rows) {
    if (keys.length > 0 && bytes + row.bytes > maxBytes) break;
    keys.push(key(row));
    bytes += row.bytes;
  }
  return { keys, last: keys[keys.length - 1] };
}

/** Copies every annotation template of the project (a project has few; deleted ones too, still purging). */
export async function copyTemplates(source: D1Database, target: D1Database, projectId: string): Promise<void> {
  const { results } = await source.prepare(READ_ALL_TEMPLATES).bind(projectId).all<{ row: string }>();
  for (const chunk of jsonArraysBySize(results.map((r) => r.row))) await target.prepare(INSERT_TEMPLATES).bind(chunk).run();
}

/**
 * The project's declared analytics metadata key, as the catalog holds it (the source of truth,
 * src/analytics/analytics-settings-routes.ts), written to the target's copy that its cell
 * refresh reads. Run when the copy starts and again once the catalog has switched, so a key
 * changed during the move arrives too. A copy that lags only costs speed: cells computed for
 * another key are scanned, never wrong.
 */
export async function copyAnalyticsKey(catalog: D1Database, target: D1Database, projectId: string): Promise<void> {
  const row = await catalog.prepare("SELECT metadata_key FROM project_analytics_settings WHERE project_id = ?1").bind(projectId).first<{ metadata_key: string | null }>();
  const write = row
    ? target.prepare("INSERT INTO metric_settings (project_id, metadata_key) VALUES (?1, ?2) ON CONFLICT (project_id) DO UPDATE SET metadata_key = excluded.metadata_key").bind(projectId, row.metadata_key)
    : target.prepare("DELETE FROM metric_settings WHERE project_id = ?1").bind(projectId);
  await write.run();
}

/** Copies the project's next runs (id order) after `after`; answers the last id copied. */
export async function copyRunsPage(source: D1Database, target: D1Database, projectId: string, after: string, limit: number): Promise<string | undefined> {
  const { results } = await source
    .prepare(`SELECT id, ${jsonRow(RUN_COLUMNS)} AS row FROM runs WHERE project_id = ?1 AND id > ?2 ORDER BY id LIMIT ?3`)
    .bind(projectId, after, limit)
    .all<{ id: string; row: string }>();
  if (results.length === 0) return undefined;
  await target.prepare(INSERT_RUNS).bind(rowsJson(results)).run();
  return results[results.length - 1]!.id;
}

/** Copies the run columns of the project's next runs after `after`; answers the last run id done. */
export async function copyRunColumnsPage(source: D1Database, target: D1Database, projectId: string, after: string, runsPerPage: number): Promise<string | undefined> {
  const [page, columns] = await source.batch<{ id?: string; row?: string }>([
    source.prepare("SELECT id FROM runs WHERE project_id = ?1 AND id > ?2 ORDER BY id LIMIT ?3").bind(projectId, after, runsPerPage),
    source
      .prepare(
        `SELECT ${jsonRow(RUN_COLUMN_COLUMNS)} AS row FROM run_columns WHERE run_id IN (SELECT id FROM runs WHERE project_id = ?1 AND id > ?2 ORDER BY id LIMIT ?3)`,
      )
      .bind(projectId, after, runsPerPage),
  ]);
  const ids = page!.results.map((r) => r.id!);
  if (ids.length === 0) return undefined;
  const rows = columns!.results.map((r) => ({ row: r.row! }));
  for (const chunk of jsonArraysBySize(rows.map((r) => r.row))) await target.prepare(INSERT_RUN_COLUMNS).bind(chunk).run();
  return ids[ids.length - 1];
}

/** Copies the project's next held updates (keyset on their primary key); answers the last key. */
export async function copyPatchesPage(source: D1Database, target: D1Database, projectId: string, after: [string, string], limit: number): Promise<[string, string] | undefined> {
  const { results } = await source
    .prepare(
      `SELECT record_id, run_id, ${jsonRow(PATCH_COLUMNS)} AS row FROM record_patches
       WHERE project_id = ?1 AND (record_id, run_id) > (?2, ?3) ORDER BY record_id, run_id LIMIT ?4`,
    )
    .bind(projectId, after[0], after[1], limit)
    .all<{ record_id: string; run_id: string; row: string }>();
  if (results.length === 0) return undefined;
  await target.batch(jsonArraysBySize(results.map((r) => r.row)).map((chunk) => target.prepare(INSERT_PATCHES).bind(chunk)));
  const last = results[results.length - 1]!;
  return [last.record_id, last.run_id];
}

/** Copies the project's next tombstones (keyset on the record id); answers the last id. */
export async function copyTombstonesPage(source: D1Database, target: D1Database, projectId: string, after: string, limit: number): Promise<string | undefined> {
  const { results } = await source
    .prepare(`SELECT record_id, ${jsonRow(TOMBSTONE_COLUMNS)} AS row FROM record_tombstones WHERE project_id = ?1 AND record_id > ?2 ORDER BY record_id LIMIT ?3`)
    .bind(projectId, after, limit)
    .all<{ record_id: string; row: string }>();
  if (results.length === 0) return undefined;
  await target.prepare(INSERT_TOMBSTONES).bind(rowsJson(results)).run();
  return results[results.length - 1]!.record_id;
}
