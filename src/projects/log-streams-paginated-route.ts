/**
 * `GET /v2/projects/{project_id}/log_streams/paginated` (and at the root): the log streams of a
 * project, a page at a time, as Galileo's `ListLogStreamResponse`. Galileo's Python SDK finds a
 * log stream by name by walking these pages (`limit=500`) before it creates one (contract
 * section 17); its model requires `log_streams`, each with `id`, `created_at`, `updated_at`,
 * `name` and `project_id`, and follows `next_starting_token` while `paginated` is true.
 *
 * Registered before `/log_streams/{log_stream_id}`, which would take "paginated" for an id.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { and, asc, eq } from "drizzle-orm";
import { database } from "../db/client";
import { runs } from "../db/schema";
import { commonErrorResponses, ProjectIdParam, queryBoolean } from "../http/common-schemas";
import type { Router } from "../http/create-router";
import { RunSchema, runShape } from "./project-shapes";
import { ownedProjectOrThrow } from "./run-access";

const MAX_LIMIT = 1000;

const PageQuery = z.object({
  starting_token: z.coerce.number().int().min(0).max(1_000_000).default(0).openapi({ description: "Zero-based offset of the page's first log stream." }),
  limit: z.coerce.number().int().min(1).max(MAX_LIMIT).default(100).openapi({ description: `Log streams per page (at most ${MAX_LIMIT}).` }),
  include_counts: queryBoolean(false).openapi({ description: "Accepted for Galileo's clients; counts are not part of this answer (search a run's records to count them)." }),
});

const ListLogStreamResponse = z
  .object({
    starting_token: z.number().int(),
    limit: z.number().int(),
    paginated: z.boolean().openapi({ description: "True when more log streams follow this page." }),
    next_starting_token: z.number().int().nullable(),
    log_streams: z.array(RunSchema),
  })
  .openapi("ListLogStreamResponse");

const listPaginated = createRoute({
  method: "get",
  path: "/projects/{project_id}/log_streams/paginated",
  tags: ["Projects"],
  summary: "List the log streams of a project, a page at a time (oldest first)",
  request: { params: ProjectIdParam, query: PageQuery },
  responses: {
    200: { content: { "application/json": { schema: ListLogStreamResponse } }, description: "A page of log streams" },
    ...commonErrorResponses,
  },
});

export function registerLogStreamPages(app: Router): void {
  app.openapi(listPaginated, async (c) => {
    const { project_id } = c.req.valid("param");
    const { starting_token, limit } = c.req.valid("query");
    const db = database(c.env.DB);
    await ownedProjectOrThrow(db, c.get("principal"), project_id);
    // One more than the page tells whether another page follows.
    const rows = await db
      .select()
      .from(runs)
      .where(and(eq(runs.projectId, project_id), eq(runs.kind, "log_stream")))
      .orderBy(asc(runs.createdAt), asc(runs.id))
      .limit(limit + 1)
      .offset(starting_token);
    const paginated = rows.length > limit;
    const page = rows.slice(0, limit);
    return c.json(
      {
        starting_token,
        limit,
        paginated,
        next_starting_token: paginated ? starting_token + page.length : null,
        log_streams: page.map(runShape),
      },
      200,
    );
  });
}
