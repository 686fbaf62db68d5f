/**
 * Streaming ingestion (the `galileo` SDK's `mode: "streaming"`): a trace is posted when it
 * starts (`POST /traces`, `is_complete: false`), each span when it is added
 * (`POST /spans`), and the trace and its workflow and agent spans are updated when they finish
 * (`PATCH /traces/{id}`, `PATCH /spans/{id}`). The SDK sends these concurrently, so any of them
 * may arrive first: see streaming-links.ts (spans before their trace) and streaming-patches.ts
 * (updates before their record). Every request is one atomic D1 batch and safe to repeat.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { database, nowMicros } from "../db/client";
import type { Context } from "hono";
import type { AppEnv, IntakeMarker } from "../http/app-env";
import { commonErrorResponses, ErrorDetail, ProjectIdParam, Uuid } from "../http/common-schemas";
import type { Router } from "../http/create-router";
import { RequestValidationError } from "../http/errors";
import { ownedRunWithProject, type RunWithProject } from "../projects/run-access";
import { type RunSelector, refineRunSelector, runSelectorOf } from "../projects/run-selector";
import { refineRecordCount } from "./ingest-schemas";
import { spanRows } from "./record-rows";
import { linkToStoredTraceStatements, traceSessionQuery } from "./streaming-links";
import { heldPatchStatements, patchRow, patchStatements } from "./streaming-patches";
import {
  IngestSpansRequest,
  IngestSpansResponse,
  UpdateSpanRequest,
  UpdateSpanResponse,
  UpdateTraceRequest,
  UpdateTraceResponse,
} from "./streaming-schemas";
import { onProjectShard } from "../shards/project-shard";
import { partitionForNewRoots, shardOfPartition } from "../partitions/partition-writes";
import { registerPartitionStatement } from "../partitions/shard-partitions";
import { openPartitionOf, projectPartitions } from "../partitions/partition-catalog";
import { groupByRootPartition, partitionOfRecord } from "./root-partitions";
import { adoptHeldStatements, releaseHeld } from "./held-elsewhere";
import { noteScorableWrite, scorableMarkStatement, scoringMarks } from "./scorable-writes";
import { priceBookFor } from "../pricing/price-overrides";
import { redactionFor } from "../redaction/policy-store";
import { redactPatch } from "../redaction/redact-record";
import { recordWriteStatements, runWriteBatch, shardMembershipStatements } from "./write-records";

const SpansBody = IngestSpansRequest.superRefine(refineRunSelector).superRefine(refineRecordCount("spans"));
const TraceUpdateBody = UpdateTraceRequest.superRefine(refineRunSelector);
const SpanUpdateBody = UpdateSpanRequest.superRefine(refineRunSelector);

const TraceIdParams = ProjectIdParam.extend({ trace_id: Uuid.openapi({ param: { name: "trace_id", in: "path" } }) });
const SpanIdParams = ProjectIdParam.extend({ span_id: Uuid.openapi({ param: { name: "span_id", in: "path" } }) });

const conflict = { content: { "application/json": { schema: ErrorDetail } }, description: "A record id belongs to another run" };

const ingestSpans = createRoute({
  method: "post",
  path: "/projects/{project_id}/spans",
  tags: ["Ingestion"],
  summary: "Log spans of a trace (streaming)",
  description:
    "Writes the spans (and the spans nested in them) under `trace_id` and `parent_id`, which may not exist yet: the spans take the trace's session and completeness when both are there, whichever arrives first. Ids chosen by the client are kept; re-sending a span updates it.",
  request: { params: ProjectIdParam, body: { content: { "application/json": { schema: SpansBody } }, required: true } },
  responses: {
    200: { content: { "application/json": { schema: IngestSpansResponse } }, description: "What was written" },
    409: conflict,
    ...commonErrorResponses,
  },
});

const updateDescription =
  "Applies the fields given (absent or null fields are left alone; `tags` replaces the tags; `duration_ns` sets `metrics.duration_ns`). An update that arrives before its record is held and applied when the record arrives (`pending: true`); held updates expire after seven days.";

const updateTrace = createRoute({
  method: "patch",
  path: "/projects/{project_id}/traces/{trace_id}",
  tags: ["Ingestion"],
  summary: "Update a trace (streaming)",
  description: `${updateDescription} \`is_complete\` is copied to the trace's spans.`,
  request: { params: TraceIdParams, body: { content: { "application/json": { schema: TraceUpdateBody } }, required: true } },
  responses: {
    200: { content: { "application/json": { schema: UpdateTraceResponse } }, description: "Applied, or held until the trace arrives" },
    ...commonErrorResponses,
  },
});

const updateSpan = createRoute({
  method: "patch",
  path: "/projects/{project_id}/spans/{span_id}",
  tags: ["Ingestion"],
  summary: "Update a span (streaming)",
  description: updateDescription,
  request: { params: SpanIdParams, body: { content: { "application/json": { schema: SpanUpdateBody } }, required: true } },
  responses: {
    200: { content: { "application/json": { schema: UpdateSpanResponse } }, description: "Applied, or held until the span arrives" },
    ...commonErrorResponses,
  },
});

function runEcho(run: RunWithProject, selector: RunSelector) {
  return {
    project_id: run.projectId,
    project_name: run.projectName,
    log_stream_id: selector.kind === "log_stream" ? selector.runId : null,
    experiment_id: selector.kind === "experiment" ? selector.runId : null,
    metrics_testing_id: selector.kind === "metrics_testing" ? selector.runId : null,
  };
}

/** The body repeats the path's id (the SDK does): a different one is a client error, not a choice. */
function requireSameId(field: "trace_id" | "span_id", inBody: string | null | undefined, inPath: string): void {
  if (inBody == null || inBody === inPath) return;
  const msg = `Value error, ${field} in the body must equal the ${field} of the path`;
  throw new RequestValidationError([
    { loc: ["body", field], msg, type: "value_error", input: inBody, ctx: { error: msg.replace("Value error, ", "") } },
  ]);
}

