/**
 * Ratings (contract section 8, "Ratings"): one per (template, record, annotator), the annotator
 * being the caller. PUT creates or replaces, GET reads the caller's, DELETE removes it, on any
 * record kind of the project; the `traces/{trace_id}` spelling is the same for a trace; the bulk
 * route applies create and delete operations to up to 1,000 traces, each item succeeding or
 * failing on its own.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { nowMicros } from "../db/client";
import { ANNOTATION_TYPES } from "../db/schema";
import type { AppEnv } from "../http/app-env";
import { commonErrorResponses, ProjectIdParam, Uuid } from "../http/common-schemas";
import type { Router } from "../http/create-router";
import { RequestValidationError, notFound } from "../http/errors";
import { readOnRecordShards, readOnShard, writeWhereRecordsLive } from "./annotation-shard";
import { deleteRatingsStatement, type RatingTarget, ratingShape, ratingStatement, type RecordFamilyFilter, type StoredRating, upsertRatingsStatement } from "./rating-store";
import { checkRating, isFault, MAX_TEXT_RATING } from "./rating-values";
import { cachedDefinitions, rememberDefinitions } from "./template-definitions";
import { listTemplatesStatement, templateStatement, type TemplateDefinition, type TemplateRow } from "./template-store";

const TAGS = ["Annotations"];
const json = <T extends z.ZodType>(schema: T, description: string) => ({ content: { "application/json": { schema } }, description });

/** Bulk rating: traces per request, and operations per request. */
export const BULK_RATING_LIMITS = { traces: 1000, operations: 50 } as const;

const Rating = z
  .object({
    annotation_type: z.enum(ANNOTATION_TYPES),
    value: z.unknown().openapi({ description: "boolean (like_dislike), integer (star 1-5, score), list of strings (tags), string (choice, tree_choice node id, text)" }),
  })
  .openapi("AnnotationRating");

const Explanation = z.string().max(MAX_TEXT_RATING).nullable().optional();

const RatingCreate = z.object({ rating: Rating, explanation: Explanation }).openapi("AnnotationRatingCreate");

const RatingDB = z
  .object({ rating: Rating, explanation: z.string().nullable(), created_at: z.string(), created_by: z.string() })
  .openapi("AnnotationRatingDB");

const Message = z.object({ message: z.string() });

const RecordRatingPath = ProjectIdParam.extend({
  template_id: Uuid.openapi({ param: { name: "template_id", in: "path" } }),
  record_id: Uuid.openapi({ param: { name: "record_id", in: "path" } }),
});
const TraceRatingPath = ProjectIdParam.extend({
  template_id: Uuid.openapi({ param: { name: "template_id", in: "path" } }),
  trace_id: Uuid.openapi({ param: { name: "trace_id", in: "path" } }),
});

const BulkOperation = z.discriminatedUnion("operation_type", [
  z.object({ operation_type: z.literal("create"), annotation_template_id: Uuid, rating: Rating, explanation: Explanation }),
  z.object({ operation_type: z.literal("delete"), annotation_template_id: Uuid }),
]);

const BulkRatingRequest = z
  .object({
    operations: z.array(BulkOperation).min(1).max(BULK_RATING_LIMITS.operations),
    selector: z.object({ selector_type: z.literal("traces"), traces: z.array(Uuid).min(1).max(BULK_RATING_LIMITS.traces) }),
  })
  .openapi("BulkAnnotationRatingRequest");

const BulkItem = z
  .object({ selector: z.literal("traces"), index: z.number().int(), trace: z.string(), operation: z.string(), success: z.boolean(), message: z.string().nullable() })
  .openapi("BulkAnnotationRatingResult");

function ratingRoutes(path: string, params: typeof RecordRatingPath | typeof TraceRatingPath, what: string) {
  return {
    put: createRoute({
      method: "put",
      path,
      tags: TAGS,
      summary: `Rate ${what} with a template (create or replace the caller's rating)`,
      request: { params, body: { content: { "application/json": { schema: RatingCreate } }, required: true } },
      responses: { 200: json(RatingDB, "The caller's rating"), ...commonErrorResponses },
    }),
    get: createRoute({
      method: "get",
      path,
      tags: TAGS,
      summary: `The caller's rating of ${what} with a template`,
      request: { params },
      responses: { 200: json(RatingDB, "The caller's rating"), ...commonErrorResponses },
    }),
    delete: createRoute({
      method: "delete",
      path,
      tags: TAGS,
      summary: `Remove the caller's rating of ${what} with a template`,
      request: { params },
      responses: { 200: json(Message, "Removed"), ...commonErrorResponses },
    }),
  };
}

