/**
 * The OpenTelemetry intake: `POST /otel/v1/traces` (so `OTEL_EXPORTER_OTLP_ENDPOINT=<base>/otel`
 * works with every OTel SDK, which appends `/v1/traces`) and `POST /otel/traces` (Galileo's
 * path), at the root and under /v2. OTLP/HTTP, protobuf or JSON, optionally gzip-compressed.
 *
 * Answers follow OTLP/HTTP rather than the rest of the API: 200 with an ExportTraceServiceResponse
 * (`partial_success` when spans were rejected), and for failures a google.rpc.Status, both in the
 * request's encoding: 400 for a body that cannot be decoded or bad headers, 401 without valid
 * credentials, 404 for a project or experiment id that is not the caller's, 413 over the size
 * limits, 415 for another media type or content encoding, 429 and 503 with Retry-After (OTel
 * exporters retry those two). Never a 500 for anything a client sends.
 */
import type { Context, ErrorHandler } from "hono";
import { authenticate } from "../auth/authenticate";
import { nowMicros } from "../db/client";
import type { AppEnv } from "../http/app-env";
import { createRouter } from "../http/create-router";
import { describeForLog, unavailability } from "../http/database-errors";
import { ApiError, RequestValidationError } from "../http/errors";
import { organizationRate } from "../limits/organization-rate";
import { onProjectShard } from "../shards/project-shard";
import { partitionForNewRoots, shardOfPartition } from "../partitions/partition-writes";
import { type PartitionRoute, projectPartitions } from "../partitions/partition-catalog";
import { partitionsOfRoots } from "../ingest/root-partitions";
import { type HeldRelease, type HeldRow, heldOfRecordsStatement, releaseHeld } from "../ingest/held-elsewhere";
import type { Env } from "../env";
import { shardDatabase } from "../shards/shard-config";
import { noteScorableWrite, scorableMarkStatement, scoringMarks } from "../ingest/scorable-writes";
import type { TracePlan } from "./plan-export";
import { decodeExportRequest, encodingOf, type OtlpEncoding } from "./decode-request";
import { exportResponse, statusResponse } from "./export-response";
import { OtlpError, type OtlpStatus } from "./otlp-errors";
import { destinationOf, resolveDestination } from "./otlp-destination";
import { planExport } from "./plan-export";
import { contentEncodingOf, readBody } from "./read-body";
import { priceBookFor } from "../pricing/price-overrides";
import { type MarkStatement, patchableIdsOf, writeExport } from "./write-export";
import { redactionFor } from "../redaction/policy-store";

export const OTLP_PATHS = ["/otel/v1/traces", "/otel/traces"] as const;

/** Seconds an exporter should wait at least before retrying a 503. */
const RETRY_AFTER_SECONDS = 5;

/** The encoding to answer in: the request's, or JSON when it named none we speak. */
function answerEncoding(c: Context): OtlpEncoding {
  try {
    return encodingOf(c.req.header("content-type"));
  } catch {
    return "json";
  }
}

const onOtlpError: ErrorHandler<AppEnv> = (error, c) => {
  const encoding = answerEncoding(c);
  if (error instanceof OtlpError) return statusResponse(encoding, error.status, error.message, error.headers);
  // The row builders' refusals (the mapping keeps within the caps, so this is a last line of
  // defence): the client's data, not our failure.
  if (error instanceof RequestValidationError) return statusResponse(encoding, 400, error.items.map((item) => item.msg).join("; ").slice(0, 1000));
  if (error instanceof ApiError) {
    const status = (error.status === 409 ? 400 : error.status) as OtlpStatus;
    return statusResponse(encoding, status, error.detail, error.headers);
  }
  // D1 failing for a moment (busy, overloaded, unreachable), as the rest of the API classifies it.
  const unavailable = unavailability(error);
  if (unavailable) {
    console.warn(`request ${c.get("requestId")} (OTLP): database ${unavailable.what}, answered 503:`, describeForLog(error));
    return statusResponse(encoding, 503, "storage is unavailable; retry later", { "Retry-After": String(Math.max(unavailable.retryAfterSeconds, RETRY_AFTER_SECONDS)) });
  }
  console.error(`request ${c.get("requestId")} (OTLP) failed:`, describeForLog(error));
  return statusResponse(encoding, 500, "Internal server error");
};

