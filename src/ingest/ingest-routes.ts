import { createRoute } from "@hono/zod-openapi";
import { database, nowMicros } from "../db/client";
import { commonErrorResponses, ErrorDetail, ProjectIdParam } from "../http/common-schemas";
import type { Router } from "../http/create-router";
import type { Context } from "hono";
import type { AppEnv, IntakeMarker } from "../http/app-env";
import { ownedRunWithProject } from "../projects/run-access";
import { type RunSelector, refineRunSelector, runSelectorOf } from "../projects/run-selector";
import { CreateSessionRequest, IngestResponse, IngestTracesRequest, refineRecordCount } from "./ingest-schemas";
import { type IngestContext, type RecordBatch, sessionRows, traceRows } from "./record-rows";
import { linkStoredSpansStatements } from "./streaming-links";
import { priceBookFor } from "../pricing/price-overrides";
import { heldPatchStatements } from "./streaming-patches";
import { onProjectShard } from "../shards/project-shard";
import { recordWriteStatements, runWriteBatch, shardMembershipStatements } from "./write-records";
import { z } from "@hono/zod-openapi";
import { redactionFor } from "../redaction/policy-store";
import { afterPartitionWrite, partitionForNewRoots, shardOfPartition } from "../partitions/partition-writes";
import { partitionRootsStatement, registerPartitionStatement, rootsOf } from "../partitions/shard-partitions";
import { projectPartitions } from "../partitions/partition-catalog";
import { groupByRootPartition } from "./root-partitions";
import { adoptHeldStatements, releaseHeld } from "./held-elsewhere";
import { noteScorableWrite, scorableMarkStatement, scoringMarks } from "./scorable-writes";

const IngestBody = IngestTracesRequest.superRefine(refineRunSelector).superRefine(refineRecordCount("traces"));
const SessionBody = CreateSessionRequest.superRefine(refineRunSelector);

const ingestTraces = createRoute({
  method: "post",
  path: "/projects/{project_id}/traces",
  tags: ["Ingestion"],
  summary: "Log traces with their nested spans",
  description:
    "Writes the traces and every nested span atomically. Ids chosen by the client are kept (unique within the project); re-sending the same ids merges into those records instead of duplicating them (an empty field never erases a stored value, an older `updated_at` never wins, `is_complete` never goes back to false). Two records of one request with the same id are a 422. A record id that already belongs to another run of the project is a 409.",
  request: { params: ProjectIdParam, body: { content: { "application/json": { schema: IngestBody } }, required: true } },
  responses: {
    200: { content: { "application/json": { schema: IngestResponse } }, description: "What was written" },
    409: { content: { "application/json": { schema: ErrorDetail } }, description: "A record id belongs to another run of the project" },
    ...commonErrorResponses,
  },
});

const SessionResponse = z
  .object({
    id: z.string(),
    name: z.string().nullable(),
    project_id: z.string(),
    project_name: z.string(),
    previous_session_id: z.string().nullable(),
    external_id: z.string().nullable(),
  })
  .openapi("SessionCreated");

const createSession = createRoute({
  method: "post",
  path: "/projects/{project_id}/sessions",
  tags: ["Ingestion"],
  summary: "Start a session",
  request: { params: ProjectIdParam, body: { content: { "application/json": { schema: SessionBody } }, required: true } },
  responses: {
    200: { content: { "application/json": { schema: SessionResponse } }, description: "The session" },
    409: { content: { "application/json": { schema: ErrorDetail } }, description: "The id belongs to another run" },
    ...commonErrorResponses,
  },
});

/**
 * Resolves the run (catalog, cached) and writes the batch built for it on the project's shard,
 * atomically, in one round trip.
 */