const recordRoutes = ratingRoutes("/projects/{project_id}/annotation/templates/{template_id}/records/{record_id}/rating", RecordRatingPath, "a record");
const traceRoutes = ratingRoutes("/projects/{project_id}/annotation/templates/{template_id}/traces/{trace_id}/rating", TraceRatingPath, "a trace");

const bulkRatings = createRoute({
  method: "post",
  path: "/projects/{project_id}/annotation/ratings",
  tags: TAGS,
  summary: "Create or delete the caller's ratings on many traces",
  description: `Up to ${BULK_RATING_LIMITS.traces} traces and ${BULK_RATING_LIMITS.operations} operations; one item per trace and operation, each succeeding or failing on its own.`,
  request: { params: ProjectIdParam, body: { content: { "application/json": { schema: BulkRatingRequest } }, required: true } },
  responses: { 200: json(z.array(BulkItem), "One result per trace and operation"), ...commonErrorResponses },
});

/**
 * Definitions of these templates of the project: from the isolate's cache, else read on the
 * shard (a template of another project, deleted or unknown is simply absent).
 */
async function definitions(c: Context<AppEnv>, projectId: string, templateIds: readonly string[]): Promise<Map<string, TemplateDefinition>> {
  const { found, missing } = cachedDefinitions(projectId, templateIds);
  if (missing.length === 0) return found;
  const [rows] = await readOnShard(c, projectId, (db) => [missing.length === 1 ? templateStatement(db, projectId, missing[0]!, false) : listTemplatesStatement(db, projectId, false)]);
  for (const definition of rememberDefinitions(projectId, (rows?.results ?? []) as TemplateRow[])) {
    if (templateIds.includes(definition.id)) found.set(definition.id, definition);
  }
  return found;
}

function target(c: Context<AppEnv>, projectId: string, templateId: string, recordId: string, family: RecordFamilyFilter): RatingTarget {
  return { projectId, templateId, annotatorId: c.get("principal").userId, recordIds: [recordId], family };
}

function registerRatingRoutes(app: Router, routes: typeof recordRoutes, family: RecordFamilyFilter, what: string): void {
  const idOf = (params: { record_id?: string; trace_id?: string }) => (params.record_id ?? params.trace_id)!;

  app.openapi(routes.put, async (c) => {
    const params = c.req.valid("param") as { project_id: string; template_id: string; record_id?: string; trace_id?: string };
    const body = c.req.valid("json");
    const template = (await definitions(c, params.project_id, [params.template_id])).get(params.template_id);
    if (!template) throw notFound("Annotation template");
    const checked = checkRating(template, body.rating, ["body", "rating"]);
    if (isFault(checked)) throw new RequestValidationError([checked]);
    const rated = target(c, params.project_id, params.template_id, idOf(params), family);
    // The record's partition may sit on another shard than the project's (docs/partitions.md,
    // "Annotations"): asked there only when the project's shard did not hold it and found the
    // template live (its third statement), so a deleted template takes no rating anywhere.
    const answers = await writeWhereRecordsLive(
      c,
      params.project_id,
      (db) => [upsertRatingsStatement(db, rated, checked, body.explanation ?? null, nowMicros()), ratingStatement(db, rated), templateStatement(db, params.project_id, params.template_id, false)],
      ([written, , live]) => {
        if ((written?.results.length ?? 0) > 0 || (live?.results.length ?? 0) === 0) return null;
        const elsewhere = { ...rated, templateLiveElsewhere: true };
        return (db) => [upsertRatingsStatement(db, elsewhere, checked, body.explanation ?? null, nowMicros()), ratingStatement(db, elsewhere)];
      },
    );
    const where = answers.find(([written]) => (written?.results.length ?? 0) > 0);
    const row = (where?.[1]?.results ?? [])[0] as StoredRating | undefined;
    if (!row) throw notFound(`${what} or annotation template`);
    return c.json(ratingShape(template.annotationType, row) as never, 200);
  });

  app.openapi(routes.get, async (c) => {
    const params = c.req.valid("param") as { project_id: string; template_id: string; record_id?: string; trace_id?: string };
    const rated = target(c, params.project_id, params.template_id, idOf(params), family);
    // Every shard holding a partition (the record's is one of them), in parallel; the template's
    // liveness is read on the project's own shard, where templates live.
    const answers = await readOnRecordShards(c, params.project_id, (db, home) =>
      home ? [ratingStatement(db, rated), templateStatement(db, params.project_id, params.template_id, false)] : [ratingStatement(db, { ...rated, templateLiveElsewhere: true })],
    );
    const row = answers.flatMap((a) => (a.answer[0]?.results ?? []) as StoredRating[])[0];
    const template = (answers.find((a) => a.home)!.answer[1]?.results ?? [])[0] as TemplateRow | undefined;
    if (!row || !template) throw notFound("Rating");
    return c.json(ratingShape(template.annotation_type, row) as never, 200);
  });

  app.openapi(routes.delete, async (c) => {
    const params = c.req.valid("param") as { project_id: string; template_id: string; record_id?: string; trace_id?: string };
    const rated = target(c, params.project_id, params.template_id, idOf(params), family);
    const answers = await writeWhereRecordsLive(c, params.project_id, (db) => [deleteRatingsStatement(db, rated)], ([deleted]) =>
      (deleted?.results.length ?? 0) > 0 ? null : (db) => [deleteRatingsStatement(db, rated)],
    );
    if (!answers.some(([deleted]) => (deleted?.results.length ?? 0) > 0)) throw notFound("Rating");
    return c.json({ message: "The rating was removed." }, 200);
  });
}

