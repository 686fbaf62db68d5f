/**
 * Writes an export plan (src/otlp/plan-export.ts) through the ingest module's primitives, in one
 * atomic D1 batch (one round trip), in this order:
 *
 * 1. placeholders (src/ingest/placeholder-records.ts): sessions named by spans, and traces whose
 *    root is not in the request, each only if not stored yet;
 * 2. spans already stored under the traces whose root arrives now take those traces' session and
 *    completeness (linkStoredSpansStatements);
 * 3. the records: full traces with the spans nested in them, and the spans whose parent is
 *    elsewhere (recordWriteStatements: upserts by id, so a retried request rewrites the same rows);
 * 4. the spans written outside a full trace take their stored trace's session and completeness
 *    (linkToStoredTraceStatements), and updates held for any of the records apply
 *    (heldPatchStatements), as after every ingestion.
 *
 * D1 runs batches one at a time, so a search sees a request's records all or not at all, and
 * every span it sees has its trace. A trace whose records belong to another run (an id already
 * used there) fails the batch: the plan is then written trace by trace, and the traces that
 * still fail are reported as rejected spans instead of failing the whole request.
 */
import { microsToIso } from "../db/client";
import type { Principal } from "../http/app-env";
import { mergeBatches } from "../ingest/merge-batches";
import { placeholderRecordStatements } from "../ingest/placeholder-records";
import { type IngestContext, type RecordBatch, sessionRows, spanRows, traceRows } from "../ingest/record-rows";
import { linkStoredSpansStatements, linkToStoredTraceStatements } from "../ingest/streaming-links";
import { heldPatchStatements } from "../ingest/streaming-patches";
import { isoToMicros } from "../ingest/timestamps";
import { recordWriteStatements } from "../ingest/write-records";
import type { RunWithProject } from "../projects/run-access";
import type { TracePlan } from "./plan-export";

export interface WriteOutcome {
  written: number;
  rejected: number;
  rejections: string[];
}

function statementsFor(d1: D1Database, traces: TracePlan[], ctx: IngestContext): D1PreparedStatement[] {
  const scope = { organizationId: ctx.organizationId, runId: ctx.runId };
  const sessions = new Map(traces.flatMap((t) => (t.session ? [[t.session.id, t.session] as const] : [])));
  const placeholders = mergeBatches([
    ...[...sessions.values()].map((s) => {
      // A session starts with the earliest of its traces in this request.
      const createdAt = Math.min(...traces.filter((t) => t.session?.id === s.id).map((t) => createdMicros(t) ?? ctx.nowMicros));
      return sessionRows({ id: s.id, name: s.name, external_id: s.name, created_at: microsToIso(createdAt) }, ctx);
    }),
    traceRows(traces.flatMap((t) => (t.placeholder ? [t.placeholder] : [])), { ...ctx, isComplete: false }),
  ]);
  // A trace known only through spans has children (its spans are in this very batch), though
  // what they hang from, its root span, is still to come: it is listed as having children.
  const waiting = traces.filter((t) => t.placeholder).map((t) => t.traceId);
  if (waiting.length > 0) {
    placeholders.parentIds.push(...waiting);
    placeholders.presentColumns.push(["trace", "has_children"]);
  }
  const full = traceRows(traces.flatMap((t) => (t.full ? [t.full] : [])), { ...ctx, isComplete: true });
  const detached: RecordBatch[] = traces.flatMap((t) =>
    t.detached.map((group) => spanRows(group.spans, { traceId: t.traceId, parentId: group.parentId }, { ...ctx, isComplete: false })),
  );
  const records = mergeBatches([full, ...detached]);
  const detachedIds = detached.flatMap((b) => b.records.map((r) => r.id));
  return [
    ...placeholderRecordStatements(d1, placeholders, scope),
    ...linkStoredSpansStatements(d1, records, ctx.runId),
    ...recordWriteStatements(d1, records, scope),
    ...(detachedIds.length > 0 ? linkToStoredTraceStatements(d1, detachedIds, ctx.runId) : []),
    ...heldPatchStatements(d1, records.records.map((r) => r.id), ctx.runId),
  ];
}

/** The start of the trace in microseconds, as its record will say. */
function createdMicros(trace: TracePlan): number | undefined {
  const iso = (trace.full ?? trace.placeholder)?.created_at;
  return iso ? isoToMicros(iso) : undefined;
}

/** Errors of one trace's own data (answered as rejected spans), as opposed to failures of the service. */
function traceFault(error: unknown): string | undefined {
  const text = `${String(error)} ${String((error as { cause?: unknown })?.cause ?? "")}`;
  if (text.includes("record_ownership_conflict")) return "the trace id is already used in another project or log stream";
  if (text.includes("SQLITE_TOOBIG") || text.includes("string or blob too big")) return "the trace's records are too large to store";
  return undefined;
}

export async function writeExport(
  d1: D1Database,
  principal: Principal,
  run: RunWithProject,
  traces: TracePlan[],
  nowMicros: number,
): Promise<WriteOutcome> {
  const ctx: IngestContext = {
    organizationId: principal.organizationId,
    projectId: run.projectId,
    runId: run.runId,
    sessionId: null,
    isComplete: null,
    nowMicros,
  };
  const total = traces.reduce((sum, t) => sum + t.spanCount, 0);
  if (traces.length === 0) return { written: 0, rejected: 0, rejections: [] };
  try {
    await d1.batch(statementsFor(d1, traces, ctx));
    return { written: total, rejected: 0, rejections: [] };
  } catch (error) {
    if (traceFault(error) === undefined || traces.length === 1) {
      const fault = traceFault(error);
      if (fault === undefined) throw error;
      return { written: 0, rejected: total, rejections: [`${total} span${total === 1 ? "" : "s"} of trace ${traces[0]!.traceHex}: ${fault}`] };
    }
  }
  // One trace's data failed the request: write trace by trace to keep the others.
  const outcome: WriteOutcome = { written: 0, rejected: 0, rejections: [] };
  for (const trace of traces) {
    try {
      await d1.batch(statementsFor(d1, [trace], ctx));
      outcome.written += trace.spanCount;
    } catch (error) {
      const fault = traceFault(error);
      if (fault === undefined) throw error;
      outcome.rejected += trace.spanCount;
      outcome.rejections.push(`${trace.spanCount} span${trace.spanCount === 1 ? "" : "s"} of trace ${trace.traceHex}: ${fault}`);
    }
  }
  return outcome;
}
