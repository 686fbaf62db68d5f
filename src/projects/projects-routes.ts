import { createRoute, z } from "@hono/zod-openapi";
import { and, asc, eq } from "drizzle-orm";
import { adminOnly, requireAdmin } from "../auth/authenticate";
import { database, nowMicros } from "../db/client";
import { projects } from "../db/schema";
import { adminOnlyResponse, commonErrorResponses, ProjectIdParam } from "../http/common-schemas";
import { notFound } from "../http/errors";
import { MAX_RETENTION_DAYS, MIN_RETENTION_DAYS } from "../retention/retention-policy";
import { rememberProjectRow } from "../shards/project-routing";
import type { Router } from "../http/create-router";
import { ProjectAnswerSchema, projectAnswer, projectAnswers } from "./project-answers";
import { ensureProject } from "./create-project";
import { ownedProjectOrThrow } from "./run-access";

const ListProjectsQuery = z.object({
  project_name: z.string().optional().openapi({ description: "Only the project with exactly this name." }),
  type: z.string().optional().openapi({ description: "Only projects of this type." }),
});

const RetentionDays = z
  .number()
  .int()
  .min(MIN_RETENTION_DAYS)
  .max(MAX_RETENTION_DAYS)
  .nullable()
  .openapi({
    description: `Days records are kept after their created_at (${MIN_RETENTION_DAYS} to ${MAX_RETENTION_DAYS}), or null to keep them for ever. Older records are hidden from searches at once and erased by the hourly expiry (docs/retention.md). Admins only.`,
    example: 90,
  });

const CreateProjectBody = z
  .object({
    name: z.string().min(1).max(256),
    type: z.string().min(1).max(64).default("gen_ai"),
    // Sent by Galileo's SDKs (contract section 17): the creator is always the caller, and there are
    // no example templates to create.
    created_by: z.string().nullish().openapi({ description: "Ignored: the caller is the creator." }),
    create_example_templates: z.boolean().nullish().openapi({ description: "Ignored: there are no example templates." }),
    retention_days: RetentionDays.optional().openapi({
      description: "The new project's retention in days (admins only); absent: the organization's default, which is null (for ever) unless set. Ignored when the project already exists.",
    }),
  })
  .openapi("CreateProjectRequest");

const UpdateProjectBody = z
  .object({ retention_days: RetentionDays })
  .openapi("UpdateProjectRequest");

const listProjects = createRoute({
  method: "get",
  path: "/projects",
  tags: ["Projects"],
  summary: "List the organization's projects",
  request: { query: ListProjectsQuery },
  responses: {
    200: { content: { "application/json": { schema: z.array(ProjectAnswerSchema) } }, description: "Projects, oldest first" },
    ...commonErrorResponses,
  },
});

const createProject = createRoute({
  method: "post",
  path: "/projects",
  tags: ["Projects"],
  summary: "Create a project (or get the existing one of that name)",
  description: "Idempotent by name within the organization: concurrent creates of one name all receive the same project.",
  request: { body: { content: { "application/json": { schema: CreateProjectBody } }, required: true } },
  responses: {
    200: { content: { "application/json": { schema: ProjectAnswerSchema } }, description: "The project" },
    ...adminOnlyResponse,
    ...commonErrorResponses,
  },
});

const AllProjectsQuery = z.object({
  project_type: z.string().optional().openapi({ description: "Only projects of this type." }),
});

/** The galileo SDK's getProjects(): every project of the organization. */
const listAllProjects = createRoute({
  method: "get",
  path: "/projects/all",
  tags: ["Projects"],
  summary: "List all the organization's projects",
  request: { query: AllProjectsQuery },
  responses: {
    200: { content: { "application/json": { schema: z.array(ProjectAnswerSchema) } }, description: "Projects, oldest first" },
    ...commonErrorResponses,
  },
});

const updateProject = createRoute({
  method: "patch",
  path: "/projects/{project_id}",
  tags: ["Projects"],
  summary: "Change a project's retention",
  description:
    "Sets `retention_days` (1 to 3650, or null for \"keep for ever\"). A shorter retention hides the older records from searches at once (within five minutes on every edge location) and the next hourly expiry erases them; a longer one or null stops hiding what has not been erased yet. Admins only.",
  middleware: [adminOnly] as const,
  request: { params: ProjectIdParam, body: { content: { "application/json": { schema: UpdateProjectBody } }, required: true } },
  responses: {
    200: { content: { "application/json": { schema: ProjectAnswerSchema } }, description: "The project, changed" },
    ...adminOnlyResponse,
    ...commonErrorResponses,
  },
});

const getProject = createRoute({
  method: "get",
  path: "/projects/{project_id}",
  tags: ["Projects"],
  summary: "Get a project",
  request: { params: ProjectIdParam },
  responses: {
    200: { content: { "application/json": { schema: ProjectAnswerSchema } }, description: "The project" },
    ...commonErrorResponses,
  },
});

export function registerProjects(app: Router): void {
  app.openapi(listProjects, async (c) => {
    const { project_name, type } = c.req.valid("query");
    const principal = c.get("principal");
    const rows = await database(c.env.DB)
      .select()
      .from(projects)
      .where(
        and(
          eq(projects.organizationId, principal.organizationId),
          project_name !== undefined ? eq(projects.name, project_name) : undefined,
          type !== undefined ? eq(projects.type, type) : undefined,
        ),
      )
      .orderBy(asc(projects.createdAt), asc(projects.id))
      .limit(1000);
    return c.json(await projectAnswers(database(c.env.DB), rows), 200);
  });

  app.openapi(createProject, async (c) => {
    const { name, type, retention_days } = c.req.valid("json");
    const principal = c.get("principal");
    // How long data is kept is an admin's decision, as with PATCH.
    if (retention_days !== undefined) requireAdmin(principal);
    return c.json(await projectAnswer(database(c.env.DB), await ensureProject(c.env, principal, name, type, retention_days)), 200);
  });

  // Before `/projects/{project_id}`: "all" is not a project id.
  app.openapi(listAllProjects, async (c) => {
    const { project_type } = c.req.valid("query");
    const rows = await database(c.env.DB)
      .select()
      .from(projects)
      .where(and(eq(projects.organizationId, c.get("principal").organizationId), project_type !== undefined ? eq(projects.type, project_type) : undefined))
      .orderBy(asc(projects.createdAt), asc(projects.id))
      .limit(1000);
    return c.json(await projectAnswers(database(c.env.DB), rows), 200);
  });

  app.openapi(updateProject, async (c) => {
    const { project_id } = c.req.valid("param");
    const { retention_days } = c.req.valid("json");
    const principal = c.get("principal");
    const [row] = await database(c.env.DB)
      .update(projects)
      .set({ retentionDays: retention_days, updatedAt: nowMicros() })
      .where(and(eq(projects.id, project_id), eq(projects.organizationId, principal.organizationId)))
      .returning();
    if (!row) throw notFound("Project");
    // This isolate's searches see the new cut-off at once; others when their cached route expires.
    rememberProjectRow(row);
    return c.json(await projectAnswer(database(c.env.DB), row), 200);
  });

  app.openapi(getProject, async (c) => {
    const { project_id } = c.req.valid("param");
    const db = database(c.env.DB);
    const project = await ownedProjectOrThrow(db, c.get("principal"), project_id);
    return c.json(await projectAnswer(db, project), 200);
  });
}