const SESSION_OF_SPAN = "SELECT session_id FROM records WHERE project_id = ?3 AND id = ?1 AND run_id = ?2 AND record_type = 'span'";

interface UpdateOutcome {
  run: RunWithProject;
  applied: boolean;
  sessionId: string | null;
}

async function applyUpdate(
  c: Context<AppEnv>,
  projectId: string,
  selector: RunSelector,
  target: { id: string; family: "trace" | "span" },
  body: z.infer<typeof UpdateTraceRequest> | z.infer<typeof UpdateSpanRequest>,
): Promise<UpdateOutcome> {
  const principal = c.get("principal");
  // The partitions are read beside the run (cached; one catalog read at most), not after it.
  const [run, redaction, partitions, marks] = await Promise.all([
    ownedRunWithProject(database(c.env.DB), principal, projectId, selector),
    redactionFor(c.env.DB, projectId),
    projectPartitions(c.env, projectId),
    // Whether the run may have scorers (cached): the record's scoring marker goes in the batch.
    scoringMarks(c, selector.runId),
  ]);
  const now = nowMicros();
  const patch = patchRow(target.id, target.family, body, now);
  if (redaction) redactPatch(patch, redaction);
  // The record's partition, wherever it is stored (docs/partitions.md); an update of a record not
  // stored yet is held on the open partition's shard, where a new record goes.
  // An update brings no new root: it never rolls the open partition.
  const open = openPartitionOf(partitions);
  if (!open) throw new Error(`project ${projectId} has no open partition`);
  const partition = await partitionOfRecord(c.env, partitions, open, target.id);
  return onProjectShard(c, projectId, "write", async ({ db, route }) => {
    const membership = shardMembershipStatements(db, run);
    const { statements, appliedAt } = patchStatements(db, patch, { organizationId: principal.organizationId, projectId, runId: run.runId });
    const scope = { projectId, runId: run.runId };
    const session =
      target.family === "trace" ? traceSessionQuery(db, target.id, scope) : db.prepare(SESSION_OF_SPAN).bind(target.id, run.runId, projectId);
    // The marker goes in the batch even when the update is held (the record not stored yet): its
    // message is sent all the same, finds nothing to score and removes it (the batch has no way
    // to make the marker depend on the update).
    const intakeScope = { organizationId: principal.organizationId, ...scope };
    const mark = marks && run.runId === selector.runId ? scorableMarkStatement(c, db, intakeScope, [target.id], now) : null;
    const results = await db.batch([...membership, ...statements, ...(mark ? [mark.statement] : []), session]);
    if (mark) noteScorableWrite(c, intakeScope, [target.id], { shard: route.shard, markers: mark.markers });
    else if (results[membership.length + appliedAt]!.meta.changes > 0) noteScorableWrite(c, intakeScope, [target.id]);
    const sessionRow = results[results.length - 1]!.results[0] as { session_id: string | null } | undefined;
    return { run, applied: results[membership.length + appliedAt]!.meta.changes > 0, sessionId: sessionRow?.session_id ?? null };
  }, { shardOf: shardOfPartition(c.env, partition) });
}

