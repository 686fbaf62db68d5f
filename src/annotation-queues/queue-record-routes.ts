/**
 * A queue's records (contract section 8, "Queues"): adding them by ids or by a filter tree,
 * removing, counting, the queue's partial_search, one record, rating inside the queue, and the
 * queue's details. Entries live on each record's shard (docs/annotations.md, "Annotation
 * queues"); the queue's projects (catalog) say which shards to reach.
 *
 * Adding is bounded work per statement, done in the request, and paced: a chunk is ADD_CHUNK
 * (125) records, one D1 call (the insert of the next chunk of matches, in native order after the
 * last one, and that chunk's last key, in one batch), so a statement holds the shard a few ms and
 * a search on the same shard waits at most that long; after each chunk the add pauses as long
 * as the chunk took (addPause), so it holds the shard at most about half the time. 100,000
 * records are 800 calls, within the request's 1,000 D1 queries (ADD_D1_BUDGET; a queue of
 * several projects checks ids on each other project's shard, and its chunks grow to stay within
 * it: addChunkSize), in about 10-15 s (docs/annotations.md, "Adding, removing, counting"). Doing it
 * in the request (rather than as a queued job) answers Galileo's clients the exact
 * `num_records_added` they expect, and a retried request adds only what the first one did not,
 * each record once, in order (an entry already there is skipped).
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { microsToIso, nowMicros } from "../db/client";
import { pauseFor, yieldToEventLoop } from "../db/yield-to-event-loop";
import type { AppEnv } from "../http/app-env";
import { commonErrorResponses, ErrorDetail, Uuid } from "../http/common-schemas";
import type { Router } from "../http/create-router";
import { RequestValidationError, notFound } from "../http/errors";
import { onProjectShard, ProjectNotOnShardError } from "../shards/project-shard";
import { projectStateStatement, readableHere } from "../shards/shard-membership";
import { onProjectReadShards, spansShards } from "../partitions/read-shards";
import { readOnEveryShard, writeOnEveryShard, writeOnShard, writeWhereRecordsLive } from "../annotations/annotation-shard";
import { checkRating, isFault, MAX_TEXT_RATING } from "../annotations/rating-values";
import type { RecordFamily } from "../columns/standard-columns";
import { ANNOTATION_TYPES } from "../db/schema";
import { bindAnnotationColumns } from "../search/bind-annotation-columns";
import { normalizeFilters, normalizeSearchRequest } from "../search/normalize-search-request";
import type { FilterNode, SearchQuery } from "../search/search-query";
import { PartialSearchRequestSchema, SearchResponseSchema } from "../search/search-schemas";
import { addChunkSize, addIdsStatement, addMatchesStatement, countMatchingStatement, ENTRY_CHUNK, filterChunkStatement, type KeysetCursor, lastMatchStatement, listedIdsStatement, removeIdsStatement, removeMatchingStatement } from "./queue-entries";
import { queueDetails, type QueueScope } from "./queue-progress";
import { queueScope } from "./queue-routes";
import { AddRecordsRequest, CountRecordsRequest, QueueIdParam, QueueRecordPath, QUEUE_LIMITS, RemoveRecordsRequest } from "./queue-schemas";
import { queuePage } from "./queue-search";
import { definitionOfQueueTemplate, queueFor, queueProjects, queueTemplateStatement, type QueueTemplateRow, reserveSeq } from "./queue-store";

const TAGS = ["Annotation queues"];
const json = <T extends z.ZodType>(schema: T, description: string) => ({ content: { "application/json": { schema } }, description });
const body = <T extends z.ZodType>(schema: T) => ({ body: { content: { "application/json": { schema } }, required: true } });
const forbidden = { 403: json(ErrorDetail, "The caller's role in the queue does not allow this") };

const Rating = z.object({ annotation_type: z.enum(ANNOTATION_TYPES), value: z.unknown() });
const RatingCreate = z.object({ rating: Rating, explanation: z.string().max(MAX_TEXT_RATING).nullable().optional() }).openapi("AnnotationQueueRatingCreate");
const RatingDB = z.object({ rating: Rating, explanation: z.string().nullable(), created_at: z.string(), created_by: z.string() });
const RatingQuery = z.object({ annotation_template_id: Uuid.openapi({ param: { name: "annotation_template_id", in: "query" } }) });

const routes = {
  add: createRoute({
    method: "post",
    path: "/annotation_queues/{queue_id}/records",
    tags: TAGS,
    summary: "Add records of a run to the queue, by ids or by a filter tree",
    description: `At most ${QUEUE_LIMITS.maxRecordsPerAdd} records: a filter adds its first ${QUEUE_LIMITS.maxRecordsPerAdd} matches in native order. A record already in the queue is skipped.`,
    request: { params: QueueIdParam, ...body(AddRecordsRequest) },
    responses: { 200: json(z.object({ num_records_added: z.number().int() }), "How many were added"), ...forbidden, ...commonErrorResponses },
  }),
  remove: createRoute({
    method: "post",
    path: "/annotation_queues/{queue_id}/records/remove",
    tags: TAGS,
    summary: "Remove records from the queue, by ids or by a filter tree",
    request: { params: QueueIdParam, ...body(RemoveRecordsRequest) },
    responses: { 200: json(z.object({ num_records_removed: z.number().int() }), "How many were removed"), ...forbidden, ...commonErrorResponses },
  }),
  count: createRoute({
    method: "post",
    path: "/annotation_queues/{queue_id}/records/count",
    tags: TAGS,
    summary: "Count the queue's records (matching a filter tree, if given)",
    request: { params: QueueIdParam, ...body(CountRecordsRequest) },
    responses: { 200: json(z.object({ count: z.number().int() }), "How many"), ...forbidden, ...commonErrorResponses },
  }),
  search: createRoute({
    method: "post",
    path: "/annotation_queues/{queue_id}/partial_search",
    tags: TAGS,
    summary: "Search the queue's records, in the order they were added",
    description: "The search body (filters, select_columns, pagination); the order is always as added (`sort` is ignored). Feedback fields are always returned, scoped to the queue's templates and annotators.",
    request: { params: QueueIdParam, ...body(PartialSearchRequestSchema) },
    responses: { 200: json(SearchResponseSchema, "One page of the queue's records"), ...forbidden, ...commonErrorResponses },
  }),
  record: createRoute({
    method: "get",
    path: "/annotation_queues/{queue_id}/records/{record_id}",
    tags: TAGS,
    summary: "One record of the queue, with the queue's feedback fields",
    request: { params: QueueRecordPath },
    responses: { 200: json(z.record(z.string(), z.unknown()), "The record"), ...forbidden, ...commonErrorResponses },
  }),
  rate: createRoute({
    method: "put",
    path: "/annotation_queues/{queue_id}/records/{record_id}/rating",
    tags: TAGS,
    summary: "Rate a record of the queue with one of the queue's templates",
    description: "Queue users with role owner, editor or annotator; viewers and others get a 403.",
    request: { params: QueueRecordPath, query: RatingQuery, ...body(RatingCreate) },
    responses: { 200: json(RatingDB, "The caller's rating"), ...forbidden, ...commonErrorResponses },
  }),
  unrate: createRoute({
    method: "delete",
    path: "/annotation_queues/{queue_id}/records/{record_id}/rating",
    tags: TAGS,
    summary: "Remove the caller's rating of a record of the queue",
    request: { params: QueueRecordPath, query: RatingQuery },
    responses: { 200: json(z.object({ message: z.string() }), "Removed"), ...forbidden, ...commonErrorResponses },
  }),
  details: createRoute({
    method: "get",
    path: "/annotation_queues/{queue_id}/details",
    tags: TAGS,
    summary: "The queue's fully annotated records, aggregates (overall and per annotator) and agreement",
    request: { params: QueueIdParam },
    responses: { 200: json(z.record(z.string(), z.unknown()), "Details"), ...forbidden, ...commonErrorResponses },
  }),
};

const idsOf = (result: D1Result | undefined) => ((result?.results ?? []) as { record_id: string }[]).map((row) => row.record_id);

/** A record selector's filter tree, checked like a search's (422 at the tree). */
/**
 * The filter of a queue's records/count or records/remove by filter, for one of the queue's
 * projects: its own copy (binding fills the leaves, and the projects are read side by side), its
 * annotation columns bound on the project's shard and its feedback leaves scoped to the queue, as
 * the queue's partial_search reads them (contract section 8): `fully_annotated` is every queue
 * template rated by each of the queue's annotators, whichever project the record is in.
 */
