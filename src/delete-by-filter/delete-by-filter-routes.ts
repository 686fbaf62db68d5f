/**
 * `POST /v2/projects/{project_id}/{traces|spans|sessions}/delete` (contract section 10): deletes
 * the records of one kind of one run that a search filter matches, each with its descendants,
 * through the deletion engine (src/deletion; docs/deletion.md, "Deletion by filter"). Admins only.
 *
 * The selector is the search's: the same body, validation (422s pointing at the leaf) and filter
 * compiler, so a deletion removes exactly what `partial_search` with the same filter shows. The
 * statement is compiled once here and stored on the job, which re-runs it before each chunk:
 * every chunk matches live records. A dry run, and every chunk, is admitted by the statement's
 * scan class (src/search/search-cost.ts), as the search itself would be.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { adminOnly } from "../auth/authenticate";
import type { RecordFamily } from "../columns/standard-columns";
import { database } from "../db/client";
import { describeCounts, DELETE_BY_FILTER, insertOrgJob } from "../deletion/deletion-jobs";
import { waitUntilOf } from "../deletion/deletion-routes";
import { continueWithinRequest } from "../deletion/start-deletion";
import { adminOnlyResponse, commonErrorResponses, ProjectIdParam } from "../http/common-schemas";
import type { Router } from "../http/create-router";
import { ownedRunWithProject } from "../projects/run-access";
import { refineRunSelector, runSelectorOf } from "../projects/run-selector";
import { onProjectReadShards } from "../partitions/read-shards";
import { onProjectShard } from "../shards/project-shard";
import { bindAnnotationColumns } from "../search/bind-annotation-columns";
import { compileSearchQuery } from "../search/compile-search-query";
import { normalizeSearchRequest } from "../search/normalize-search-request";
import { classifySearchCost, withinSearchAdmission } from "../search/search-cost";
import { idsOnlyQuery } from "../search/search-query";
import { ROUTE_SEGMENT, SEARCH_FAMILIES } from "../search/search-routes";
import { PartialSearchRequestSchema } from "../search/search-schemas";
import { addCounts, countFilterDeletion, DRY_RUN_CAP } from "./count-filter-deletion";

/**
 * The most roots one chunk's selection may return; the engine's chunk limits (chunk-sizer.ts)
 * pick fewer. The compiled statement is an index walk in native order that stops at its LIMIT.
 */
const SELECTION_LIMIT = 10_000;

const DeleteByFilterBody = PartialSearchRequestSchema.superRefine(refineRunSelector);

const DeleteByFilterQuery = z.object({
  dry_run: z
    .enum(["true", "false"])
    .default("false")
    .transform((value) => value === "true")
    .openapi({ description: "Only count what would be deleted." }),
});

const Counts = z.object({ sessions: z.number().int(), traces: z.number().int(), spans: z.number().int() });

const DeleteByFilterResponse = z
  .object({
    job_id: z.string().nullable().openapi({ description: "Set when the deletion continues as a job past the request's budget." }),
    message: z.string(),
    deleted: Counts.optional(),
    would_delete: Counts.optional(),
    would_delete_is_exact: z.boolean().optional(),
  })
  .openapi("DeleteByFilterResponse");

function deleteRoute(family: RecordFamily) {
  const segment = ROUTE_SEGMENT[family];
  return createRoute({
    method: "post",
    path: `/projects/{project_id}/${segment}/delete`,
    tags: ["Organization jobs"],
    summary: `Delete the ${segment} of a run that match a filter, with their descendants`,
    description: [
      `Takes the body of \`${segment}/partial_search\` (run selector, \`filters\`, \`filter_tree\`; pagination, sort and select_columns are ignored) and deletes every matching record with its descendants (a session's traces and spans, a trace's spans, a span's spans below it), tombstoning their ids for seven days, in bounded chunks through the deletion engine. The deletion runs inside the request up to a budget (5 s or 10,000 records); past it, the rest continues as a \`delete_by_filter\` job whose id is returned (\`GET /v2/org-jobs/{job_id}\`). Each chunk matches the records as they are then.`,
      `\`dry_run=true\` only counts (\`would_delete\`; \`would_delete_is_exact\` is false when more than ${DRY_RUN_CAP} records match the filter). Admins only.`,
    ].join("\n\n"),
    middleware: [adminOnly] as const,
    request: {
      params: ProjectIdParam,
      query: DeleteByFilterQuery,
      body: { content: { "application/json": { schema: DeleteByFilterBody } }, required: true },
    },
    responses: {
      200: { content: { "application/json": { schema: DeleteByFilterResponse } }, description: "Deleted, continuing as a job, or counted" },
      ...adminOnlyResponse,
      ...commonErrorResponses,
    },
  });
}