export function registerStreamingIngest(app: Router): void {
  app.openapi(ingestSpans, async (c) => {
    const { project_id } = c.req.valid("param");
    const body = c.req.valid("json");
    const selector = runSelectorOf(body);
    const principal = c.get("principal");
    // The partitions are read beside the run (cached): partitionForNewRoots then finds them cached.
    const [run, prices, redaction, , marks] = await Promise.all([
      ownedRunWithProject(database(c.env.DB), principal, project_id, selector),
      priceBookFor(c.env.DB, principal.organizationId),
      redactionFor(c.env.DB, project_id),
      projectPartitions(c.env, project_id),
      // Whether the run may have scorers (cached): the spans' scoring marker goes in the batch.
      scoringMarks(c, selector.runId),
    ]);
    const now = nowMicros();
    // Spans follow their trace's partition when it is stored (write-records.ts); else the open one.
    const partition = await partitionForNewRoots(c.env, principal.organizationId, project_id, now);
    // Until the trace is known, its spans are not complete (and have no session).
    const batch = spanRows(body.spans, { traceId: body.trace_id, parentId: body.parent_id }, {
      organizationId: principal.organizationId,
      projectId: project_id,
      runId: run.runId,
      sessionId: null,
      isComplete: false,
      nowMicros: now,
      partitionSeq: partition.seq,
      prices,
      redaction,
    });
    // Every span of the request has one root (its trace's): its partition, wherever it is stored.
    const { groups, release } = await groupByRootPartition(c.env, await projectPartitions(c.env, project_id), partition, batch);
    const group = groups.find((g) => g.batch.records.length > 0) ?? groups[0]!;
    const target = group.partition;
    const spanIds = batch.records.map((r) => r.id);
    const scope = { organizationId: principal.organizationId, projectId: project_id, runId: run.runId };
    let intake: { shard: string; markers: IntakeMarker[] } | undefined;
    const results = await onProjectShard(
      c,
      project_id,
      "write",
      ({ db, route }) => {
        const mark = marks && run.runId === selector.runId ? scorableMarkStatement(c, db, scope, spanIds, now) : null;
        return runWriteBatch(db, [
          ...shardMembershipStatements(db, run),
          registerPartitionStatement(db, target),
          ...recordWriteStatements(db, batch, scope),
          ...linkToStoredTraceStatements(db, spanIds, scope),
          ...adoptHeldStatements(db, group.adopt),
          ...heldPatchStatements(db, spanIds, run.runId),
          ...(mark ? [mark.statement] : []),
          traceSessionQuery(db, body.trace_id, scope),
        ]).then((written) => {
          intake = mark ? { shard: route.shard, markers: mark.markers } : undefined;
          return written;
        });
      },
      { shardOf: shardOfPartition(c.env, target) },
    );
    await releaseHeld(c.env, release);
    noteScorableWrite(c, scope, spanIds, intake);
    const sessionRow = results[results.length - 1]!.results[0] as { session_id: string | null } | undefined;
    return c.json(
      {
        ...runEcho(run, selector),
        session_id: sessionRow?.session_id ?? null,
        records_count: batch.records.length,
        trace_id: body.trace_id,
        parent_id: body.parent_id,
      },
      200,
    );
  });

  app.openapi(updateTrace, async (c) => {
    const { project_id, trace_id } = c.req.valid("param");
    const body = c.req.valid("json");
    requireSameId("trace_id", body.trace_id, trace_id);
    const selector = runSelectorOf(body);
    const outcome = await applyUpdate(c, project_id, selector, { id: trace_id, family: "trace" }, body);
    return c.json(
      {
        ...runEcho(outcome.run, selector),
        session_id: outcome.sessionId,
        records_count: outcome.applied ? 1 : 0,
        trace_id,
        pending: !outcome.applied,
      },
      200,
    );
  });

  app.openapi(updateSpan, async (c) => {
    const { project_id, span_id } = c.req.valid("param");
    const body = c.req.valid("json");
    requireSameId("span_id", body.span_id, span_id);
    const selector = runSelectorOf(body);
    const outcome = await applyUpdate(c, project_id, selector, { id: span_id, family: "span" }, body);
    return c.json(
      {
        ...runEcho(outcome.run, selector),
        session_id: outcome.sessionId,
        records_count: outcome.applied ? 1 : 0,
        span_id,
        pending: !outcome.applied,
      },
      200,
    );
  });
}
