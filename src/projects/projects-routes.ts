import { createRoute, z } from "@hono/zod-openapi";
import { and, asc, eq } from "drizzle-orm";
import { database } from "../db/client";
import { projects } from "../db/schema";
import { commonErrorResponses, ProjectIdParam } from "../http/common-schemas";
import type { Router } from "../http/create-router";
import { ProjectSchema, projectShape } from "./project-shapes";
import { ensureProject } from "./create-project";
import { ownedProjectOrThrow } from "./run-access";

const ListProjectsQuery = z.object({
  project_name: z.string().optional().openapi({ description: "Only the project with exactly this name." }),
  type: z.string().optional().openapi({ description: "Only projects of this type." }),
});

const CreateProjectBody = z
  .object({
    name: z.string().min(1).max(256),
    type: z.string().min(1).max(64).default("gen_ai"),
  })
  .openapi("CreateProjectRequest");

const listProjects = createRoute({
  method: "get",
  path: "/projects",
  tags: ["Projects"],
  summary: "List the organization's projects",
  request: { query: ListProjectsQuery },
  responses: {
    200: { content: { "application/json": { schema: z.array(ProjectSchema) } }, description: "Projects, oldest first" },
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
    200: { content: { "application/json": { schema: ProjectSchema } }, description: "The project" },
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
    200: { content: { "application/json": { schema: z.array(ProjectSchema) } }, description: "Projects, oldest first" },
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
    200: { content: { "application/json": { schema: ProjectSchema } }, description: "The project" },
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
    return c.json(rows.map(projectShape), 200);
  });

  app.openapi(createProject, async (c) => {
    const { name, type } = c.req.valid("json");
    return c.json(projectShape(await ensureProject(c.env, c.get("principal"), name, type)), 200);
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
    return c.json(rows.map(projectShape), 200);
  });

  app.openapi(getProject, async (c) => {
    const { project_id } = c.req.valid("param");
    const project = await ownedProjectOrThrow(database(c.env.DB), c.get("principal"), project_id);
    return c.json(projectShape(project), 200);
  });
}
