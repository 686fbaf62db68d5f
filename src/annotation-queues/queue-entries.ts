/**
 * A queue's entries on one project's shard (annotation_queue_entries; docs/annotations.md,
 * "Annotation queues"): each lists one record of the project in the queue, with its position in
 * the queue's "as added" order (`seq`, reserved in the catalog). Every list travels as one
 * json_each(?) parameter; every statement is confined to one queue and one project.
 */
import { type SQL, sql } from "drizzle-orm";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import type { RecordFamily } from "../columns/standard-columns";
import { compileFilter } from "../search/compile-filter-tree";
import type { FilterNode } from "../search/search-query";
import { familyKeyOf, from, r } from "../search/search-tables";
import { SqlParamPack } from "../search/sql-param-pack";

/** Records a chunk of a removal or a queue's purge touches (one statement each). */
export const ENTRY_CHUNK = 1000;

/**
 * Records a chunk of an add inserts, at least: one statement then holds the shard a few ms (about
 * 5 ms at 1M records, against 40-60 ms for 1,000: each entry is an insert at a random place of
 * the queue's record-id index), so a search that arrives meanwhile waits that long at most.
 * 100,000 records are then 800 chunks, within an add's D1 budget (ADD_D1_BUDGET).
 */
export const ADD_CHUNK = 125;

/** The most records one statement of an add inserts (when ADD_D1_BUDGET needs bigger chunks). */
export const MAX_ADD_CHUNK = 1000;

/**
 * D1 calls an add may make for its chunks. A request may make 1,000 D1 queries (a batch is one);
 * the rest of the request (the caller's key, the queue, the project, positions) stays within the
 * difference.
 */
export const ADD_D1_BUDGET = 850;

/**
 * Records per chunk of an add of up to `records` records whose chunks take `callsPerChunk` D1 calls
 * each: ADD_CHUNK, or as many more as keep the add within ADD_D1_BUDGET (a queue of several
 * projects checks every chunk's ids on each other project's shard), at most MAX_ADD_CHUNK.
 */
export function addChunkSize(records: number, callsPerChunk: number): number {
  const chunks = Math.floor(ADD_D1_BUDGET / callsPerChunk);
  if (chunks === 0) return MAX_ADD_CHUNK;
  return Math.min(MAX_ADD_CHUNK, Math.max(ADD_CHUNK, Math.ceil(records / chunks)));
}

const dialect = new SQLiteAsyncDialect();

/**
 * Adds the project's records with these ids (of the run, when given) to the queue at positions
 * firstSeq + index; an id already in the queue is skipped. RETURNING the ids added. CROSS JOIN
 * keeps the id list the outer loop, each id one probe of records_project_record_id: left to
 * itself SQLite walked all the project's records and scanned the list for each (a second per
 * chunk at 10,000 records, project size × chunk comparisons).
 */
