/**
 * An export request as records to write (docs/otlp.md "Order of arrival"): per OTel trace, the
 * trace record and the spans of this request, nested where their parent is in the request too.
 *
 * - When the trace's root span (no parent) is in the request, the trace record is made from it
 *   (its name, start, input, output, status, metadata and every resource attribute) and written in
 *   full: it replaces whatever was stored for the trace before.
 * - Otherwise the trace gets a placeholder, written only if the trace is not stored yet: no name,
 *   `is_complete` false, created at the earliest start among this request's spans of the trace.
 *   Its root fills it in when it comes.
 * - A span whose parent is not in the request hangs from its parent's id all the same (the parent
 *   is linked when it comes: records carry parent ids, not pointers).
 *
 * Spans that cannot be stored (an invalid trace or span id, parent links that form a cycle) are
 * left out and counted as rejected, as OTLP's partial success reports them.
 */
import { microsToIso } from "../db/client";
import { RECORD_LIMITS } from "../ingest/record-limits";
import type { IngestSpan, IngestTrace } from "../ingest/ingest-schemas";
import { type Plain, attributeMap } from "./attribute-values";
import { fitMetadata } from "./fit-record-limits";
import type { ExportTraceServiceRequest } from "./generated/opentelemetry/proto/collector/trace/v1/trace_service_pb";
import type { Span } from "./generated/opentelemetry/proto/trace/v1/trace_pb";
import { type MappedSpan, mapSpan, type SpanIds } from "./map-span";
import { OtlpError } from "./otlp-errors";
import { OTLP_LIMITS } from "./otlp-limits";
import { bytesToHex, hexToUuid, isValidId, sessionUuid, spanUuid } from "./otel-ids";

/**
 * Deepest nesting built in one request: deeper spans hang from their parent by id instead of
 * being nested in it, which stores the same links and keeps the row builder's recursion bounded.
 */
export const MAX_NESTING = 64;

export interface SpanGroup {
  /** The span (stored or still to come) these spans hang from. */
  parentId: string;
  spans: IngestSpan[];
}

export interface SessionRef {
  id: string;
  name: string;
}

export interface TracePlan {
  traceId: string;
  traceHex: string;
  /** The full trace record with its root span (and what nests in it), when the root is in the request. */
  full: IngestTrace | null;
  /** The placeholder written if the trace is not stored yet, when the root is not in the request. */
  placeholder: IngestTrace | null;
  /** Spans of this request whose parent is not in it (nor the root, in `full`). */
  detached: SpanGroup[];
  session: SessionRef | null;
  spanCount: number;
}

export interface ExportPlan {
  traces: TracePlan[];
  spanCount: number;
  rejected: number;
  /** Why spans were rejected, one line per reason (for partial_success.error_message). */
  rejections: string[];
}

interface RawSpan {
  span: Span;
  resource: Map<string, Plain>;
  traceHex: string;
  spanHex: string;
  parentHex: string | null;
}

class Rejections {
  count = 0;
  readonly reasons = new Map<string, number>();
  add(reason: string, count = 1): void {
    this.count += count;
    this.reasons.set(reason, (this.reasons.get(reason) ?? 0) + count);
  }
  lines(): string[] {
    return [...this.reasons].map(([reason, n]) => `${n} span${n === 1 ? "" : "s"}: ${reason}`);
  }
}

