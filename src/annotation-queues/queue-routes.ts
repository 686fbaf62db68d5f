/**
 * Annotation queues, organization-wide (contract section 8, "Queues"): create, read, rename,
 * delete, search by name and count; the queue's users and roles; the queue's templates. Records,
 * search, ratings and details are in queue-record-routes.ts. Another organization's queue is a
 * 404; a queue of the caller's organization the caller's role does not allow is a 403.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { microsToIso, nowMicros } from "../db/client";
import type { AppEnv, Principal } from "../http/app-env";
import { commonErrorResponses, ErrorDetail } from "../http/common-schemas";
import type { Router } from "../http/create-router";
import { ApiError, RequestValidationError, notFound } from "../http/errors";
import type { ValidationErrorItem } from "../http/validation-errors";
import { readOnEveryShard } from "../annotations/annotation-shard";
import { progressFields, queueProgress, type QueueScope } from "./queue-progress";
import { purgeQueue, QUEUE_DELETION } from "./queue-deletion";
import {
  AnnotationQueueCreate,
  AnnotationQueueResponse,
  AnnotationQueueUpdate,
  QueueIdParam,
  QueueQueryRequest,
  QueueQueryResponse,
  QueueTemplateCreate,
  QueueTemplatePath,
  QueueTemplateUpdate,
  QueueUser,
  QueueUserEntry,
  QueueUserPath,
  QUEUE_LIMITS,
} from "./queue-schemas";
import {
  countQueuesStatement,
  definitionOfQueueTemplate,
  isDuplicate,
  listQueuesStatement,
  organizationUsersStatement,
  permissions,
  QUEUE_NAME_COLUMNS,
  QUEUE_TEMPLATE_NAME_COLUMNS,
  queueFor,
  queueProjects,
  type QueueRow,
  queueTemplateShape,
  queueTemplatesStatement,
  queueTemplateStatement,
  type QueueTemplateRow,
  queueUsersStatement,
  type QueueUserRow,
  RATING_ROLES,
  setUsersStatement,
} from "./queue-store";
import { AnnotationTemplateDB } from "../annotations/template-schemas";

const TAGS = ["Annotation queues"];
const json = <T extends z.ZodType>(schema: T, description: string) => ({ content: { "application/json": { schema } }, description });
const body = <T extends z.ZodType>(schema: T) => ({ body: { content: { "application/json": { schema } }, required: true } });
const conflict = { 409: json(ErrorDetail, "The name is taken"), 403: json(ErrorDetail, "The caller's role in the queue does not allow this") };
const Message = z.object({ message: z.string() });

const routes = {
  create: createRoute({ method: "post", path: "/annotation_queues", tags: TAGS, summary: "Create an annotation queue (the caller is its first owner)", request: body(AnnotationQueueCreate), responses: { 200: json(AnnotationQueueResponse, "The queue"), ...conflict, ...commonErrorResponses } }),
  get: createRoute({ method: "get", path: "/annotation_queues/{queue_id}", tags: TAGS, summary: "Get an annotation queue with its progress", request: { params: QueueIdParam }, responses: { 200: json(AnnotationQueueResponse, "The queue"), ...conflict, ...commonErrorResponses } }),
  update: createRoute({ method: "patch", path: "/annotation_queues/{queue_id}", tags: TAGS, summary: "Rename an annotation queue or change its description", request: { params: QueueIdParam, ...body(AnnotationQueueUpdate) }, responses: { 200: json(AnnotationQueueResponse, "The queue"), ...conflict, ...commonErrorResponses } }),
  delete: createRoute({
    method: "delete",
    path: "/annotation_queues/{queue_id}",
    tags: TAGS,
    summary: "Delete an annotation queue, its entries and the ratings made with its templates",
    description: `The queue leaves every answer at once; its entries and ratings go in chunks, up to ${QUEUE_DELETION.requestChunks} in the request and the rest by the minutely maintenance.`,
    request: { params: QueueIdParam },
    responses: { 200: json(Message, "Deleted"), ...conflict, ...commonErrorResponses },
  }),
  query: createRoute({ method: "post", path: "/annotation_queues/query", tags: TAGS, summary: "Search the caller's annotation queues by name", request: body(QueueQueryRequest), responses: { 200: json(QueueQueryResponse, "A page of queues"), ...commonErrorResponses } }),
  count: createRoute({ method: "post", path: "/annotation_queues/count", tags: TAGS, summary: "Count the caller's annotation queues matching a name", request: body(QueueQueryRequest), responses: { 200: json(z.object({ count: z.number().int() }), "How many"), ...commonErrorResponses } }),
  listUsers: createRoute({ method: "get", path: "/annotation_queues/{queue_id}/users", tags: TAGS, summary: "The queue's users and their roles", request: { params: QueueIdParam }, responses: { 200: json(z.array(QueueUser), "Users"), ...conflict, ...commonErrorResponses } }),
  addUsers: createRoute({
    method: "post",
    path: "/annotation_queues/{queue_id}/users",
    tags: TAGS,
    summary: "Give users of the organization a role in the queue (by id or email)",
    request: { params: QueueIdParam, ...body(z.array(QueueUserEntry).min(1).max(QUEUE_LIMITS.maxUsersPerRequest)) },
    responses: { 200: json(z.array(QueueUser), "The queue's users"), ...conflict, ...commonErrorResponses },
  }),
  updateUser: createRoute({ method: "patch", path: "/annotation_queues/{queue_id}/users/{user_id}", tags: TAGS, summary: "Change a user's role in the queue", request: { params: QueueUserPath, ...body(QueueUserEntry.pick({ role: true })) }, responses: { 200: json(QueueUser, "The user"), ...conflict, ...commonErrorResponses } }),
  removeUser: createRoute({ method: "delete", path: "/annotation_queues/{queue_id}/users/{user_id}", tags: TAGS, summary: "Remove a user from the queue", request: { params: QueueUserPath }, responses: { 200: json(Message, "Removed"), ...conflict, ...commonErrorResponses } }),
  listTemplates: createRoute({ method: "get", path: "/annotation_queues/{queue_id}/templates", tags: TAGS, summary: "The queue's annotation templates", request: { params: QueueIdParam }, responses: { 200: json(z.array(AnnotationTemplateDB), "Templates, in position order"), ...conflict, ...commonErrorResponses } }),
  createTemplate: createRoute({ method: "post", path: "/annotation_queues/{queue_id}/templates", tags: TAGS, summary: "Add an annotation template to the queue", request: { params: QueueIdParam, ...body(QueueTemplateCreate) }, responses: { 200: json(AnnotationTemplateDB, "The template"), ...conflict, ...commonErrorResponses } }),
  updateTemplate: createRoute({ method: "patch", path: "/annotation_queues/{queue_id}/templates/{template_id}", tags: TAGS, summary: "Rename a queue template or change its criteria", request: { params: QueueTemplatePath, ...body(QueueTemplateUpdate) }, responses: { 200: json(AnnotationTemplateDB, "The template"), ...conflict, ...commonErrorResponses } }),
  deleteTemplate: createRoute({ method: "delete", path: "/annotation_queues/{queue_id}/templates/{template_id}", tags: TAGS, summary: "Delete a queue template and the ratings made with it", request: { params: QueueTemplatePath }, responses: { 200: json(Message, "Deleted"), ...conflict, ...commonErrorResponses } }),
};

const rows = <T>(result: D1Result | undefined) => (result?.results ?? []) as T[];

/** What the queue's answers need: its templates, users and projects (one catalog batch). */
export async function queueScope(c: Context<AppEnv>, queue: QueueRow): Promise<QueueScope & { templateRows: QueueTemplateRow[]; users: QueueUserRow[] }> {
  const db = c.env.DB;
  const [templates, users, projects] = await db.batch([
    queueTemplatesStatement(db, queue.id),
    queueUsersStatement(db, queue.id),
    db.prepare("SELECT project_id FROM annotation_queue_projects WHERE queue_id = ?1 ORDER BY project_id").bind(queue.id),
  ]);
  const templateRows = rows<QueueTemplateRow>(templates);
  const userRows = rows<QueueUserRow>(users);
  return {
    queueId: queue.id,
    projects: rows<{ project_id: string }>(projects).map((p) => p.project_id),
    templates: templateRows.map(definitionOfQueueTemplate),
    annotators: userRows.filter((u) => RATING_ROLES.includes(u.role)).map((u) => u.user_id),
    templateRows,
    users: userRows,
  };
}

