/**
 * Queued exports to R2 (contract section 10; docs/export.md "Queued export to R2"):
 *
 * - `POST /v2/projects/{project_id}/export_records/url` (members): the same body as the streamed
 *   export, checked the same way (its 422s, the run, the annotation columns), stored as an
 *   `export_records` org-job; answers at once with the signed download URL, valid 24 hours.
 * - `GET /v2/exports/{job_id}/file?expires=…&signature=…` (no other credentials: the signature
 *   is one): 409 with Retry-After until the job is done, then the file; 410 once it expired, was
 *   erased (a deletion or expiry ran after it was made) or the job failed.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { database, microsToIso, nowMicros } from "../db/client";
import { commonErrorResponses, ErrorDetail, ProjectIdParam, retryableErrorResponses } from "../http/common-schemas";
import type { Router } from "../http/create-router";
import { ApiError, notFound } from "../http/errors";
import { ownedRunWithProject } from "../projects/run-access";
import { runSelectorOf } from "../projects/run-selector";
import { onProjectShard } from "../shards/project-shard";
import { bindAnnotationColumns } from "../search/bind-annotation-columns";
import { downloadSignatureValid, downloadUrl } from "./download-signature";
import { CONTENT_TYPES, sanitizedFileName } from "./export-formats";
import { exportFileState, insertExportJob } from "./export-jobs";
import { ExportBody, exportQueryOf } from "./export-request";

/** Seconds a client is asked to wait before asking again for a file not ready yet. */
const NOT_READY_RETRY_SECONDS = 5;

const ExportUrlAnswer = z
  .object({
    url: z.string().openapi({ description: "The file's download route, signed: no other credentials needed until url_expires_at." }),
    url_expires_at: z.string().openapi({ description: "When the URL, and the file, stop being served (24 hours)." }),
    file_name: z.string(),
    content_type: z.string(),
    job_id: z.string().openapi({ description: "The export's org-job: GET /v2/org-jobs/{job_id} (progress: records_exported, bytes_written)." }),
  })
  .openapi("ExportUrlResponse");

const exportUrlRoute = createRoute({
  method: "post",
  path: "/projects/{project_id}/export_records/url",
  tags: ["Export"],
  summary: "Export a run's records to a file (a queued job), answering its download URL",
  description:
    "The export of `POST /v2/projects/{project_id}/export_records` (same body, same formats and order), run as a queued job that writes the file to R2. Answers at once with a signed download URL valid 24 hours: it answers 409 with `Retry-After` until the job is done, then the file. Follow the job with `GET /v2/org-jobs/{job_id}`. Members may export. See docs/export.md.",
  request: {
    params: ProjectIdParam,
    body: { content: { "application/json": { schema: ExportBody } }, required: true },
  },
  responses: {
    200: { content: { "application/json": { schema: ExportUrlAnswer } }, description: "The export is queued" },
    ...commonErrorResponses,
  },
});