function collectSpans(request: ExportTraceServiceRequest, rejections: Rejections): RawSpan[] {
  const spans: RawSpan[] = [];
  let total = 0;
  for (const resourceSpans of request.resourceSpans) {
    for (const scopeSpans of resourceSpans.scopeSpans) total += scopeSpans.spans.length;
  }
  if (total > OTLP_LIMITS.maxSpansPerRequest) {
    throw new OtlpError(413, `${total} spans in one request; at most ${OTLP_LIMITS.maxSpansPerRequest} are accepted: send smaller batches`);
  }
  for (const resourceSpans of request.resourceSpans) {
    const resource = attributeMap(resourceSpans.resource?.attributes ?? []);
    for (const scopeSpans of resourceSpans.scopeSpans) {
      for (const span of scopeSpans.spans) {
        if (!isValidId(span.traceId, 16)) {
          rejections.add("invalid trace_id (16 bytes, not all zero, are required)");
          continue;
        }
        if (!isValidId(span.spanId, 8)) {
          rejections.add("invalid span_id (8 bytes, not all zero, are required)");
          continue;
        }
        const hasParent = span.parentSpanId.length > 0 && span.parentSpanId.some((b) => b !== 0);
        if (hasParent && span.parentSpanId.length !== 8) {
          rejections.add("invalid parent_span_id (empty or 8 bytes)");
          continue;
        }
        const spanHex = bytesToHex(span.spanId);
        const parentHex = hasParent ? bytesToHex(span.parentSpanId) : null;
        if (parentHex === spanHex) {
          rejections.add("the span is its own parent");
          continue;
        }
        spans.push({ span, resource, traceHex: bytesToHex(span.traceId), spanHex, parentHex });
      }
    }
  }
  return spans;
}

/** Our ids of every span and parent named, computed once each. */
async function spanIdsOf(spans: RawSpan[]): Promise<SpanIds[]> {
  const memo = new Map<string, Promise<string>>();
  const idOf = (traceHex: string, spanHex: string) => {
    const key = traceHex + spanHex;
    let id = memo.get(key);
    if (!id) memo.set(key, (id = spanUuid(traceHex, spanHex)));
    return id;
  };
  return Promise.all(
    spans.map(async (raw) => ({
      id: await idOf(raw.traceHex, raw.spanHex),
      parentId: raw.parentHex === null ? null : await idOf(raw.traceHex, raw.parentHex),
      traceId: hexToUuid(raw.traceHex),
      traceHex: raw.traceHex,
      spanHex: raw.spanHex,
    })),
  );
}

/**
 * Nests each span under its parent when the parent is in `spans`. The spans left on top (their
 * parent is elsewhere, or they are roots, or they sit deeper than MAX_NESTING) head the groups.
 */
function nest(spans: MappedSpan[], rejections: Rejections): { tops: MappedSpan[]; nodes: Map<string, IngestSpan> } {
  const byId = new Map(spans.map((s) => [s.id, s]));
  const children = new Map<string, MappedSpan[]>();
  const tops: MappedSpan[] = [];
  for (const span of spans) {
    if (span.parentId !== null && byId.has(span.parentId)) {
      const list = children.get(span.parentId);
      if (list) list.push(span);
      else children.set(span.parentId, [span]);
    } else tops.push(span);
  }
  // Depth first, without recursion: each span has one parent, so each is reached at most once.
  const nodes = new Map<string, IngestSpan>();
  const pending: [MappedSpan, number][] = [];
  for (const top of tops) {
    nodes.set(top.id, { ...top.record });
    pending.push([top, 0]);
  }
  while (pending.length > 0) {
    const [span, depth] = pending.pop()!;
    const node = nodes.get(span.id)!;
    for (const kid of children.get(span.id) ?? []) {
      const kidNode: IngestSpan = { ...kid.record };
      nodes.set(kid.id, kidNode);
      if (depth + 1 >= MAX_NESTING) {
        tops.push(kid);
        pending.push([kid, 0]);
      } else {
        (node.spans ??= []).push(kidNode);
        pending.push([kid, depth + 1]);
      }
    }
  }
  // Spans never reached from a top have parent links that form a cycle.
  if (nodes.size < spans.length) rejections.add("parent links form a cycle", spans.length - nodes.size);
  return { tops, nodes };
}