async function queueResponse(c: Context<AppEnv>, queue: QueueRow) {
  const scope = await queueScope(c, queue);
  const progress = await queueProgress(c, scope);
  const creator = scope.users.find((u) => u.user_id === queue.created_by);
  return {
    id: queue.id,
    name: queue.name,
    description: queue.description,
    created_at: microsToIso(queue.created_at),
    updated_at: microsToIso(queue.updated_at),
    created_by_user: queue.created_by ? { id: queue.created_by, email: creator?.email ?? null } : null,
    num_annotators: scope.annotators.length,
    num_users: scope.users.length,
    num_templates: scope.templates.length,
    ...progressFields(scope, progress),
    templates: scope.templateRows.map((row) => queueTemplateShape(row)),
    permissions: permissions(queue, c.get("principal")),
  };
}

function userShape(row: QueueUserRow) {
  return { user_id: row.user_id, email: row.email, role: row.role, created_at: microsToIso(row.created_at) };
}

/** The next free "name (n)" among the organization's live queues. */
async function suffixedName(db: D1Database, organizationId: string, name: string): Promise<string> {
  const { results } = await db
    .prepare("SELECT name FROM annotation_queues WHERE organization_id = ?1 AND deleted_at IS NULL AND (name = ?2 OR substr(name, 1, length(?2) + 2) = ?2 || ' (')")
    .bind(organizationId, name)
    .all<{ name: string }>();
  const taken = new Set(results.map((r) => r.name));
  let n = 1;
  while (taken.has(`${name} (${n})`)) n += 1;
  return `${name} (${n})`;
}