export function registerExportUrl(app: Router): void {
  app.openapi(exportUrlRoute, async (c) => {
    const { project_id } = c.req.valid("param");
    const body = c.req.valid("json");
    const principal = c.get("principal");
    // Everything the queued job will check, checked now: its failures are this request's 4xx.
    const { base } = exportQueryOf(body);
    const run = await ownedRunWithProject(database(c.env.DB), principal, project_id, runSelectorOf(body));
    await onProjectShard(c, project_id, "read", ({ db }) => bindAnnotationColumns(db, project_id, base));
    const fileName = sanitizedFileName(body.file_name, body.root_type, body.export_format);
    const contentType = CONTENT_TYPES[body.export_format];
    const { jobId, expiresAt, objectKey } = await insertExportJob(c.env, {
      organizationId: principal.organizationId,
      createdBy: principal.userId,
      request: { project_id, run_id: run.runId, run_kind: run.kind, body },
      fileName,
      contentType,
      format: body.export_format,
    });
    await c.env.EXPORT_QUEUE.send({ jobId });
    const expires = Math.floor(expiresAt / 1_000_000);
    const url = await downloadUrl(c.env, new URL(c.req.url).origin, { organizationId: principal.organizationId, jobId, objectKey, expires });
    return c.json({ url, url_expires_at: microsToIso(expires * 1_000_000), file_name: fileName, content_type: contentType, job_id: jobId }, 200);
  });
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const errorAnswer = (description: string) => ({ content: { "application/json": { schema: ErrorDetail } }, description });

/**
 * The download route. Its URL is made by the service (`export_records/url` answers it), never by
 * a client, so its query is read as given: a missing or malformed `expires` is a signature
 * mismatch (403), not a 422. Anything but that URL is a 404 (no such export) or a 403.
 */
const exportDownloadRoute = createRoute({
  method: "get",
  path: "/exports/{job_id}/file",
  tags: ["Export"],
  summary: "Download a queued export's file by its signed URL",
  description:
    "The URL `POST /v2/projects/{project_id}/export_records/url` answered, as it is: its signature is the credential (no API key or token). 409 with `Retry-After` until the job is done, then the file for 24 hours; 410 once it expired, failed, or records of the organization were erased after it was made. See docs/export.md.",
  security: [],
  request: {
    params: z.object({ job_id: z.string().openapi({ param: { name: "job_id", in: "path" }, description: "The export's org-job id" }) }),
    query: z.object({
      expires: z.string().optional().openapi({ description: "Unix seconds the URL is valid until (as signed)" }),
      signature: z.string().optional().openapi({ description: "The service's signature of the job, file and expiry" }),
    }),
  },
  responses: {
    200: {
      content: {
        "application/x-ndjson": { schema: { type: "string" } },
        "text/csv": { schema: { type: "string" } },
      },
      description: "The file (`jsonl` and `jsonl_flat`: JSON lines; `csv`), as an attachment",
    },
    403: errorAnswer("The signature does not match this URL"),
    404: errorAnswer("No such export"),
    409: { ...errorAnswer("The export is still running: retry after `Retry-After` seconds"), headers: { "Retry-After": { schema: { type: "integer" as const, minimum: 1 } } } },
    410: errorAnswer("The URL expired, the job failed, or the file was removed after an erasure: export again"),
    ...retryableErrorResponses,
  },
});

export function registerExportDownload(app: Router): void {
  app.openapi(exportDownloadRoute, async (c) => {
    const jobId = c.req.param("job_id").toLowerCase();
    const expires = Number(c.req.query("expires"));
    const signature = c.req.query("signature") ?? "";
    if (!UUID.test(jobId)) throw notFound("Export");
    const state = await exportFileState(c.env, jobId);
    if (!state) throw notFound("Export");
    const file = { organizationId: state.organizationId, jobId: state.jobId, objectKey: state.objectKey, expires };
    if (!Number.isSafeInteger(expires) || signature.length > 128 || !(await downloadSignatureValid(c.env, file, signature))) throw new ApiError(403, "The download URL's signature does not match.");
    const now = nowMicros();
    if (expires * 1_000_000 <= now || state.expiresAt <= now || state.removedAt !== null) {
      throw new ApiError(410, state.erasedAt !== null ? "This export was removed: records of the organization were erased after it was made. Export again." : "This export's URL has expired (files are kept 24 hours). Export again.");
    }
    if (state.status === "failed") throw new ApiError(410, "This export failed; nothing will be served. Export again (GET /v2/org-jobs/{job_id} says why).");
    if (state.status !== "completed") {
      throw new ApiError(409, `The export is still running (${state.recordsExported} records written so far); retry in a moment.`, { "Retry-After": String(NOT_READY_RETRY_SECONDS) });
    }
    const object = await c.env.EXPORTS.get(state.objectKey);
    if (!object) throw new ApiError(410, "This export's file is gone. Export again.");
    return new Response(object.body, {
      status: 200,
      headers: {
        "content-type": state.contentType,
        "content-disposition": `attachment; filename="${state.fileName}"`,
        "content-length": String(object.size),
        "cache-control": "private, no-store",
      },
    }) as never;
  });
  // Everything else under /v2/exports/ is the signed download's space too (registered before
  // authentication): an empty or extra path segment is no such export, not a 401 that would
  // send a client looking for credentials this route never takes.
  app.get("/exports/*", () => {
    throw notFound("Export");
  });
}