/**
 * The held updates of these records on every shard holding a partition of the project, in
 * parallel; none read (no round trip) when the project is on one shard, where the write's own
 * held-update statements find them.
 */
async function heldOnEveryShard(env: Env, partitions: readonly PartitionRoute[], ids: readonly string[], runId: string): Promise<Map<string, HeldRow[]>> {
  const held = new Map<string, HeldRow[]>();
  const shards = [...new Set(partitions.map((p) => p.shard))];
  if (shards.length < 2 || ids.length === 0) return held;
  await Promise.all(
    shards.map(async (shard) => {
      const { results } = await heldOfRecordsStatement(shardDatabase(env, shard), ids, runId).all<HeldRow>();
      if (results.length > 0) held.set(shard, results);
    }),
  );
  return held;
}

async function exportTraces(c: Context<AppEnv>): Promise<Response> {
  const encoding = encodingOf(c.req.header("content-type"));
  const contentEncoding = contentEncodingOf(c.req.header("content-encoding"));
  const target = destinationOf((name) => c.req.header(name));
  const body = await readBody(c.req.raw.body, contentEncoding, c.req.header("content-length"));
  const request = decodeExportRequest(body, encoding);
  if (!request.resourceSpans.some((r) => r.scopeSpans.some((s) => s.spans.length > 0))) return exportResponse(encoding, 0, "");

  const principal = c.get("principal");
  const now = nowMicros();
  const [run, prices] = await Promise.all([resolveDestination(c.env, principal, target), priceBookFor(c.env.DB, principal.organizationId)]);
  const scope = { organizationId: principal.organizationId, projectId: run.projectId, runId: run.runId };
  const [plan, redaction, marks] = await Promise.all([
    planExport(request, run.runId, now),
    redactionFor(c.env.DB, run.projectId),
    // Whether the run may have scorers (cached): each write's batch then stores its records' scoring markers.
    scoringMarks(c, run.runId),
  ]);
  const partition = await partitionForNewRoots(c.env, principal.organizationId, run.projectId, now);
  // Each trace goes to its root's partition (its session's, else its own), found on another shard
  // by one parallel lookup when the project spans shards (src/ingest/root-partitions.ts).
  const partitions = await projectPartitions(c.env, run.projectId);
  const rootOfPlan = (t: TracePlan) => t.session?.id ?? t.traceId;
  // In the same parallel round trip, the updates of the request's traces and spans held on every
  // shard of the project: one held away from its record's destination is carried into that
  // shard's write and applied there (src/ingest/held-elsewhere.ts), as for batch ingest.
  const patchable = plan.traces.map((t) => ({ trace: t, ids: patchableIdsOf(t) }));
  const [found, heldOn] = await Promise.all([
    partitionsOfRoots(c.env, partitions, partition, plan.traces.map(rootOfPlan)),
    heldOnEveryShard(c.env, partitions, patchable.flatMap((p) => p.ids), run.runId),
  ]);
  const byShard = new Map<string, { partition: PartitionRoute; traces: TracePlan[]; adopt: HeldRow[] }>();
  const destination = new Map<string, string>();
  for (const { trace: t, ids } of patchable) {
    const target = found.get(rootOfPlan(t)) ?? partition;
    const group = byShard.get(target.shard) ?? { partition: target.shard === partition.shard ? partition : target, traces: [], adopt: [] };
    group.traces.push(t);
    byShard.set(target.shard, group);
    for (const id of ids) destination.set(id, target.shard);
  }
  if (byShard.size === 0) byShard.set(partition.shard, { partition, traces: [], adopt: [] });
  const release: HeldRelease[] = [];
  for (const [shard, rows] of heldOn) {
    const away = rows.filter((row) => destination.has(row.record_id) && destination.get(row.record_id) !== shard);
    if (away.length === 0) continue;
    release.push({ shard, rows: away });
    for (const row of away) byShard.get(destination.get(row.record_id)!)!.adopt.push(row);
  }
  const outcomes = await Promise.all(
    [...byShard.values()].map((group) =>
      onProjectShard(
        c,
        run.projectId,
        "write",
        async ({ db, route }) => {
          const mark: MarkStatement = (d1, ids) => (marks ? scorableMarkStatement(c, d1, scope, ids, now) : null);
          return { ...(await writeExport(db, principal, run, group.traces, now, prices, redaction, group.partition, group.adopt, mark)), shard: route.shard };
        },
        { shardOf: shardOfPartition(c.env, group.partition) },
      ),
    ),
  );
  // Forgotten where they were held once applied (those not updated meanwhile).
  await releaseHeld(c.env, release);
  const outcome = { rejected: outcomes.reduce((n, o) => n + o.rejected, 0), rejections: outcomes.flatMap((o) => o.rejections) };
  // Scored after the answer, like the API's intake (src/evaluations/scoring-request.ts): the
  // records of a run with scorers are queued once the exporter has its answer.
  // A run with scorers: each shard's markers (stored with its records) name the messages to send.
  const marked = outcomes.filter((o) => o.markers.length > 0);
  if (marked.length > 0) for (const o of marked) noteScorableWrite(c, scope, o.markers.flatMap((m) => m.ids), { shard: o.shard, markers: o.markers });
  else noteScorableWrite(c, scope, [...new Set(outcomes.flatMap((o) => o.recordIds))]);
  const rejected = plan.rejected + outcome.rejected;
  return exportResponse(encoding, rejected, [...plan.rejections, ...outcome.rejections].join("; "));
}