/** Checks that every named user is of the caller's organization (else a 422 at the entry). */
async function organizationUsers(db: D1Database, principal: Principal, entries: readonly { user_id?: string; user_email?: string }[], loc: (i: number, field: string) => (string | number)[]): Promise<void> {
  const ids = entries.flatMap((e) => (e.user_id ? [e.user_id] : []));
  const emails = entries.flatMap((e) => (e.user_email ? [e.user_email.toLowerCase()] : []));
  const { results } = await organizationUsersStatement(db, principal.organizationId, ids, emails).all<{ id: string; email: string }>();
  const knownIds = new Set(results.map((r) => r.id));
  const knownEmails = new Set(results.map((r) => r.email));
  const issues = entries.flatMap((entry, i): ValidationErrorItem[] => {
    if (!entry.user_id && !entry.user_email) return [{ loc: loc(i, "user_id"), msg: "Value error, give user_id or user_email", type: "value_error", input: entry }];
    const known = entry.user_id ? knownIds.has(entry.user_id) : knownEmails.has(entry.user_email!.toLowerCase());
    return known ? [] : [{ loc: loc(i, entry.user_id ? "user_id" : "user_email"), msg: "Value error, no such user in this organization", type: "value_error", input: entry.user_id ?? entry.user_email }];
  });
  if (issues.length > 0) throw new RequestValidationError(issues);
}

function nameFilter(query: z.infer<typeof QueueQueryRequest>): string | null {
  return query.name ?? query.filters?.find((f) => f.name === "name")?.value ?? null;
}