export function registerAnnotationRatings(app: Router): void {
  registerRatingRoutes(app, recordRoutes, null, "Record");
  registerRatingRoutes(app, traceRoutes as unknown as typeof recordRoutes, "trace", "Trace");

  app.openapi(bulkRatings, async (c) => {
    const { project_id } = c.req.valid("param");
    const { operations, selector } = c.req.valid("json");
    const traces = [...new Set(selector.traces)];
    const found = await definitions(c, project_id, [...new Set(operations.map((o) => o.annotation_template_id))]);
    const annotatorId = c.get("principal").userId;
    // Each operation is checked on its own: a misfit fails that operation's items only.
    const planned = operations.map((operation, index) => {
      const template = found.get(operation.annotation_template_id);
      if (!template) return { index, operation, failure: "annotation template not found" };
      if (operation.operation_type === "delete") return { index, operation, template };
      const checked = checkRating(template, operation.rating, ["operations", index, "rating"]);
      if (isFault(checked)) return { index, operation, failure: `${checked.loc.join(".")}: ${checked.msg}` };
      return { index, operation, template, checked };
    });
    const runnable = planned.filter((p) => !("failure" in p));
    const now = nowMicros();
    const statementsOf = (db: D1Database, live: ReadonlySet<string> | null) =>
      runnable.map((p) => {
        const templateLiveElsewhere = live !== null;
        const rated: RatingTarget = { projectId: project_id, templateId: p.operation.annotation_template_id, annotatorId, recordIds: traces, family: "trace", templateLiveElsewhere };
        if (p.operation.operation_type === "create" && "checked" in p && p.checked) {
          // On another shard, a create whose template is not live on the project's writes nothing.
          return upsertRatingsStatement(db, live && !live.has(rated.templateId) ? { ...rated, recordIds: [] } : rated, p.checked, p.operation.explanation ?? null, now);
        }
        return deleteRatingsStatement(db, rated);
      });
    // Each trace is in one partition: the project's shard first (with its live templates), then
    // every other shard holding a partition, for all the traces (each writes only its own).
    const answers =
      runnable.length === 0
        ? []
        : await writeWhereRecordsLive(
            c,
            project_id,
            (db) => [...statementsOf(db, null), listTemplatesStatement(db, project_id, false)],
            (homeResults) => {
              const live = new Set(((homeResults[runnable.length]?.results ?? []) as TemplateRow[]).map((t) => t.id));
              return (db) => statementsOf(db, live);
            },
          );
    const touched = new Map(runnable.map((p, i) => [p.index, new Set(answers.flatMap((results) => ((results[i]?.results ?? []) as { record_id: string }[]).map((r) => r.record_id)))]));
    const items = selector.traces.flatMap((trace, index) =>
      planned.map((p) => {
        const done = touched.get(p.index);
        const failure = "failure" in p ? p.failure : done?.has(trace) ? null : p.operation.operation_type === "create" ? "trace not found" : "no rating to delete";
        return { selector: "traces" as const, index, trace, operation: p.operation.operation_type, success: failure === null, message: failure ?? null };
      }),
    );
    return c.json(items, 200);
  });
}