export function addIdsStatement(db: D1Database, queueId: string, projectId: string, runId: string | null, ids: readonly string[], firstSeq: number, now: number): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO annotation_queue_entries (record_rid, queue_id, seq, project_id, record_id, added_at)
       SELECT r.rid, ?1, ?5 + j.key, r.project_id, r.id, ?6 FROM json_each(?4) AS j
         CROSS JOIN records AS r ON r.project_id = ?2 AND r.id = j.value
       WHERE ?3 IS NULL OR r.run_id = ?3
       ON CONFLICT DO NOTHING
       RETURNING record_id`,
    )
    .bind(queueId, projectId, runId, JSON.stringify(ids), firstSeq, now);
}

/** Which of these ids the queue already lists from this project (served by the unique index). */
export function listedIdsStatement(db: D1Database, queueId: string, projectId: string, ids: readonly string[]): D1PreparedStatement {
  return db
    .prepare(`SELECT record_id FROM annotation_queue_entries WHERE queue_id = ?1 AND record_id IN (SELECT value FROM json_each(?3)) AND project_id = ?2`)
    .bind(queueId, projectId, JSON.stringify(ids));
}

export interface KeysetCursor {
  createdAt: number;
  id: string;
}

/**
 * The next chunk of the run's records of `family` that match `filter`, in native order (created_at
 * then id, descending) after `after`: their ids and the key of the last, for the next chunk.
 */
export function filterChunkStatement(db: D1Database, projectId: string, runId: string, family: RecordFamily, filter: FilterNode, after: KeysetCursor | null, limit: number): D1PreparedStatement {
  const pack = new SqlParamPack();
  return db.prepare(dialect.sqlToQuery(matchesChunk(pack, projectId, runId, family, filter, after, limit)).sql).bind(pack.toParameter());
}

/** The select of filterChunkStatement, with the records' row keys and project: rid, project_id, id, created_at. */
function matchesChunk(pack: SqlParamPack, projectId: string, runId: string, family: RecordFamily, filter: FilterNode, after: KeysetCursor | null, limit: number): SQL {
  const keyset = after
    ? sql` AND (${r.createdAt} < ${pack.value(after.createdAt)} OR (${r.createdAt} = ${pack.value(after.createdAt)} AND ${r.id} < ${pack.value(after.id)}))`
    : sql``;
  return sql`SELECT ${r.rid} AS "rid", ${r.projectId} AS "project_id", ${r.id} AS "id", ${r.createdAt} AS "created_at" FROM ${from(r)} WHERE ${r.familyKey} = ${familyKeyOf(pack.value(runId), pack.value(family))} AND ${r.projectId} = ${pack.value(projectId)}${keyset} AND ${compileFilter(filter, pack)} ORDER BY ${r.createdAt} DESC, ${r.id} DESC LIMIT ${pack.value(limit)}`;
}

/**
 * Adds the next chunk of the run's matches (filterChunkStatement's) to the queue in one statement,
 * at positions firstSeq, firstSeq + 1, ... in native order; a record already in the queue is
 * skipped (its position stays unused). RETURNING the ids added. The window numbers only the
 * chunk's rows (the LIMIT applies inside), so its cost is the chunk's, not the run's.
 */
export function addMatchesStatement(db: D1Database, queueId: string, projectId: string, runId: string, family: RecordFamily, filter: FilterNode, after: KeysetCursor | null, limit: number, firstSeq: number, now: number): D1PreparedStatement {
  const pack = new SqlParamPack();
  const statement = sql`INSERT INTO "annotation_queue_entries" ("record_rid", "queue_id", "seq", "project_id", "record_id", "added_at")
    SELECT "m"."rid", ${pack.value(queueId)}, ${pack.value(firstSeq)} + row_number() OVER (ORDER BY "m"."created_at" DESC, "m"."id" DESC) - 1, "m"."project_id", "m"."id", ${pack.value(now)}
    FROM (${matchesChunk(pack, projectId, runId, family, filter, after, limit)}) AS "m" WHERE true
    ON CONFLICT DO NOTHING RETURNING "record_id"`;
  return db.prepare(dialect.sqlToQuery(statement).sql).bind(pack.toParameter());
}

/**
 * The same chunk's size and last match (the keyset of the next chunk): one row, `matched`,
 * `created_at`, `id`, or none when nothing is left. Read in the batch of addMatchesStatement,
 * before it, so both see the same records.
 */
export function lastMatchStatement(db: D1Database, projectId: string, runId: string, family: RecordFamily, filter: FilterNode, after: KeysetCursor | null, limit: number): D1PreparedStatement {
  const pack = new SqlParamPack();
  const statement = sql`SELECT count(*) OVER () AS "matched", "m"."created_at" AS "created_at", "m"."id" AS "id" FROM (${matchesChunk(pack, projectId, runId, family, filter, after, limit)}) AS "m" ORDER BY "m"."created_at" ASC, "m"."id" ASC LIMIT 1`;
  return db.prepare(dialect.sqlToQuery(statement).sql).bind(pack.toParameter());
}

/** Removes these records of the project from the queue; RETURNING the ids removed. */
export function removeIdsStatement(db: D1Database, queueId: string, projectId: string, ids: readonly string[]): D1PreparedStatement {
  return db
    .prepare(`DELETE FROM annotation_queue_entries WHERE queue_id = ?1 AND project_id = ?2 AND record_id IN (SELECT value FROM json_each(?3)) RETURNING record_id`)
    .bind(queueId, projectId, JSON.stringify(ids));
}

/**
 * Removes up to `limit` of the queue's records of the project that match `filter` (a chunk);
 * RETURNING the ids removed.
 */
export function removeMatchingStatement(db: D1Database, queueId: string, projectId: string, family: RecordFamily, filter: FilterNode, limit: number): D1PreparedStatement {
  const pack = new SqlParamPack();
  const statement = sql`DELETE FROM "annotation_queue_entries" WHERE ("record_rid", "queue_id") IN (SELECT "e"."record_rid", "e"."queue_id" FROM "annotation_queue_entries" AS "e" CROSS JOIN ${from(r)} ON ${r.rid} = "e"."record_rid" WHERE "e"."queue_id" = ${pack.value(queueId)} AND "e"."project_id" = ${pack.value(projectId)} AND ${r.recordType} = ${pack.value(family)} AND ${compileFilter(filter, pack)} LIMIT ${pack.value(limit)}) RETURNING "record_id"`;
  return db.prepare(dialect.sqlToQuery(statement).sql).bind(pack.toParameter());
}

/** The queue's records of the project (of `family` matching `filter`, when given), counted. */
export function countMatchingStatement(db: D1Database, queueId: string, projectId: string, filter: { family: RecordFamily; node: FilterNode } | null): D1PreparedStatement {
  const pack = new SqlParamPack();
  const where = filter ? sql` AND ${r.recordType} = ${pack.value(filter.family)} AND ${compileFilter(filter.node, pack)}` : sql``;
  const join = filter ? sql` CROSS JOIN ${from(r)} ON ${r.rid} = "e"."record_rid"` : sql``;
  const statement = sql`SELECT count(*) AS "n" FROM "annotation_queue_entries" AS "e"${join} WHERE "e"."queue_id" = ${pack.value(queueId)} AND "e"."project_id" = ${pack.value(projectId)}${where}`;
  return db.prepare(dialect.sqlToQuery(statement).sql).bind(pack.toParameter());
}

/** Removes up to `limit` of the queue's entries of the project (deleting a queue, in chunks). */
export function purgeEntriesChunkStatement(db: D1Database, queueId: string, projectId: string, limit: number): D1PreparedStatement {
  return db
    .prepare(
      `DELETE FROM annotation_queue_entries WHERE (record_rid, queue_id) IN (
         SELECT record_rid, queue_id FROM annotation_queue_entries WHERE queue_id = ?1 AND project_id = ?2 LIMIT ?3)`,
    )
    .bind(queueId, projectId, limit);
}

/** Removes up to `limit` ratings made with these (deleted) queue templates on the project's records. */
export function purgeRatingsChunkStatement(db: D1Database, projectId: string, templateIds: readonly string[], limit: number): D1PreparedStatement {
  return db
    .prepare(
      `DELETE FROM annotation_ratings WHERE (record_rid, template_id, annotator_id) IN (
         SELECT record_rid, template_id, annotator_id FROM annotation_ratings
         WHERE template_id IN (SELECT value FROM json_each(?2)) AND project_id = ?1 LIMIT ?3)`,
    )
    .bind(projectId, JSON.stringify(templateIds), limit);
}