export function registerAnnotationQueues(app: Router): void {
  app.openapi(routes.create, async (c) => {
    const input = c.req.valid("json");
    const principal = c.get("principal");
    const db = c.env.DB;
    const emails = input.annotator_emails ?? [];
    await organizationUsers(db, principal, emails.map((user_email) => ({ user_email })), (i) => ["body", "annotator_emails", i]);
    const id = crypto.randomUUID();
    const now = nowMicros();
    let name = input.name.value;
    for (let attempt = 0; ; attempt++) {
      try {
        await db.batch([
          db.prepare("INSERT INTO annotation_queues (id, organization_id, name, description, created_by, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)").bind(id, principal.organizationId, name, input.description ?? null, principal.userId, now),
          // Annotators first, then the creator as owner (an owner listed as annotator stays owner).
          setUsersStatement(db, principal.organizationId, id, emails.map((user_email) => ({ user_email, role: "annotator" as const })), now),
          setUsersStatement(db, principal.organizationId, id, [{ user_id: principal.userId, role: "owner" }], now),
        ]);
        break;
      } catch (error) {
        if (!isDuplicate(error, QUEUE_NAME_COLUMNS)) throw error;
        if (!input.name.append_suffix_if_duplicate) throw new ApiError(409, `An annotation queue named '${name}' already exists in this organization`);
        if (attempt >= 5) throw new ApiError(409, `Could not find a free name for '${input.name.value}'; retry`);
        name = await suffixedName(db, principal.organizationId, input.name.value);
      }
    }
    return c.json(await queueResponse(c, await queueFor(db, principal, id, "read")), 200);
  });

  app.openapi(routes.get, async (c) => {
    const queue = await queueFor(c.env.DB, c.get("principal"), c.req.valid("param").queue_id, "read");
    return c.json(await queueResponse(c, queue), 200);
  });

  app.openapi(routes.update, async (c) => {
    const principal = c.get("principal");
    const db = c.env.DB;
    const queue = await queueFor(db, principal, c.req.valid("param").queue_id, "update");
    const input = c.req.valid("json");
    const requested = typeof input.name === "string" ? { value: input.name, append_suffix_if_duplicate: false } : (input.name ?? null);
    let name = requested?.value ?? null;
    for (let attempt = 0; ; attempt++) {
      try {
        await db
          .prepare(
            "UPDATE annotation_queues SET name = coalesce(?2, name), description = CASE WHEN ?3 THEN ?4 ELSE description END, updated_at = ?5 WHERE id = ?1 AND deleted_at IS NULL",
          )
          .bind(queue.id, name, input.description !== undefined ? 1 : 0, input.description ?? null, nowMicros())
          .run();
        break;
      } catch (error) {
        if (!isDuplicate(error, QUEUE_NAME_COLUMNS) || !requested) throw error;
        if (!requested.append_suffix_if_duplicate) throw new ApiError(409, `An annotation queue named '${name}' already exists in this organization`);
        if (attempt >= 5) throw new ApiError(409, `Could not find a free name for '${requested.value}'; retry`);
        name = await suffixedName(db, principal.organizationId, requested.value);
      }
    }
    return c.json(await queueResponse(c, await queueFor(db, principal, queue.id, "read")), 200);
  });

  app.openapi(routes.delete, async (c) => {
    const queue = await queueFor(c.env.DB, c.get("principal"), c.req.valid("param").queue_id, "delete");
    await c.env.DB.prepare("UPDATE annotation_queues SET deleted_at = ?2, updated_at = ?2 WHERE id = ?1 AND deleted_at IS NULL").bind(queue.id, nowMicros()).run();
    const outcome = await purgeQueue(c.env, queue.id, QUEUE_DELETION.requestChunks);
    return c.json({ message: outcome.done ? "The annotation queue was deleted." : "The annotation queue was deleted; its remaining entries and ratings are being removed in the background." }, 200);
  });

  app.openapi(routes.query, async (c) => {
    const input = c.req.valid("json");
    const principal = c.get("principal");
    const limit = input.limit ?? 25;
    const offset = input.starting_token ?? 0;
    const { results } = await listQueuesStatement(c.env.DB, principal, nameFilter(input), limit + 1, offset).all<QueueRow>();
    const page = results.slice(0, limit);
    const paginated = results.length > limit;
    return c.json(
      { annotation_queues: await Promise.all(page.map((queue) => queueResponse(c, queue))), starting_token: offset, limit, paginated, next_starting_token: paginated ? offset + page.length : null },
      200,
    );
  });

  app.openapi(routes.count, async (c) => {
    const row = await countQueuesStatement(c.env.DB, c.get("principal"), nameFilter(c.req.valid("json"))).first<{ n: number }>();
    return c.json({ count: row?.n ?? 0 }, 200);
  });

  // ---- users --------------------------------------------------------------------------------------

  app.openapi(routes.listUsers, async (c) => {
    const queue = await queueFor(c.env.DB, c.get("principal"), c.req.valid("param").queue_id, "read");
    const { results } = await queueUsersStatement(c.env.DB, queue.id).all<QueueUserRow>();
    return c.json(results.map(userShape), 200);
  });

  app.openapi(routes.addUsers, async (c) => {
    const principal = c.get("principal");
    const db = c.env.DB;
    const queue = await queueFor(db, principal, c.req.valid("param").queue_id, "share");
    const entries = c.req.valid("json");
    await organizationUsers(db, principal, entries, (i, field) => ["body", i, field]);
    const [, users] = await db.batch([setUsersStatement(db, principal.organizationId, queue.id, entries, nowMicros()), queueUsersStatement(db, queue.id)]);
    return c.json(rows<QueueUserRow>(users).map(userShape), 200);
  });

  app.openapi(routes.updateUser, async (c) => {
    const principal = c.get("principal");
    const db = c.env.DB;
    const { queue_id, user_id } = c.req.valid("param");
    const queue = await queueFor(db, principal, queue_id, "share");
    const { role } = c.req.valid("json");
    const [, users] = await db.batch([
      db.prepare("UPDATE annotation_queue_users SET role = ?3 WHERE queue_id = ?1 AND user_id = ?2").bind(queue.id, user_id, role),
      queueUsersStatement(db, queue.id),
    ]);
    const user = rows<QueueUserRow>(users).find((u) => u.user_id === user_id);
    if (!user) throw notFound("Queue user");
    return c.json(userShape(user), 200);
  });

  app.openapi(routes.removeUser, async (c) => {
    const { queue_id, user_id } = c.req.valid("param");
    const queue = await queueFor(c.env.DB, c.get("principal"), queue_id, "share");
    const result = await c.env.DB.prepare("DELETE FROM annotation_queue_users WHERE queue_id = ?1 AND user_id = ?2").bind(queue.id, user_id).run();
    if ((result.meta.changes ?? 0) === 0) throw notFound("Queue user");
    return c.json({ message: "The user was removed from the queue." }, 200);
  });

  // ---- templates ----------------------------------------------------------------------------------

  app.openapi(routes.listTemplates, async (c) => {
    const queue = await queueFor(c.env.DB, c.get("principal"), c.req.valid("param").queue_id, "read");
    const { results } = await queueTemplatesStatement(c.env.DB, queue.id).all<QueueTemplateRow>();
    const usage = await templateUsage(c, queue.id, results.map((t) => t.id));
    return c.json(results.map((row) => queueTemplateShape(row, usage.get(row.id) ?? 0)), 200);
  });

  app.openapi(routes.createTemplate, async (c) => {
    const principal = c.get("principal");
    const db = c.env.DB;
    const queue = await queueFor(db, principal, c.req.valid("param").queue_id, "update");
    const { template } = c.req.valid("json");
    const id = crypto.randomUUID();
    try {
      const [, created] = await db.batch([
        db
          .prepare(
            `INSERT INTO annotation_queue_templates (id, queue_id, name, annotation_type, constraints, include_explanation, criteria, position, created_by, created_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, coalesce((SELECT max(position) + 1 FROM annotation_queue_templates WHERE queue_id = ?2 AND deleted_at IS NULL), 0), ?8, ?9, ?9)`,
          )
          .bind(id, queue.id, template.name, template.constraints.annotation_type, JSON.stringify(template.constraints), template.include_explanation ? 1 : 0, template.criteria, principal.userId, nowMicros()),
        queueTemplateStatement(db, queue.id, id),
      ]);
      return c.json(queueTemplateShape(rows<QueueTemplateRow>(created)[0]!), 200);
    } catch (error) {
      if (isDuplicate(error, QUEUE_TEMPLATE_NAME_COLUMNS)) throw new ApiError(409, `An annotation template named '${template.name}' already exists in this queue`);
      throw error;
    }
  });

  app.openapi(routes.updateTemplate, async (c) => {
    const { queue_id, template_id } = c.req.valid("param");
    const db = c.env.DB;
    const queue = await queueFor(db, c.get("principal"), queue_id, "update");
    const input = c.req.valid("json");
    try {
      const [, updated] = await db.batch([
        db
          .prepare(
            `UPDATE annotation_queue_templates SET name = coalesce(?3, name), criteria = CASE WHEN ?4 THEN ?5 ELSE criteria END, updated_at = ?6
             WHERE id = ?1 AND queue_id = ?2 AND deleted_at IS NULL`,
          )
          .bind(template_id, queue.id, input.name ?? null, input.criteria !== undefined ? 1 : 0, input.criteria ?? null, nowMicros()),
        queueTemplateStatement(db, queue.id, template_id),
      ]);
      const row = rows<QueueTemplateRow>(updated)[0];
      if (!row) throw notFound("Annotation template");
      return c.json(queueTemplateShape(row, (await templateUsage(c, queue.id, [row.id])).get(row.id) ?? 0), 200);
    } catch (error) {
      if (isDuplicate(error, QUEUE_TEMPLATE_NAME_COLUMNS)) throw new ApiError(409, `An annotation template named '${input.name}' already exists in this queue`);
      throw error;
    }
  });

  app.openapi(routes.deleteTemplate, async (c) => {
    const { queue_id, template_id } = c.req.valid("param");
    const db = c.env.DB;
    const queue = await queueFor(db, c.get("principal"), queue_id, "update");
    const marked = await db
      .prepare("UPDATE annotation_queue_templates SET deleted_at = ?3, updated_at = ?3 WHERE id = ?1 AND queue_id = ?2 AND deleted_at IS NULL")
      .bind(template_id, queue.id, nowMicros())
      .run();
    if ((marked.meta.changes ?? 0) === 0) throw notFound("Annotation template");
    const outcome = await purgeQueue(c.env, queue.id, QUEUE_DELETION.requestChunks);
    return c.json({ message: outcome.done ? "The annotation template and its ratings were deleted." : "The annotation template was deleted; its remaining ratings are being removed in the background." }, 200);
  });
}

/** Ratings made with each of these queue templates, over the queue's projects. */
async function templateUsage(c: Context<AppEnv>, queueId: string, templateIds: readonly string[]): Promise<Map<string, number>> {
  const usage = new Map<string, number>();
  if (templateIds.length === 0) return usage;
  const projects = await queueProjects(c.env.DB, queueId);
  const counts = (await Promise.all(
    projects.map((projectId) =>
      readOnEveryShard(c, projectId, (db) => [
        db
          .prepare("SELECT template_id, count(*) AS n FROM annotation_ratings WHERE template_id IN (SELECT value FROM json_each(?2)) AND project_id = ?1 GROUP BY template_id")
          .bind(projectId, JSON.stringify(templateIds)),
      ]),
    ),
  )).flat();
  for (const [result] of counts) for (const row of rows<{ template_id: string; n: number }>(result)) usage.set(row.template_id, (usage.get(row.template_id) ?? 0) + row.n);
  return usage;
}
