/**
 * Writes an export plan (src/otlp/plan-export.ts) through the ingest module's primitives, in one
 * atomic D1 batch (one round trip), in this order:
 *
 * 1. traces whose root arrives now start when their root started (earlierTraceStartStatements:
 *    a placeholder written earlier took the start of the children that made it);
 * 2. spans already stored under those traces take their session and completeness
 *    (linkStoredSpansStatements);
 * 3. the records (recordWriteStatements: merging upserts by id, so a retried request rewrites the
 *    same rows and never erases what a later one filled in): placeholders (sessions named by
 *    spans, traces whose root is not in the request), full traces with the spans nested in
 *    them, and the spans whose parent is elsewhere;
 * 4. the spans written outside a full trace take their stored trace's session and completeness
 *    (linkToStoredTraceStatements), and updates held for any of the records apply
 *    (heldPatchStatements), as after every ingestion.
 *
 * D1 runs batches one at a time, so a search sees a request's records all or not at all, and
 * every span it sees has its trace. A trace whose records belong to another run of the project
 * (an id already used there) fails the batch: the plan is then written trace by trace, and the
 * traces that still fail are reported as rejected spans instead of failing the whole request.
 */
import { microsToIso } from "../db/client";
import type { IntakeMarker, Principal } from "../http/app-env";
import { RequestValidationError } from "../http/errors";
import { mergeBatches } from "../ingest/merge-batches";
import type { CompiledPolicy } from "../redaction/policy";
import { type IngestContext, type RecordBatch, sessionRows, spanRows, traceRows } from "../ingest/record-rows";
import { linkStoredSpansStatements, linkToStoredTraceStatements } from "../ingest/streaming-links";
import { type HeldRow, adoptHeldStatements } from "../ingest/held-elsewhere";
import type { IngestSpan } from "../ingest/ingest-schemas";
import { heldPatchStatements } from "../ingest/streaming-patches";
import { earlierTraceStartStatements } from "../ingest/trace-start";
import { isoToMicros } from "../ingest/timestamps";
import { PARENT_CHAIN_MESSAGE, PARENT_CHAIN_REFUSAL } from "../ingest/write-guards";
import { recordWriteStatements, runWriteBatch, shardMembershipStatements } from "../ingest/write-records";
import type { PriceBook } from "../pricing/price-lookup";
import type { RunWithProject } from "../projects/run-access";
import type { TracePlan } from "./plan-export";
import type { PartitionRoute } from "../partitions/partition-catalog";
import { registerPartitionStatement } from "../partitions/shard-partitions";

export interface WriteOutcome {
  written: number;
  rejected: number;
  rejections: string[];
  /** Ids of the records written (sessions, traces, spans; placeholders too): queued for scoring by the route. */
  recordIds: string[];
  /** The scoring intake markers stored with them (a run with scorers): one set per batch written. */
  markers: IntakeMarker[];
}

/**
 * The statement storing the scoring intake markers of these record ids, for the write's own batch
 * (src/ingest/scorable-writes.ts), or null (a run without scorers).
 */
export type MarkStatement = (d1: D1Database, ids: string[]) => { statement: D1PreparedStatement; markers: IntakeMarker[] } | null;

/** One trace's rows: built apart from the others, so that a trace whose rows cannot be built costs only its own spans. */
interface TraceRows {
  trace: TracePlan;
  placeholder: RecordBatch | null;
  full: RecordBatch[];
  detached: RecordBatch[];
}

function rowsOf(trace: TracePlan, ctx: IngestContext): TraceRows {
  return {
    trace,
    placeholder: trace.placeholder ? traceRows([trace.placeholder], { ...ctx, isComplete: false }) : null,
    full: trace.full ? [traceRows([trace.full], { ...ctx, isComplete: true })] : [],
    detached: trace.detached.map((group) => spanRows(group.spans, { traceId: trace.traceId, parentId: group.parentId }, { ...ctx, isComplete: false })),
  };
}

/**
 * The ids of the records a trace plan may write that can have held updates (its trace and spans:
 * a session is never patched), read before the write to find updates held on another shard.
 */
export function patchableIdsOf(trace: TracePlan): string[] {
  const ids = [trace.traceId];
  const walk = (spans: readonly IngestSpan[] | null | undefined) => {
    for (const span of spans ?? []) {
      if (span.id) ids.push(span.id);
      walk(span.spans);
    }
  };
  walk((trace.full ?? trace.placeholder)?.spans as IngestSpan[] | undefined);
  for (const group of trace.detached) walk(group.spans);
  return ids;
}

