/**
 * `POST /v2/org-jobs/delete-by-metadata` and `GET /v2/org-jobs/{job_id}` (contract, section 6).
 * Both are for organization admins: deletion jobs name metadata values (often a person's
 * identifier), which members have no need to read.
 */
import { createRoute } from "@hono/zod-openapi";
import type { Context } from "hono";
import { adminOnly } from "../auth/authenticate";
import type { AppEnv } from "../http/app-env";
import { adminOnlyResponse, commonErrorResponses } from "../http/common-schemas";
import type { Router } from "../http/create-router";
import { notFound } from "../http/errors";
import { withinScanAdmission } from "../limits/scan-admission";
import { countDeletionSet, DRY_RUN_COST } from "./count-deletion-set";
import { describeCounts, jobAnswer, organizationJob, organizationJobs } from "./deletion-jobs";
import {
  DeleteByMetadataQuery,
  JobIdParam,
  ListOrgJobsQuery,
  OrgJobList,
  OrgJob,
  OrgMetadataDeleteRequest,
  OrgMetadataDeleteResponse,
} from "./deletion-schemas";
import { anyMatch, deleteWithinRequest, startQueuedDeletion } from "./start-deletion";

const deleteByMetadata = createRoute({
  method: "post",
  path: "/org-jobs/delete-by-metadata",
  tags: ["Organization jobs"],
  summary: "Delete every session, trace and span of the organization whose user_metadata[key] equals value",
  description: [
    "Deletes, in every project and run of the caller's organization, each session, trace and span whose `user_metadata[metadata_key]` equals `metadata_value` exactly, with all traces of such a session, all spans of such traces, every span below such a span, their metadata, tags and metrics, and the streaming updates held for them. Erased ids are tombstoned for seven days: a record or update that arrives later naming one of them is not stored.",
    "Default: a job is queued and its id returned at once; follow it with `GET /v2/org-jobs/{job_id}`. `immediate=true` deletes inside the request up to a fixed budget (5 s or 10,000 records): if that finishes, `job_id` is null and `deleted` gives the counts, otherwise the rest continues as the returned job. `dry_run=true` only counts (`would_delete`; `would_delete_is_exact` is false when the count stopped at its bound of 20,000 matching records); a dry run counts every record below each match, so it is a scan-class request for the organization's limits (a 429 with `Retry-After` when its scans are at their limit).",
    "`job_id` is null when nothing matches. Admins only.",
  ].join("\n\n"),
  middleware: [adminOnly] as const,
  request: {
    query: DeleteByMetadataQuery,
    body: { content: { "application/json": { schema: OrgMetadataDeleteRequest } }, required: true },
  },
  responses: {
    200: { content: { "application/json": { schema: OrgMetadataDeleteResponse } }, description: "Queued, done, or counted" },
    ...adminOnlyResponse,
    ...commonErrorResponses,
  },
});

const getOrgJob = createRoute({
  method: "get",
  path: "/org-jobs/{job_id}",
  tags: ["Organization jobs"],
  summary: "Status and progress of an organization job",
  description: "Another organization's job is a 404. Admins only.",
  middleware: [adminOnly] as const,
  request: { params: JobIdParam },
  responses: {
    200: { content: { "application/json": { schema: OrgJob } }, description: "The job" },
    ...adminOnlyResponse,
    ...commonErrorResponses,
  },
});

const listOrgJobs = createRoute({
  method: "get",
  path: "/org-jobs",
  tags: ["Organization jobs"],
  summary: "List the organization's jobs, newest first",
  description:
    "Deletion requests (`delete_by_metadata`) and retention expiries (`expire_retention`, created by the hourly cron for projects with `retention_days`), newest first, filtered by `job_name` and `status`, paginated by `starting_token` and `limit`. Admins only.",
  middleware: [adminOnly] as const,
  request: { query: ListOrgJobsQuery },
  responses: {
    200: { content: { "application/json": { schema: OrgJobList } }, description: "A page of jobs" },
    ...adminOnlyResponse,
    ...commonErrorResponses,
  },
});

/** The execution context's waitUntil where there is one (always, inside workerd). */
export function waitUntilOf(c: Context<AppEnv>): (work: Promise<unknown>) => void {
  try {
    const ctx = c.executionCtx;
    return (work) => ctx.waitUntil(work);
  } catch {
    return () => undefined;
  }
}

export function registerDeletion(app: Router): void {
  app.openapi(deleteByMetadata, async (c) => {
    const { immediate, dry_run } = c.req.valid("query");
    const { metadata_key, metadata_value } = c.req.valid("json");
    const principal = c.get("principal");
    const selector = { organizationId: principal.organizationId, key: metadata_key, value: metadata_value };
    const what = `user_metadata[${JSON.stringify(metadata_key)}] = ${JSON.stringify(metadata_value)}`;

    if (dry_run) {
      const { counts, exact } = await withinScanAdmission(c.env, principal.organizationId, DRY_RUN_COST, () => countDeletionSet(c.env, selector));
      const amount = exact ? describeCounts(counts) : `at least ${describeCounts(counts)} (the count stopped there: more match)`;
      return c.json(
        { job_id: null, message: `Dry run: deleting ${what} would remove ${amount}. Nothing was deleted.`, would_delete: counts, would_delete_is_exact: exact },
        200,
      );
    }
    if (!(await anyMatch(c.env, selector))) {
      return c.json({ job_id: null, message: `No session, trace or span of the organization has ${what}: nothing to delete.` }, 200);
    }
    const submitter = { organizationId: principal.organizationId, userId: principal.userId };
    const request = { metadata_key, metadata_value, immediate };
    if (!immediate) {
      const jobId = await startQueuedDeletion(c.env, submitter, request);
      return c.json({ job_id: jobId, message: `Deletion of every session, trace and span with ${what} is queued as job ${jobId}; follow it with GET /v2/org-jobs/${jobId}.` }, 200);
    }
    const outcome = await deleteWithinRequest(c.env, submitter, request, waitUntilOf(c));
    if (outcome.finished) {
      return c.json({ job_id: null, message: `Deleted ${describeCounts(outcome.deleted)} with ${what}.`, deleted: outcome.deleted }, 200);
    }
    return c.json(
      {
        job_id: outcome.jobId,
        message: `Deleted ${describeCounts(outcome.deleted)} with ${what} within the request's budget; the rest continues as job ${outcome.jobId} (GET /v2/org-jobs/${outcome.jobId}).`,
        deleted: outcome.deleted,
      },
      200,
    );
  });

  app.openapi(listOrgJobs, async (c) => {
    const { job_name, status, starting_token, limit } = c.req.valid("query");
    const rows = await organizationJobs(c.env.DB, c.get("principal").organizationId, { jobName: job_name, status, offset: starting_token, limit: limit + 1 });
    const paginated = rows.length > limit;
    const jobs = rows.slice(0, limit).map(jobAnswer);
    return c.json({ jobs, starting_token, limit, paginated, next_starting_token: paginated ? starting_token + jobs.length : null }, 200);
  });

  app.openapi(getOrgJob, async (c) => {
    const { job_id } = c.req.valid("param");
    const row = await organizationJob(c.env.DB, c.get("principal").organizationId, job_id);
    if (!row) throw notFound("Job");
    return c.json(jobAnswer(row), 200);
  });
}
