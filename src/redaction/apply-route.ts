/**
 * `POST /v2/projects/{pid}/redaction/apply?dry_run=` `{start_time?, end_time?}` (admins): masks
 * the records stored before the policy, selected by created_at in `[start, end)`. A dry run counts
 * in the request (`{records, would_change}`; `complete: false` when the count stopped at its time
 * budget, the counts then a lower bound); a run is a queued org-job (apply-job.ts).
 */
import { createRoute, z } from "@hono/zod-openapi";
import { adminOnly } from "../auth/authenticate";
import { database } from "../db/client";
import { adminOnlyResponse, commonErrorResponses, ProjectIdParam, queryBoolean, tooLargeResponse } from "../http/common-schemas";
import type { Router } from "../http/create-router";
import { RequestValidationError } from "../http/errors";
import { isoToMicros } from "../ingest/timestamps";
import { ownedProjectOrThrow } from "../projects/run-access";
import { onProjectShard } from "../shards/project-shard";
import { countRedaction, insertRedactionJob } from "./apply-job";
import { compilePolicy } from "./policy";
import { readPolicy } from "./policy-store";

/** How long a dry run counts inside the request. */
const DRY_RUN_BUDGET_MS = 20_000;

const ApplyBody = z
  .object({
    start_time: z.string().datetime({ offset: true }).nullable().optional().openapi({ description: "Records created at or after this time (default: the first)" }),
    end_time: z.string().datetime({ offset: true }).nullable().optional().openapi({ description: "Records created before this time (default: now and later)" }),
  })
  .openapi("RedactionApplyRequest");

const apply = createRoute({
  method: "post",
  path: "/projects/{project_id}/redaction/apply",
  tags: ["Redaction"],
  summary: "Mask records stored before the policy",
  description:
    "Rewrites the project's records created in `[start_time, end_time)` (and its held streaming updates) with the saved policy, as a job: `GET /v2/org-jobs/{job_id}` (`job_name: redact`, progress `{records_scanned, records_changed}`). `dry_run=true` answers `{records, would_change}` and changes nothing. With the policy disabled nothing changes: a dry run counts the records with `would_change: 0`, a run answers `job_id: null`. Admins only.",
  middleware: [adminOnly] as const,
  request: {
    params: ProjectIdParam,
    query: z.object({ dry_run: queryBoolean(false) }),
    body: { content: { "application/json": { schema: ApplyBody } }, required: false },
  },
  responses: {
    200: {
      content: {
        "application/json": {
          schema: z.union([
            z.object({ job_id: z.string().nullable(), message: z.string() }),
            z.object({ records: z.number().int(), would_change: z.number().int(), complete: z.boolean() }),
          ]),
        },
      },
      description: "The job, or the dry run's counts",
    },
    ...adminOnlyResponse,
    ...tooLargeResponse,
    ...commonErrorResponses,
  },
});

export function registerRedactionApply(app: Router): void {
  app.openapi(apply, async (c) => {
    const { project_id } = c.req.valid("param");
    const { dry_run } = c.req.valid("query");
    const body = c.req.valid("json") ?? {};
    const range = { start: body.start_time ? (isoToMicros(body.start_time) ?? null) : null, end: body.end_time ? (isoToMicros(body.end_time) ?? null) : null };
    if (range.start !== null && range.end !== null && range.end <= range.start) {
      const msg = "Value error, end_time must be after start_time";
      throw new RequestValidationError([{ loc: ["body", "end_time"], msg, type: "value_error", input: body.end_time, ctx: { error: msg.replace("Value error, ", "") } }]);
    }
    const principal = c.get("principal");
    await ownedProjectOrThrow(database(c.env.DB), principal, project_id);
    const policy = await readPolicy(c.env.DB, project_id);
    const compiled = compilePolicy(policy);
    if (dry_run) {
      // A disabled policy masks nothing: its dry run counts the records, none of which would change.
      const counting = compiled ?? { mode: "mask" as const, matchers: [], fields: new Set<never>() };
      const counts = await onProjectShard(c, project_id, "read", ({ db }) => countRedaction(db, project_id, range, counting, DRY_RUN_BUDGET_MS));
      return c.json(counts, 200);
    }
    if (!compiled) {
      return c.json({ job_id: null, message: "Redaction is disabled for this project (or covers no field): nothing to rewrite. Enable a policy with PUT .../redaction first." }, 200);
    }
    const jobId = await insertRedactionJob(c.env, {
      organizationId: principal.organizationId,
      createdBy: principal.userId,
      projectId: project_id,
      range,
      policy,
      request: { project_id, start_time: body.start_time ?? null, end_time: body.end_time ?? null },
    });
    return c.json({ job_id: jobId, message: `Redaction job queued: follow it with GET /v2/org-jobs/${jobId}` }, 200);
  });
}