async function boundForQueue(c: Context<AppEnv>, projectId: string, filter: FilterNode, scope: QueueScope): Promise<FilterNode> {
  const query = { filter: structuredClone(filter), sort: null } as unknown as SearchQuery;
  await onProjectShard(c, projectId, "read", ({ db }) => bindAnnotationColumns(db, projectId, query, { templates: scope.templates, annotators: scope.annotators }));
  return query.filter;
}

function selectorFilter(filterTree: unknown, family: RecordFamily): FilterNode {
  return normalizeFilters({ filter_tree: filterTree, filters: null } as never, family);
}

/** Which of these ids the queue already lists from its other projects (a record id is listed once). */
async function listedElsewhere(c: Context<AppEnv>, queueId: string, others: readonly string[], ids: readonly string[]): Promise<Set<string>> {
  const found = await Promise.all(others.map((projectId) => readOnEveryShard(c, projectId, (db) => [listedIdsStatement(db, queueId, projectId, ids)])));
  return new Set(found.flat().flatMap(([result]) => idsOf(result)));
}

/**
 * Adds these ids (in this order) of the project's run at positions firstSeq, firstSeq + 1, ...
 * (reserved by the caller); answers how many were added.
 */
async function addIds(c: Context<AppEnv>, queueId: string, projectId: string, runId: string, others: readonly string[], ids: readonly string[], firstSeq: number): Promise<number> {
  const skip = others.length > 0 ? await listedElsewhere(c, queueId, others, ids) : new Set<string>();
  const fresh = ids.filter((id) => !skip.has(id));
  if (fresh.length === 0) return 0;
  // Each shard holding a partition inserts the ids of the records it holds (docs/partitions.md, "Annotations").
  const answers = await writeOnEveryShard(c, projectId, (db) => [addIdsStatement(db, queueId, projectId, runId, fresh, firstSeq, nowMicros())]);
  return answers.reduce((sum, [added]) => sum + idsOf(added).length, 0);
}