function statementsFor(d1: D1Database, rows: TraceRows[], ctx: IngestContext, run: RunWithProject, partition: PartitionRoute, adopt: readonly HeldRow[]): D1PreparedStatement[] {
  const scope = { organizationId: ctx.organizationId, projectId: ctx.projectId, runId: ctx.runId };
  const traces = rows.map((r) => r.trace);
  const sessions = new Map(traces.flatMap((t) => (t.session ? [[t.session.id, t.session] as const] : [])));
  // Placeholders (sessions named by spans, traces without their root) go through the ordinary
  // merging upsert: their empty fields never erase a stored value, so over a stored record they
  // change nothing, and the full record merges into them when it comes.
  const placeholders = mergeBatches([
    ...[...sessions.values()].map((s) => {
      // A session starts with the earliest of its traces in this request.
      const createdAt = Math.min(...traces.filter((t) => t.session?.id === s.id).map((t) => createdMicros(t) ?? ctx.nowMicros));
      return sessionRows({ id: s.id, name: s.name, external_id: s.name, created_at: microsToIso(createdAt) }, ctx);
    }),
    ...rows.flatMap((r) => (r.placeholder ? [r.placeholder] : [])),
  ]);
  const full = mergeBatches(rows.flatMap((r) => r.full));
  const records = mergeBatches(rows.flatMap((r) => [...r.full, ...r.detached]));
  const detachedIds = rows.flatMap((r) => r.detached.flatMap((b) => b.records.map((rec) => rec.id)));
  const written = new Set(records.records.map((r) => r.id));
  const fullStarts = traces.flatMap((t) => (t.full ? [{ id: t.traceId, createdAt: createdMicros(t) ?? ctx.nowMicros }] : []));
  return [
    ...shardMembershipStatements(d1, run),
    registerPartitionStatement(d1, partition),
    ...earlierTraceStartStatements(d1, fullStarts, scope),
    ...linkStoredSpansStatements(d1, full, scope),
    ...recordWriteStatements(d1, mergeBatches([placeholders, records]), scope),
    ...(detachedIds.length > 0 ? linkToStoredTraceStatements(d1, detachedIds, scope) : []),
    // Updates of these records held on another shard (held-elsewhere.ts), only those of the
    // records this batch writes: a trace written alone after a failed batch carries its own.
    ...adoptHeldStatements(d1, adopt.filter((row) => written.has(row.record_id))),
    ...heldPatchStatements(d1, records.records.map((r) => r.id), ctx.runId),
  ];
}

/** The ids of one trace's records: its session, its trace (placeholder or full) and its spans. */
function recordIdsOf(row: TraceRows): string[] {
  const batches = [...(row.placeholder ? [row.placeholder] : []), ...row.full, ...row.detached];
  return [...(row.trace.session ? [row.trace.session.id] : []), ...batches.flatMap((b) => b.records.map((r) => r.id))];
}

/** The start of the trace in microseconds, as its record will say. */
function createdMicros(trace: TracePlan): number | undefined {
  const iso = (trace.full ?? trace.placeholder)?.created_at;
  return iso ? isoToMicros(iso) : undefined;
}

/** Errors of one trace's own data (answered as rejected spans), as opposed to failures of the service. */
function traceFault(error: unknown): string | undefined {
  if (error instanceof RequestValidationError) return error.items.map((e) => e.msg.replace("Value error, ", "")).join("; ").slice(0, 500);
  const text = `${String(error)} ${String((error as { cause?: unknown })?.cause ?? "")}`;
  if (text.includes(PARENT_CHAIN_REFUSAL)) return PARENT_CHAIN_MESSAGE;
  if (text.includes("record_ownership_conflict")) return "the trace id is already used in another log stream or experiment of the project";
  if (text.includes("SQLITE_TOOBIG") || text.includes("string or blob too big")) return "the trace's records are too large to store";
  return undefined;
}

const spansOf = (n: number) => `${n} span${n === 1 ? "" : "s"}`;

export async function writeExport(
  d1: D1Database,
  principal: Principal,
  run: RunWithProject,
  traces: TracePlan[],
  nowMicros: number,
  prices: PriceBook,
  redaction: CompiledPolicy | null,
  partition: PartitionRoute,
  /** Updates of the plan's records held on other shards, carried into this write (otlp-routes.ts). */
  adopt: readonly HeldRow[] = [],
  mark: MarkStatement = () => null,
): Promise<WriteOutcome> {
  const ctx: IngestContext = {
    partitionSeq: partition.seq,
    prices,
    redaction,
    organizationId: principal.organizationId,
    projectId: run.projectId,
    runId: run.runId,
    sessionId: null,
    isComplete: null,
    nowMicros,
  };
  const outcome: WriteOutcome = { written: 0, rejected: 0, rejections: [], recordIds: [], markers: [] };
  const reject = (trace: TracePlan, why: string) => {
    outcome.rejected += trace.spanCount;
    outcome.rejections.push(`${spansOf(trace.spanCount)} of trace ${trace.traceHex}: ${why}`);
  };
  const rows: TraceRows[] = [];
  for (const trace of traces) {
    try {
      rows.push(rowsOf(trace, ctx));
    } catch (error) {
      // The row builders refuse what no record may hold (the mapping keeps within the caps, so
      // this is a last line of defence): that trace's spans are rejected, the others kept.
      reject(trace, `its records cannot be stored (${error instanceof Error ? error.message : String(error)})`.slice(0, 500));
    }
  }
  if (rows.length === 0) return outcome;
  // Each batch stores the markers of its own records (atomic with them), so a rejected trace leaves none.
  const withMarks = (batchRows: TraceRows[]) => {
    const ids = [...new Set(batchRows.flatMap(recordIdsOf))];
    const marked = mark(d1, ids);
    return { ids, marked, statements: [...statementsFor(d1, batchRows, ctx, run, partition, adopt), ...(marked ? [marked.statement] : [])] };
  };
  try {
    const all = withMarks(rows);
    await runWriteBatch(d1, all.statements);
    outcome.written = rows.reduce((sum, r) => sum + r.trace.spanCount, 0);
    outcome.recordIds = all.ids;
    outcome.markers = all.marked?.markers ?? [];
    return outcome;
  } catch (error) {
    const fault = traceFault(error);
    if (fault === undefined) throw error;
    if (rows.length === 1) {
      reject(rows[0]!.trace, fault);
      return outcome;
    }
  }
  // One trace's data failed the request: write trace by trace to keep the others.
  for (const row of rows) {
    try {
      const one = withMarks([row]);
      await runWriteBatch(d1, one.statements);
      outcome.written += row.trace.spanCount;
      outcome.recordIds = [...new Set([...outcome.recordIds, ...one.ids])];
      outcome.markers.push(...(one.marked?.markers ?? []));
    } catch (error) {
      const fault = traceFault(error);
      if (fault === undefined) throw error;
      reject(row.trace, fault);
    }
  }
  return outcome;
}