const noun: Record<RecordFamily, string> = { session: "session", trace: "trace", span: "span" };

export function registerDeleteByFilter(app: Router): void {
  for (const family of SEARCH_FAMILIES) {
    app.openapi(deleteRoute(family), async (c) => {
      const { project_id } = c.req.valid("param");
      const { dry_run } = c.req.valid("query");
      const body = c.req.valid("json");
      const principal = c.get("principal");
      const selector = runSelectorOf(body);
      const searched = normalizeSearchRequest(body, family, "partial");
      // Only the ids of the matches, in the native order (an index walk): no sort, no counts.
      const query = idsOnlyQuery(searched, SELECTION_LIMIT);
      // Another organization's project or run, or an unknown one: 404 before anything is read.
      const run = await ownedRunWithProject(database(c.env.DB), principal, project_id, selector);
      // Annotation leaves are checked against the project's templates, which live on its shard.
      await onProjectShard(c, project_id, "read", ({ db }) => bindAnnotationColumns(db, project_id, query));
      const statement = compileSearchQuery(query, { organizationId: principal.organizationId, projectId: project_id, runId: run.runId, runKind: run.kind });
      const what = `the ${family}s of run ${run.runId} matching the filter`;

      if (dry_run) {
        // Every shard holding a partition of the project counts its part (contract section 13).
        const { counts, exact } = addCounts(
          await withinSearchAdmission(c.env, principal.organizationId, query, () =>
            onProjectReadShards(c, project_id, ({ db }) => countFilterDeletion(db, family, statement, run.runId)),
          ),
        );
        const amount = exact ? describeCounts(counts) : `at least ${describeCounts(counts)} (the count stopped there: more match)`;
        return c.json({ job_id: null, message: `Dry run: deleting ${what} would remove ${amount}. Nothing was deleted.`, would_delete: counts, would_delete_is_exact: exact }, 200);
      }

      // The shards where something matches: the project's own (reached as for a write, so that a
      // project frozen by a move answers 503) and those of its other partitions. One job part each.
      const probed = await withinSearchAdmission(c.env, principal.organizationId, query, () =>
        onProjectReadShards(
          c,
          project_id,
          async ({ db }) => (await db.prepare(`SELECT id FROM (${statement.sql}) LIMIT 1`).bind(...statement.params).first()) !== null,
          "write",
        ),
      );
      const shards = probed.filter((part) => part.answer).map((part) => part.shard);
      if (shards.length === 0) return c.json({ job_id: null, message: `No ${noun[family]} of run ${run.runId} matches the filter: nothing to delete.` }, 200);

      const jobId = await insertOrgJob(c.env, {
        organizationId: principal.organizationId,
        createdBy: principal.userId,
        jobName: DELETE_BY_FILTER,
        status: "running",
        shards,
        request: {
          project_id,
          run_id: run.runId,
          root_type: family,
          filters: body.filters ?? [],
          filter_tree: body.filter_tree ?? null,
          immediate: true,
          selection: { sql: statement.sql, parameter: statement.params[0] },
          cost: classifySearchCost(query),
        },
      });
      const outcome = await continueWithinRequest(c.env, principal.organizationId, jobId, waitUntilOf(c));
      if (outcome.finished) return c.json({ job_id: null, message: `Deleted ${describeCounts(outcome.deleted)}: ${what}, with their descendants.`, deleted: outcome.deleted }, 200);
      return c.json(
        {
          job_id: jobId,
          message: `Deleted ${describeCounts(outcome.deleted)} of ${what} within the request's budget; the rest continues as job ${jobId} (GET /v2/org-jobs/${jobId}).`,
          deleted: outcome.deleted,
        },
        200,
      );
    });
  }
}