export async function ingestInto(
  c: Context<AppEnv>,
  projectId: string,
  selector: RunSelector,
  build: (ctx: IngestContext) => RecordBatch,
  defaults: Pick<IngestContext, "sessionId" | "isComplete"> = { sessionId: null, isComplete: null },
) {
  const principal = c.get("principal");
  // The partitions are read beside the run (cached): partitionForNewRoots then finds them cached.
  const [run, prices, redaction, , marks] = await Promise.all([
    ownedRunWithProject(database(c.env.DB), principal, projectId, selector),
    priceBookFor(c.env.DB, principal.organizationId),
    redactionFor(c.env.DB, projectId),
    projectPartitions(c.env, projectId),
    // Whether the run may have scorers (cached): its records' scoring markers go in the batch.
    scoringMarks(c, selector.runId),
  ]);
  const now = nowMicros();
  // New roots go to the open partition (docs/partitions.md); records already stored keep theirs.
  const partition = await partitionForNewRoots(c.env, principal.organizationId, projectId, now);
  const batch = build({ organizationId: principal.organizationId, projectId, runId: run.runId, nowMicros: now, partitionSeq: partition.seq, prices, redaction, ...defaults });
  // Streaming clients may have sent spans of these traces, or updates of these records, before
  // the records themselves: link the spans first (streaming-links.ts), apply the held updates
  // last (streaming-patches.ts). Both are no-ops for a batch nobody streamed ahead of.
  const scope = { organizationId: principal.organizationId, projectId, runId: run.runId };
  const patchable = batch.records.filter((r) => r.record_type !== "session").map((r) => r.id);
  // Records whose root is stored in a partition on another shard go there (root-partitions.ts).
  const { groups, release } = await groupByRootPartition(c.env, await projectPartitions(c.env, projectId), partition, batch);
  const intakes: { shard: string; markers: IntakeMarker[] }[] = [];
  const written = await Promise.all(
    groups
      .filter((group, i) => i === 0 || group.batch.records.length > 0)
      .map((group) =>
        onProjectShard(
          c,
          projectId,
          "write",
          ({ db, route }) => {
            const mark = marks && run.runId === selector.runId ? scorableMarkStatement(c, db, scope, group.batch.records.map((r) => r.id), now) : null;
            return runWriteBatch(db, [
              ...shardMembershipStatements(db, run),
              registerPartitionStatement(db, group.partition),
              ...linkStoredSpansStatements(db, group.batch, scope),
              ...recordWriteStatements(db, group.batch, scope),
              ...adoptHeldStatements(db, group.adopt),
              ...heldPatchStatements(db, groups.length === 1 ? patchable : patchableIn(group.batch, patchable), run.runId),
              ...(mark ? [mark.statement] : []),
              partitionRootsStatement(db, group.partition),
            ]).then((results) => {
              if (mark) intakes.push({ shard: route.shard, markers: mark.markers });
              return results;
            });
          },
          { shardOf: shardOfPartition(c.env, group.partition) },
        ),
      ),
  );
  await releaseHeld(c.env, release);
  await afterPartitionWrite(c.env, principal.organizationId, partition, rootsOf(written[0]!.at(-1)));
  if (intakes.length > 0) for (const intake of intakes) noteScorableWrite(c, scope, intake.markers.flatMap((m) => m.ids), intake);
  else noteScorableWrite(c, scope, batch.records.map((r) => r.id));
  return { run, batch };
}

/** The patchable ids among a group's records. */
function patchableIn(batch: RecordBatch, patchable: readonly string[]): string[] {
  const here = new Set(batch.records.map((r) => r.id));
  return patchable.filter((id) => here.has(id));
}

function selectorEcho(selector: RunSelector) {
  return {
    log_stream_id: selector.kind === "log_stream" ? selector.runId : null,
    experiment_id: selector.kind === "experiment" ? selector.runId : null,
    metrics_testing_id: selector.kind === "metrics_testing" ? selector.runId : null,
  };
}

export function registerIngest(app: Router): void {
  app.openapi(ingestTraces, async (c) => {
    const { project_id } = c.req.valid("param");
    const body = c.req.valid("json");
    const selector = runSelectorOf(body);
    const { run, batch } = await ingestInto(c, project_id, selector, (ctx) => traceRows(body.traces, ctx), {
      sessionId: body.session_id ?? null,
      isComplete: body.is_complete ?? null,
    });
    const traceIds = batch.records.filter((r) => r.record_type === "trace").map((r) => r.id);
    return c.json(
      {
        project_id,
        project_name: run.projectName,
        records_count: batch.records.length,
        traces_count: traceIds.length,
        spans_count: batch.records.length - traceIds.length,
        ...selectorEcho(selector),
        session_id: body.session_id ?? null,
        ...(body.include_trace_ids ? { trace_ids: traceIds } : {}),
      },
      200,
    );
  });

  app.openapi(createSession, async (c) => {
    const { project_id } = c.req.valid("param");
    const body = c.req.valid("json");
    const selector = runSelectorOf(body);
    const { run, batch } = await ingestInto(c, project_id, selector, (ctx) => sessionRows(body, ctx));
    const session = batch.records[0]!;
    return c.json(
      {
        id: session.id,
        name: session.name || null,
        project_id,
        project_name: run.projectName,
        previous_session_id: session.previous_session_id,
        external_id: session.external_id,
      },
      200,
    );
  });
}
