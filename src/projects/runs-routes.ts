import { createRoute, z } from "@hono/zod-openapi";
import { and, asc, eq } from "drizzle-orm";
import { database } from "../db/client";
import { type RunKind, runs } from "../db/schema";
import { commonErrorResponses, ProjectIdParam, Uuid } from "../http/common-schemas";
import type { Router } from "../http/create-router";
import { notFound } from "../http/errors";
import { RunSchema, runShape } from "./project-shapes";
import { ensureRun } from "./create-project";
import { ownedProjectOrThrow } from "./run-access";

const CreateLogStreamBody = z.object({ name: z.string().min(1).max(256) }).openapi("CreateLogStreamRequest");

const CreateExperimentBody = z
  .object({
    name: z.string().min(1).max(256),
    task_type: z.union([z.number().int(), z.string()]).nullish(),
  })
  .openapi("CreateExperimentRequest");

const ListRunsQuery = z.object({ name: z.string().optional().openapi({ description: "Only the run with exactly this name." }) });

const SEGMENTS: Record<
  Exclude<RunKind, "metrics_testing">,
  { path: string; label: string; idParam: "log_stream_id" | "experiment_id"; body: typeof CreateLogStreamBody | typeof CreateExperimentBody }
> = {
  log_stream: { path: "log_streams", label: "log stream", idParam: "log_stream_id", body: CreateLogStreamBody },
  experiment: { path: "experiments", label: "experiment", idParam: "experiment_id", body: CreateExperimentBody },
};

export function registerRuns(app: Router): void {
  for (const [kind, { path, label, idParam, body }] of Object.entries(SEGMENTS) as [Exclude<RunKind, "metrics_testing">, (typeof SEGMENTS)["log_stream"]][]) {
    const list = createRoute({
      method: "get",
      path: `/projects/{project_id}/${path}`,
      tags: ["Projects"],
      summary: `List the ${label}s of a project`,
      request: { params: ProjectIdParam, query: ListRunsQuery },
      responses: {
        200: { content: { "application/json": { schema: z.array(RunSchema) } }, description: `${label}s, oldest first` },
        ...commonErrorResponses,
      },
    });
    const create = createRoute({
      method: "post",
      path: `/projects/{project_id}/${path}`,
      tags: ["Projects"],
      summary: `Create a ${label} (or get the existing one of that name)`,
      request: { params: ProjectIdParam, body: { content: { "application/json": { schema: body } }, required: true } },
      responses: {
        200: { content: { "application/json": { schema: RunSchema } }, description: `The ${label}` },
        ...commonErrorResponses,
      },
    });

    // One run by id: the galileo SDK's getLogStream(id) and getExperiment({ id }).
    const get = createRoute({
      method: "get",
      path: `/projects/{project_id}/${path}/{${idParam}}`,
      tags: ["Projects"],
      summary: `Get a ${label}`,
      request: { params: ProjectIdParam.extend({ [idParam]: Uuid.openapi({ param: { name: idParam, in: "path" } }) }) },
      responses: {
        200: { content: { "application/json": { schema: RunSchema } }, description: `The ${label}` },
        ...commonErrorResponses,
      },
    });

    app.openapi(get, async (c) => {
      const params = c.req.valid("param") as { project_id: string } & Record<typeof idParam, string>;
      const [row] = await database(c.env.DB)
        .select()
        .from(runs)
        .where(
          and(
            eq(runs.id, params[idParam]),
            eq(runs.projectId, params.project_id),
            eq(runs.kind, kind),
            eq(runs.organizationId, c.get("principal").organizationId),
          ),
        )
        .limit(1);
      if (!row) throw notFound(label[0]!.toUpperCase() + label.slice(1));
      return c.json(runShape(row), 200);
    });

    app.openapi(list, async (c) => {
      const { project_id } = c.req.valid("param");
      const { name } = c.req.valid("query");
      const principal = c.get("principal");
      const db = database(c.env.DB);
      await ownedProjectOrThrow(db, principal, project_id);
      const rows = await db
        .select()
        .from(runs)
        .where(and(eq(runs.projectId, project_id), eq(runs.kind, kind), name !== undefined ? eq(runs.name, name) : undefined))
        .orderBy(asc(runs.createdAt), asc(runs.id))
        .limit(1000);
      return c.json(rows.map(runShape), 200);
    });

    app.openapi(create, async (c) => {
      const { project_id } = c.req.valid("param");
      const input = c.req.valid("json") as z.infer<typeof CreateExperimentBody>;
      const principal = c.get("principal");
      const project = await ownedProjectOrThrow(database(c.env.DB), principal, project_id);
      const row = await ensureRun(c.env, principal, project, {
        kind,
        name: input.name,
        taskType: input.task_type == null ? null : String(input.task_type),
      });
      return c.json(runShape(row), 200);
    });
  }
}