/** The OTLP routes, with their own error answers; mounted at the root and under /v2 (src/app.ts). */
export function otlpRoutes() {
  const router = createRouter();
  router.onError(onOtlpError);
  // Per path, not "*": mounted at the root, a "*" middleware would run for every route of the app.
  for (const path of OTLP_PATHS) {
    router.post(path, authenticate, organizationRate, exportTraces);
    router.openAPIRegistry.registerPath({
      method: "post",
      path,
      tags: ["OpenTelemetry"],
      summary: "Export traces (OTLP/HTTP)",
      description:
        "An OTLP ExportTraceServiceRequest, protobuf or OTLP/JSON, optionally gzip-compressed. Headers `project` (name or id, default `default`), `logstream` (name, default `default`) or `experimentid`. Answers an ExportTraceServiceResponse in the request's encoding; failures are google.rpc.Status bodies. Mapping and rules: docs/otlp.md.",
      request: {
        body: {
          content: {
            "application/x-protobuf": { schema: { type: "string", format: "binary" } },
            "application/json": { schema: { type: "object", description: "OTLP/JSON ExportTraceServiceRequest" } },
          },
          required: true,
        },
      },
      responses: {
        200: { description: "ExportTraceServiceResponse (with partial_success when spans were rejected)" },
        400: { description: "Undecodable body or bad headers (google.rpc.Status)" },
        401: { description: "Missing or invalid credentials" },
        404: { description: "Project or experiment id not found" },
        413: { description: "Body over 10 MiB inflated, or over 10,000 spans" },
        415: { description: "Unsupported Content-Type or Content-Encoding" },
        429: { description: "The organization is over its request rate, or its email or client IP over its failed password checks (HTTP Basic): retry after Retry-After seconds" },
        503: { description: "Storage unavailable: retry after Retry-After seconds" },
      },
    });
  }
  return router;
}