/** The trace record its root span makes: the root's name, start, content, status and metadata, plus every resource attribute. */
function traceFromRoot(root: MappedSpan, rootNode: IngestSpan, resource: Map<string, Plain>, session: SessionRef | null): IngestTrace {
  const record = root.record;
  const output = record.output;
  const resourceEntries: [string, string][] = [...resource].filter(([, v]) => v !== null).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)]);
  const duration = record.metrics?.duration_ns;
  const metrics: Record<string, number> = typeof duration === "number" ? { duration_ns: duration } : {};
  return {
    id: root.traceId,
    type: "trace",
    name: record.name,
    created_at: record.created_at,
    input: record.input,
    // One answer message reads best as its text.
    output: output && typeof output === "object" && !Array.isArray(output) && typeof output.content === "string" ? output.content : output,
    status_code: record.status_code,
    error_message: record.error_message,
    external_id: root.traceHex,
    user_metadata: fitMetadata([...root.metadataEntries, ...resourceEntries]),
    tags: record.tags,
    metrics,
    is_complete: true,
    session_id: session?.id ?? null,
    spans: [rootNode],
  };
}

export async function planExport(request: ExportTraceServiceRequest, runId: string, nowMicros = Date.now() * 1000): Promise<ExportPlan> {
  const rejections = new Rejections();
  const raw = collectSpans(request, rejections);
  const ids = await spanIdsOf(raw);

  // One record per span id: a span sent twice in one request is stored once (the last copy).
  // A span that starts more than a day ahead of the server's clock is rejected on its own
  // (contract section 12: it would escape retention); its children then wait for a parent.
  const latestStart = nowMicros + RECORD_LIMITS.maxFutureMicros;
  const mapped = new Map<string, { span: MappedSpan; resource: Map<string, Plain> }>();
  for (const [i, r] of raw.entries()) {
    const span = mapSpan(r.span, ids[i]!, attributeMap(r.span.attributes));
    if (span.startMicros !== undefined && span.startMicros > latestStart) {
      rejections.add("start time more than 24 hours ahead of the server's clock");
      continue;
    }
    mapped.delete(span.id);
    mapped.set(span.id, { span, resource: r.resource });
  }

  const byTrace = new Map<string, { span: MappedSpan; resource: Map<string, Plain> }[]>();
  for (const entry of mapped.values()) {
    const list = byTrace.get(entry.span.traceId);
    if (list) list.push(entry);
    else byTrace.set(entry.span.traceId, [entry]);
  }

  const traces: TracePlan[] = [];
  let spanCount = 0;
  for (const [traceId, entries] of byTrace) {
    const spans = entries.map((e) => e.span);
    const before = rejections.count;
    const { tops, nodes } = nest(spans, rejections);
    // The root: a span without a parent (the earliest, if a broken trace has several).
    const roots = tops.filter((s) => s.parentId === null).sort((a, b) => (a.startMicros ?? 0) - (b.startMicros ?? 0));
    const root = roots[0];
    const sessionName = root?.sessionName ?? spans.find((s) => s.sessionName !== undefined)?.sessionName;
    const session = sessionName === undefined ? null : { id: await sessionUuid(runId, sessionName), name: sessionName };
    const detachedTops = tops.filter((s) => s !== root);
    const groups = new Map<string, IngestSpan[]>();
    for (const top of detachedTops) {
      const parentId = top.parentId ?? traceId;
      const list = groups.get(parentId);
      if (list) list.push(nodes.get(top.id)!);
      else groups.set(parentId, [nodes.get(top.id)!]);
    }
    const stored = spans.length - (rejections.count - before);
    spanCount += stored;
    const earliest = Math.min(...spans.map((s) => s.startMicros ?? Number.POSITIVE_INFINITY));
    const traceHex = spans[0]!.traceHex;
    traces.push({
      traceId,
      traceHex,
      full: root ? traceFromRoot(root, nodes.get(root.id)!, entries.find((e) => e.span === root)!.resource, session) : null,
      placeholder: root
        ? null
        : {
            id: traceId,
            type: "trace",
            name: "",
            ...(Number.isFinite(earliest) ? { created_at: microsToIso(earliest) } : {}),
            external_id: traceHex,
            is_complete: false,
            session_id: session?.id ?? null,
          },
      detached: [...groups].map(([parentId, list]) => ({ parentId, spans: list })),
      session,
      spanCount: stored,
    });
  }
  return { traces, spanCount, rejected: rejections.count, rejections: rejections.lines() };
}