/** Reads the next chunk of the run's matches, in native order after `after`. */
async function matchesChunk(c: Context<AppEnv>, projectId: string, runId: string, family: RecordFamily, filter: FilterNode, after: KeysetCursor | null, limit: number) {
  // Every shard holding a partition answers its first `limit` after the cursor: merged in the same
  // native order (created_at, then id, descending), the first `limit` are the project's.
  const answers = await readOnEveryShard(c, projectId, (db) => [filterChunkStatement(db, projectId, runId, family, filter, after, limit)]);
  const rows = answers.flatMap(([found]) => (found?.results ?? []) as { id: string; created_at: number }[]);
  if (answers.length > 1) rows.sort((a, b) => b.created_at - a.created_at || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
  return rows.slice(0, limit);
}

/**
 * Adds the next chunk of the run's matches after `after` at positions from firstSeq, in one
 * write batch on the shard; answers how many it matched and added, and its last key.
 */
async function addMatchesChunk(c: Context<AppEnv>, queueId: string, projectId: string, runId: string, family: RecordFamily, filter: FilterNode, after: KeysetCursor | null, limit: number, firstSeq: number) {
  const [last, added] = await writeOnShard(c, projectId, (db) => [
    lastMatchStatement(db, projectId, runId, family, filter, after, limit),
    addMatchesStatement(db, queueId, projectId, runId, family, filter, after, limit, firstSeq, nowMicros()),
  ]);
  const row = (last?.results ?? [])[0] as { matched: number; created_at: number; id: string } | undefined;
  return { matched: row?.matched ?? 0, added: idsOf(added).length, last: row ? { createdAt: row.created_at, id: row.id } : null };
}

/**
 * Positions reserved at a time by an add by filter, whose number of matches is unknown until
 * it is done: one catalog call per 10,000 records rather than one per chunk. What an add leaves
 * unused is a gap in the queue's positions; only their order matters.
 */
const SEQ_BLOCK = 10_000;

/**
 * Runs a chunk of an add and pauses as long as it took (at most MAX_ADD_PAUSE_MS), so the add
 * holds the shard about half the time and the searches meanwhile get the rest. Locally the
 * pause is also what lets the runtime serve other requests (yieldToEventLoop).
 */
async function paced<T>(chunk: () => Promise<T>): Promise<T> {
  const started = Date.now();
  const result = await chunk();
  await pauseFor(Math.min(Date.now() - started, MAX_ADD_PAUSE_MS));
  return result;
}
const MAX_ADD_PAUSE_MS = 50;

/** The queue's record with this id: the project that lists it, if any. */
async function projectListing(c: Context<AppEnv>, queueId: string, recordId: string): Promise<string | undefined> {
  const projects = await queueProjects(c.env.DB, queueId);
  const found = await Promise.all(
    projects.map((projectId) =>
      readOnEveryShard(c, projectId, (db) => [listedIdsStatement(db, queueId, projectId, [recordId])]).then((answers) => (answers.some(([result]) => idsOf(result).length > 0) ? projectId : undefined)),
    ),
  );
  return found.find((p) => p !== undefined);
}

function queueSearchQuery(body: z.infer<typeof PartialSearchRequestSchema>): SearchQuery {
  const query = normalizeSearchRequest({ ...body, sort: null }, "trace", "partial");
  return { ...query, projection: { ...query.projection, feedback: true } };
}

async function queueTemplate(c: Context<AppEnv>, queueId: string, templateId: string) {
  const row = await queueTemplateStatement(c.env.DB, queueId, templateId).first<QueueTemplateRow>();
  if (!row) throw notFound("Annotation template");
  return definitionOfQueueTemplate(row);
}

const RATE = `
INSERT INTO annotation_ratings (record_rid, template_id, annotator_id, project_id, record_id, family_key, record_created_at, value, num_value, explanation, created_at, updated_at)
SELECT r.rid, ?4, ?5, r.project_id, r.id, r.family_key, r.created_at, ?6, ?7, ?8, ?9, ?9
FROM annotation_queue_entries AS e CROSS JOIN records AS r ON r.rid = e.record_rid
WHERE e.queue_id = ?1 AND e.project_id = ?2 AND e.record_id = ?3
ON CONFLICT (record_rid, template_id, annotator_id) DO UPDATE SET
  value = excluded.value, num_value = excluded.num_value, explanation = excluded.explanation, updated_at = excluded.updated_at
RETURNING record_id`;

const READ_RATING = `
SELECT a.value, a.explanation, a.created_at, a.annotator_id FROM annotation_queue_entries AS e
JOIN annotation_ratings AS a ON a.record_rid = e.record_rid AND a.template_id = ?4 AND a.annotator_id = ?5
WHERE e.queue_id = ?1 AND e.project_id = ?2 AND e.record_id = ?3`;

const UNRATE = `
DELETE FROM annotation_ratings WHERE template_id = ?4 AND annotator_id = ?5
  AND record_rid IN (SELECT record_rid FROM annotation_queue_entries WHERE queue_id = ?1 AND project_id = ?2 AND record_id = ?3)
RETURNING record_id`;

export function registerAnnotationQueueRecords(app: Router): void {
  app.openapi(routes.add, async (c) => {
    const { queue_id } = c.req.valid("param");
    const input = c.req.valid("json");
    const db = c.env.DB;
    const queue = await queueFor(db, c.get("principal"), queue_id, "update");
    const selector = input.record_selector;
    const filter = selector.type === "filter_tree" ? selectorFilter(selector.filter_tree, selector.record_type) : null;
    // The project is the caller's (a 404 otherwise) and the run the project's: checked on the
    // project's shard by every statement below (records of the run and project only). A filter's
    // annotation columns are bound there once (template definitions never change).
    await onProjectShard(c, input.project_id, "read", async ({ db: shard }) => {
      if (filter) await bindAnnotationColumns(shard, input.project_id, { filter, sort: null } as unknown as SearchQuery);
    });
    await db.prepare("INSERT OR IGNORE INTO annotation_queue_projects (queue_id, project_id, added_at) VALUES (?1, ?2, ?3)").bind(queue.id, input.project_id, nowMicros()).run();
    const others = (await queueProjects(db, queue.id)).filter((p) => p !== input.project_id);
    let added = 0;
    if (selector.type === "record_ids") {
      const ids = [...new Set(selector.record_ids)];
      // Positions for every id at once; a chunk: the other projects' checks, then its insert.
      const size = addChunkSize(ids.length, others.length + 1);
      const firstSeq = await reserveSeq(db, queue.id, ids.length);
      for (let start = 0; start < ids.length; start += size) {
        added += await paced(() => addIds(c, queue.id, input.project_id, input.run_id, others, ids.slice(start, start + size), firstSeq + start));
      }
    } else if (others.length === 0 && !(await spansShards(c, input.project_id))) {
      // One D1 call a chunk: its matches inserted, and its last key for the next one.
      let after: KeysetCursor | null = null;
      let seq = 0;
      let seqEnd = 0;
      const size = addChunkSize(QUEUE_LIMITS.maxRecordsPerAdd, 1);
      for (let seen = 0; seen < QUEUE_LIMITS.maxRecordsPerAdd; ) {
        const limit = Math.min(size, QUEUE_LIMITS.maxRecordsPerAdd - seen);
        if (seqEnd - seq < limit) {
          seq = await reserveSeq(db, queue.id, SEQ_BLOCK);
          seqEnd = seq + SEQ_BLOCK;
        }
        const chunk = await paced(() => addMatchesChunk(c, queue.id, input.project_id, input.run_id, selector.record_type, filter!, after, limit, seq));
        added += chunk.added;
        seen += chunk.matched;
        seq += chunk.matched;
        if (chunk.matched < limit || !chunk.last) break;
        after = chunk.last;
      }
    } else {
      // Several projects, or a project whose partitions sit on several shards: a chunk's ids are
      // read first (merged across its shards), checked on the other projects' shards, then added
      // on the shards that hold them.
      let after: KeysetCursor | null = null;
      const size = addChunkSize(QUEUE_LIMITS.maxRecordsPerAdd, others.length + 3);
      for (let seen = 0; seen < QUEUE_LIMITS.maxRecordsPerAdd; ) {
        const limit = Math.min(size, QUEUE_LIMITS.maxRecordsPerAdd - seen);
        const chunk = await paced(() => matchesChunk(c, input.project_id, input.run_id, selector.record_type, filter!, after, limit));
        if (chunk.length === 0) break;
        seen += chunk.length;
        const firstSeq = await reserveSeq(db, queue.id, chunk.length);
        added += await paced(() => addIds(c, queue.id, input.project_id, input.run_id, others, chunk.map((row) => row.id), firstSeq));
        const last = chunk[chunk.length - 1]!;
        after = { createdAt: last.created_at, id: last.id };
        if (chunk.length < limit) break;
      }
    }
    return c.json({ num_records_added: added }, 200);
  });

  app.openapi(routes.remove, async (c) => {
    const { queue_id } = c.req.valid("param");
    const { record_selector: selector } = c.req.valid("json");
    const queue = await queueFor(c.env.DB, c.get("principal"), queue_id, "update");
    const filter = selector.type === "filter_tree" ? selectorFilter(selector.filter_tree, selector.record_type) : null;
    const scope = await queueScope(c, queue);
    const removed = await Promise.all(
      scope.projects.map(async (projectId) => {
        let n = 0;
        if (selector.type === "record_ids") {
          const ids = [...new Set(selector.record_ids)];
          for (let start = 0; start < ids.length; start += ENTRY_CHUNK) {
            if (start > 0) await yieldToEventLoop();
            // Each shard holding a partition removes the entries of the records it holds.
            const answers = await writeOnEveryShard(c, projectId, (db) => [removeIdsStatement(db, queue.id, projectId, ids.slice(start, start + ENTRY_CHUNK))]);
            for (const [result] of answers) n += idsOf(result).length;
          }
          return n;
        }
        // By filter: ENTRY_CHUNK a statement until a chunk comes back short; the filter's
        // annotation columns bound on the project's shard first (its templates live there), its
        // feedback leaves scoped to the queue as in partial_search.
        const bound = await boundForQueue(c, projectId, filter!, scope);
        for (let chunk = 0; chunk * ENTRY_CHUNK < QUEUE_LIMITS.maxRecordsPerAdd; chunk++) {
          if (chunk > 0) await yieldToEventLoop();
          // On the project's shard, then (partitions elsewhere) on each other shard holding one.
          const answers = await writeWhereRecordsLive(
            c,
            projectId,
            (db) => [removeMatchingStatement(db, queue.id, projectId, (selector as { record_type: RecordFamily }).record_type, bound, ENTRY_CHUNK)],
            () => (db) => [removeMatchingStatement(db, queue.id, projectId, (selector as { record_type: RecordFamily }).record_type, bound, ENTRY_CHUNK)],
          );
          const counts = answers.map(([result]) => idsOf(result).length);
          n += counts.reduce((a, b) => a + b, 0);
          if (counts.every((removedNow) => removedNow < ENTRY_CHUNK)) break;
        }
        return n;
      }),
    );
    return c.json({ num_records_removed: removed.reduce((a, b) => a + b, 0) }, 200);
  });

  app.openapi(routes.count, async (c) => {
    const { queue_id } = c.req.valid("param");
    const input = c.req.valid("json");
    const queue = await queueFor(c.env.DB, c.get("principal"), queue_id, "read");
    const filter = input.filter_tree === undefined || input.filter_tree === null ? null : { family: input.record_type, node: selectorFilter(input.filter_tree, input.record_type) };
    const scope = await queueScope(c, queue);
    // Each project on every shard holding one of its partitions: an entry lives beside its record.
    const counts = await Promise.all(
      scope.projects.map(async (projectId) => {
        const bound = filter && { family: filter.family, node: await boundForQueue(c, projectId, filter.node, scope) };
        return onProjectReadShards(c, projectId, async ({ db }) => {
          const [state, result] = await db.batch([projectStateStatement(db, projectId), countMatchingStatement(db, queue.id, projectId, bound)]);
          if (!readableHere(state)) throw new ProjectNotOnShardError(projectId);
          return Number((result?.results[0] as { n: number } | undefined)?.n ?? 0);
        });
      }),
    );
    return c.json({ count: counts.flat().reduce((sum, a) => sum + a.answer, 0) }, 200);
  });

  app.openapi(routes.search, async (c) => {
    const { queue_id } = c.req.valid("param");
    const query = queueSearchQuery(c.req.valid("json"));
    const queue = await queueFor(c.env.DB, c.get("principal"), queue_id, "read");
    const { records, paginated } = await queuePage(c, await queueScope(c, queue), query);
    const last = records[records.length - 1];
    return c.json(
      {
        records,
        num_rows: records.length,
        num_records: records.length,
        starting_token: query.offset,
        limit: query.limit,
        paginated,
        next_starting_token: paginated ? query.offset + records.length : null,
        last_row_id: last ? String(last.id) : null,
      },
      200,
    );
  });

  app.openapi(routes.record, async (c) => {
    const { queue_id, record_id } = c.req.valid("param");
    const queue = await queueFor(c.env.DB, c.get("principal"), queue_id, "read");
    const query = queueSearchQuery({});
    const { records } = await queuePage(c, await queueScope(c, queue), { ...query, limit: 1 }, record_id);
    if (records.length === 0) throw notFound("Record");
    return c.json(records[0]!, 200);
  });

  app.openapi(routes.rate, async (c) => {
    const { queue_id, record_id } = c.req.valid("param");
    const { annotation_template_id } = c.req.valid("query");
    const input = c.req.valid("json");
    const principal = c.get("principal");
    const queue = await queueFor(c.env.DB, principal, queue_id, "record_annotation");
    const template = await queueTemplate(c, queue.id, annotation_template_id);
    const checked = checkRating(template, input.rating, ["body", "rating"]);
    if (isFault(checked)) throw new RequestValidationError([checked]);
    const projectId = await projectListing(c, queue.id, record_id);
    if (!projectId) throw notFound("Record");
    const params = [queue.id, projectId, record_id, template.id, principal.userId] as const;
    // The entry and its record are on the record's partition's shard: the project's first, then the others.
    const rate = (db: D1Database) => [db.prepare(RATE).bind(...params, checked.json, checked.num, input.explanation ?? null, nowMicros()), db.prepare(READ_RATING).bind(...params)];
    const answers = await writeWhereRecordsLive(c, projectId, rate, ([written]) => ((written?.results.length ?? 0) > 0 ? null : rate));
    const [written, read] = answers.find(([w]) => (w?.results.length ?? 0) > 0) ?? [];
    const row = (read?.results ?? [])[0] as { value: string; explanation: string | null; created_at: number; annotator_id: string } | undefined;
    if ((written?.results.length ?? 0) === 0 || !row) throw notFound("Record");
    return c.json(
      { rating: { annotation_type: template.annotationType, value: JSON.parse(row.value) as unknown }, explanation: row.explanation, created_at: microsToIso(row.created_at), created_by: row.annotator_id } as never,
      200,
    );
  });

  app.openapi(routes.unrate, async (c) => {
    const { queue_id, record_id } = c.req.valid("param");
    const { annotation_template_id } = c.req.valid("query");
    const principal = c.get("principal");
    const queue = await queueFor(c.env.DB, principal, queue_id, "record_annotation");
    const projectId = await projectListing(c, queue.id, record_id);
    if (!projectId) throw notFound("Rating");
    const unrate = (db: D1Database) => [db.prepare(UNRATE).bind(queue.id, projectId, record_id, annotation_template_id, principal.userId)];
    const answers = await writeWhereRecordsLive(c, projectId, unrate, ([deleted]) => ((deleted?.results.length ?? 0) > 0 ? null : unrate));
    if (!answers.some(([deleted]) => (deleted?.results.length ?? 0) > 0)) throw notFound("Rating");
    return c.json({ message: "The rating was removed." }, 200);
  });

  app.openapi(routes.details, async (c) => {
    const queue = await queueFor(c.env.DB, c.get("principal"), c.req.valid("param").queue_id, "read");
    return c.json(await queueDetails(c, await queueScope(c, queue)), 200);
  });
}
