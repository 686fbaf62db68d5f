/**
 * Annotation templates of a project (contract section 8, "Templates"): create, list in position
 * order, read, rename or change the criteria, delete (with its ratings, in bounded chunks:
 * template-deletion.ts) and reorder. Any user of the organization may manage them; another
 * organization's project or template is a 404.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { nowMicros } from "../db/client";
import { commonErrorResponses, ErrorDetail, ProjectIdParam, Uuid } from "../http/common-schemas";
import type { Router } from "../http/create-router";
import { ApiError, RequestValidationError, notFound } from "../http/errors";
import { readOnShard, onShardForWrite, writeOnShard } from "./annotation-shard";
import { addUsageElsewhere, purgeRatingsElsewhere } from "./ratings-elsewhere";
import { markTemplateDeleted, purgeDeletedTemplate, TEMPLATE_DELETION } from "./template-deletion";
import { AnnotationTemplateCreate, AnnotationTemplateDB, AnnotationTemplateReorder, AnnotationTemplateUpdate } from "./template-schemas";
import {
  insertTemplateStatement,
  isDuplicateTemplateName,
  listTemplatesStatement,
  type TemplateRow,
  templateShape,
  templateStatement,
} from "./template-store";

const TAGS = ["Annotations"];
const TemplatePath = ProjectIdParam.extend({ template_id: Uuid.openapi({ param: { name: "template_id", in: "path" } }) });
const json = <T extends z.ZodType>(schema: T, description: string) => ({ content: { "application/json": { schema } }, description });
const conflict = { 409: json(ErrorDetail, "A live template of the project already has this name") };

const createTemplate = createRoute({
  method: "post",
  path: "/projects/{project_id}/annotation/templates",
  tags: TAGS,
  summary: "Create an annotation template",
  description: "Appends the template after the project's others. Names are unique among the project's templates (409).",
  request: { params: ProjectIdParam, body: { content: { "application/json": { schema: AnnotationTemplateCreate } }, required: true } },
  responses: { 200: json(AnnotationTemplateDB, "The template"), ...conflict, ...commonErrorResponses },
});

const listTemplates = createRoute({
  method: "get",
  path: "/projects/{project_id}/annotation/templates",
  tags: TAGS,
  summary: "List the project's annotation templates",
  request: { params: ProjectIdParam },
  responses: { 200: json(z.array(AnnotationTemplateDB), "The templates, in position order"), ...commonErrorResponses },
});

const getTemplate = createRoute({
  method: "get",
  path: "/projects/{project_id}/annotation/templates/{template_id}",
  tags: TAGS,
  summary: "Get an annotation template",
  request: { params: TemplatePath },
  responses: { 200: json(AnnotationTemplateDB, "The template"), ...commonErrorResponses },
});

const updateTemplate = createRoute({
  method: "patch",
  path: "/projects/{project_id}/annotation/templates/{template_id}",
  tags: TAGS,
  summary: "Rename an annotation template or change its criteria",
  description: "Only `name` and `criteria` change: a template's type and constraints are fixed, so that its ratings stay valid.",
  request: { params: TemplatePath, body: { content: { "application/json": { schema: AnnotationTemplateUpdate } }, required: true } },
  responses: { 200: json(AnnotationTemplateDB, "The template, changed"), ...conflict, ...commonErrorResponses },
});

const deleteTemplate = createRoute({
  method: "delete",
  path: "/projects/{project_id}/annotation/templates/{template_id}",
  tags: TAGS,
  summary: "Delete an annotation template and its ratings",
  description: `The template leaves every answer at once; its ratings are removed in chunks of ${TEMPLATE_DELETION.ratingChunk}, up to ${TEMPLATE_DELETION.requestChunks} chunks in the request and the rest by the minutely maintenance.`,
  request: { params: TemplatePath },
  responses: { 200: json(z.object({ message: z.string() }), "Deleted"), ...commonErrorResponses },
});

const reorderTemplates = createRoute({
  method: "post",
  path: "/projects/{project_id}/annotation/templates/reorder",
  tags: TAGS,
  summary: "Reorder the project's annotation templates",
  description: "`ordering` lists every template id of the project, once, in the new order.",
  request: { params: ProjectIdParam, body: { content: { "application/json": { schema: AnnotationTemplateReorder } }, required: true } },
  responses: { 200: json(z.array(AnnotationTemplateDB), "The templates, in their new order"), ...commonErrorResponses },
});

const rowsOf = (result: D1Result | undefined) => (result?.results ?? []) as TemplateRow[];

function duplicateName(name: string): ApiError {
  return new ApiError(409, `An annotation template named '${name}' already exists in this project`);
}

export function registerAnnotationTemplates(app: Router): void {
  app.openapi(createTemplate, async (c) => {
    const { project_id } = c.req.valid("param");
    const body = c.req.valid("json");
    const principal = c.get("principal");
    const id = crypto.randomUUID();
    try {
      const [, row] = await writeOnShard(c, project_id, (db) => [
        insertTemplateStatement(db, {
          id,
          organizationId: principal.organizationId,
          projectId: project_id,
          name: body.name,
          constraints: body.constraints,
          includeExplanation: body.include_explanation,
          criteria: body.criteria,
          createdBy: principal.userId,
          now: nowMicros(),
        }),
        templateStatement(db, project_id, id),
      ]);
      return c.json(templateShape(rowsOf(row)[0]!), 200);
    } catch (error) {
      if (isDuplicateTemplateName(error)) throw duplicateName(body.name);
      throw error;
    }
  });

  app.openapi(listTemplates, async (c) => {
    const { project_id } = c.req.valid("param");
    const [rows] = await readOnShard(c, project_id, (db) => [listTemplatesStatement(db, project_id)]);
    const templates = rowsOf(rows);
    await addUsageElsewhere(c, project_id, templates);
    return c.json(templates.map(templateShape), 200);
  });

  app.openapi(getTemplate, async (c) => {
    const { project_id, template_id } = c.req.valid("param");
    const [rows] = await readOnShard(c, project_id, (db) => [templateStatement(db, project_id, template_id)]);
    const row = rowsOf(rows)[0];
    if (!row) throw notFound("Annotation template");
    await addUsageElsewhere(c, project_id, [row]);
    return c.json(templateShape(row), 200);
  });

  app.openapi(updateTemplate, async (c) => {
    const { project_id, template_id } = c.req.valid("param");
    const body = c.req.valid("json");
    try {
      const [, rows] = await writeOnShard(c, project_id, (db) => [
        db
          .prepare(
            `UPDATE annotation_templates SET name = coalesce(?3, name), criteria = CASE WHEN ?4 THEN ?5 ELSE criteria END, updated_at = ?6
             WHERE id = ?1 AND project_id = ?2 AND deleted_at IS NULL`,
          )
          .bind(template_id, project_id, body.name ?? null, body.criteria !== undefined ? 1 : 0, body.criteria ?? null, nowMicros()),
        templateStatement(db, project_id, template_id),
      ]);
      const row = rowsOf(rows)[0];
      if (!row) throw notFound("Annotation template");
      await addUsageElsewhere(c, project_id, [row]);
      return c.json(templateShape(row), 200);
    } catch (error) {
      if (isDuplicateTemplateName(error)) throw duplicateName(body.name ?? "");
      throw error;
    }
  });

  app.openapi(deleteTemplate, async (c) => {
    const { project_id, template_id } = c.req.valid("param");
    const marked = await onShardForWrite(c, project_id, (db) => markTemplateDeleted(db, project_id, template_id, nowMicros()));
    if (!marked) throw notFound("Annotation template");
    // Its ratings on the shards of the project's other partitions first (ratings-elsewhere.ts),
    // then the project's shard's, which drops the template's row once its own are gone. A shard
    // elsewhere with more than the request's chunks keeps the rest (never shown: every read keeps
    // live templates only) until their records go; the project's shard's are then left to the
    // maintenance (docs/partitions.md, "Annotations").
    const elsewhereDone = await purgeRatingsElsewhere(c, project_id, template_id, TEMPLATE_DELETION.requestChunks);
    const outcome = elsewhereDone ? await onShardForWrite(c, project_id, (db) => purgeDeletedTemplate(db, template_id, TEMPLATE_DELETION.requestChunks)) : { gone: false };
    return c.json(
      { message: outcome.gone ? "The annotation template and its ratings were deleted." : "The annotation template was deleted; its remaining ratings are being removed in the background." },
      200,
    );
  });

  app.openapi(reorderTemplates, async (c) => {
    const { project_id } = c.req.valid("param");
    const { ordering } = c.req.valid("json");
    const list = JSON.stringify(ordering);
    // The new positions apply only if `ordering` is exactly the project's live templates, checked
    // in the statement itself, so a template created or deleted meanwhile cannot be left out.
    const [updated, rows] = await writeOnShard(c, project_id, (db) => [
      db
        .prepare(
          `UPDATE annotation_templates SET position = (SELECT j.key FROM json_each(?2) AS j WHERE j.value = annotation_templates.id), updated_at = ?3
           WHERE project_id = ?1 AND deleted_at IS NULL
             AND (SELECT count(DISTINCT value) FROM json_each(?2)) = json_array_length(?2)
             AND (SELECT count(*) FROM annotation_templates AS t WHERE t.project_id = ?1 AND t.deleted_at IS NULL) = json_array_length(?2)
             AND NOT EXISTS (SELECT 1 FROM annotation_templates AS t WHERE t.project_id = ?1 AND t.deleted_at IS NULL AND t.id NOT IN (SELECT value FROM json_each(?2)))`,
        )
        .bind(project_id, list, nowMicros()),
      listTemplatesStatement(db, project_id),
    ]);
    const templates = rowsOf(rows);
    await addUsageElsewhere(c, project_id, templates);
    if ((updated?.meta.changes ?? 0) === 0 && templates.length > 0) {
      throw new RequestValidationError([
        {
          loc: ["body", "ordering"],
          msg: `Value error, ordering must list every template of the project exactly once (${templates.length} templates)`,
          type: "value_error",
          input: ordering,
        },
      ]);
    }
    if (templates.length === 0 && ordering.length > 0) {
      throw new RequestValidationError([{ loc: ["body", "ordering"], msg: "Value error, the project has no annotation templates", type: "value_error", input: ordering }]);
    }
    return c.json(templates.map(templateShape), 200);
  });
}
