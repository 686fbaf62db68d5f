/**
 * Turns ingested traces (with nested spans) and sessions into flat rows for the `records` table
 * and its side tables. Pure: no database, so it is unit-tested on its own.
 */
import { type RecordFamily, STANDARD_COLUMNS } from "../columns/standard-columns";
import { METRIC_COLUMN_PREFIX } from "../columns/metric-catalogue";
import { RequestValidationError } from "../http/errors";
import type { ValidationErrorItem } from "../http/validation-errors";
import type { IngestSpan, IngestTrace } from "./ingest-schemas";
import { callCost, type PriceBook } from "../pricing/price-lookup";
import { DERIVED_COST_BIT } from "./derived-metrics";
import { RECORD_LIMITS, utf8Bytes } from "./record-limits";
import { isoToMicros } from "./timestamps";
import type { CompiledPolicy } from "../redaction/policy";
import { redactRecord } from "../redaction/redact-record";

/** A `records` row, keyed by SQL column name. */
export interface RecordRow {
  id: string;
  organization_id: string;
  project_id: string;
  run_id: string;
  record_type: RecordFamily;
  type: string;
  name: string;
  created_at: number;
  updated_at: number | null;
  input: string | null;
  input_is_json: 0 | 1;
  output: string | null;
  output_is_json: 0 | 1;
  redacted_input: string | null;
  redacted_output: string | null;
  status_code: number | null;
  external_id: string | null;
  dataset_input: string | null;
  dataset_output: string | null;
  dataset_metadata: string | null;
  session_id: string | null;
  trace_id: string | null;
  parent_id: string | null;
  is_complete: 0 | 1;
  step_number: number | null;
  error_message: string | null;
  progress_message: string | null;
  user_metadata: string;
  tags: string;
  metrics: string;
  metric_info: string | null;
  feedback_rating_info: string | null;
  model: string | null;
  temperature: number | null;
  finish_reason: string | null;
  tools: string | null;
  events: string | null;
  tool_call_id: string | null;
  agent_type: string | null;
  control_id: number | null;
  agent_name: string | null;
  check_stage: string | null;
  applies_to: string | null;
  evaluator_name: string | null;
  selector_path: string | null;
  previous_session_id: string | null;
  /** Bits of `metrics` the service derived (derived-metrics.ts): here, an llm span's computed cost. */
  derived_metrics: number;
  /** The project's partition the record's first write puts it in (docs/partitions.md); a later write never changes it. */
  partition_seq: number | null;
}

/** Every column of `records` that ingestion writes, in one fixed order. */
export const RECORD_COLUMNS = [
  "id", "organization_id", "project_id", "run_id", "record_type", "type", "name", "created_at", "updated_at",
  "input", "input_is_json", "output", "output_is_json", "redacted_input", "redacted_output", "status_code",
  "external_id", "dataset_input", "dataset_output", "dataset_metadata", "session_id", "trace_id", "parent_id",
  "is_complete", "step_number", "error_message", "progress_message", "user_metadata", "tags", "metrics",
  "metric_info", "feedback_rating_info", "model", "temperature", "finish_reason", "tools", "events",
  "tool_call_id", "agent_type", "control_id", "agent_name", "check_stage", "applies_to", "evaluator_name",
  "selector_path", "previous_session_id", "derived_metrics", "partition_seq",
] as const satisfies readonly (keyof RecordRow)[];

export interface RecordBatch {
  records: RecordRow[];
  /**
   * Each record as the JSON array of its RECORD_COLUMNS values, in `records` order: what
   * write-records.ts sends, encoded once (its UTF-8 size is checked against the row cap here).
   */
  encoded: string[];
  /** Ids of records known to have children after this batch (their parents). */
  parentIds: string[];
  /** [family, column id] pairs that hold a value in this batch. */
  presentColumns: [RecordFamily, string][];
  /**
   * [model, input price, output price] of llm spans whose model has a price but that carry no
   * cost and cannot compute one yet (a token count is missing): the price a later write's token
   * counts are priced with (write-records.ts, trigger `records_cost_when_known`).
   */
  pendingPrices?: [string, number, number][];
}

export interface IngestContext {
  organizationId: string;
  projectId: string;
  runId: string;
  /** The request's `session_id`, for traces that name none. */
  sessionId: string | null;
  /** The request's `is_complete`, for records that say nothing. */
  isComplete: boolean | null;
  nowMicros: number;
  /**
   * The partition this batch writes into (`records.partition_seq`, docs/partitions.md): the open
   * one for new roots, the root's for its children. A record already stored keeps its own.
   */
  partitionSeq: number;
  /** Prices of the writing organization: an llm span without a cost gets one (contract, section 9). */
  prices: PriceBook;
  /** The project's redaction policy (src/redaction), applied to each row before it is encoded; null: off. */
  redaction?: CompiledPolicy | null;
}

type Content = IngestTrace["input"];

/** Stored text of an input or output: the string itself, or JSON of anything structured. */
export function storedContent(value: Content, normalize: (v: unknown) => unknown = (v) => v): [string | null, 0 | 1] {
  if (value === undefined || value === null) return [null, 0];
  if (typeof value === "string") return [value, 0];
  return [JSON.stringify(normalize(value)), 1];
}

/** Retriever documents: `page_content` is accepted as an alias of `content`. */
export function normalizeDocuments(value: unknown): unknown {
  if (!Array.isArray(value)) return value;
  return value.map((doc) => {
    if (doc && typeof doc === "object" && !("content" in doc) && "page_content" in doc) {
      const { page_content, ...rest } = doc as Record<string, unknown>;
      return { content: page_content, metadata: {}, ...rest };
    }
    if (typeof doc === "string") return { content: doc, metadata: {} };
    return doc;
  });
}

function jsonOrNull(value: unknown): string | null {
  return value === undefined || value === null ? null : JSON.stringify(value);
}

// Object.fromEntries defines own properties: a client's key such as `__proto__` or
// `constructor` is kept as data, never taken for the object's prototype or a method.
function metadataOf(raw: Record<string, string | number | boolean | null> | null | undefined): Record<string, string> {
  return Object.fromEntries(
    Object.entries(raw ?? {}).flatMap(([key, value]) => (value === null ? [] : [[key, String(value)] as const])),
  );
}

function metricsOf(raw: Record<string, number | null> | null | undefined): Record<string, number> {
  return Object.fromEntries(
    Object.entries(raw ?? {}).filter((entry): entry is [string, number] => typeof entry[1] === "number" && Number.isFinite(entry[1])),
  );
}

/** Where a record sits in the request body, as a 422's `loc`. */
export type RecordPath = (string | number)[];

/** Columns every record has a value for. */
const ALWAYS_FILLED = new Set(["id", "created_at", "is_complete", "type"]);

/** Standard column ids (plus metric ids) that hold a value in this row. */
function filledColumns(row: RecordRow, metricNames: string[]): string[] {
  const filled: string[] = [];
  for (const column of STANDARD_COLUMNS) {
    if (column.id === "has_children") continue; // known only once children arrive: see parentIds
    const value = (row as unknown as Record<string, unknown>)[column.storage];
    const filledHere = ALWAYS_FILLED.has(column.id) || (column.id === "tags" ? value !== "[]" : value !== null && value !== undefined && value !== "");
    if (filledHere) filled.push(column.id);
  }
  return [...filled, ...metricNames.map((n) => `${METRIC_COLUMN_PREFIX}${n}`)];
}

class BatchBuilder {
  readonly batch: RecordBatch = { records: [], encoded: [], parentIds: [], presentColumns: [], pendingPrices: [] };
  private readonly present = new Set<string>();
  private readonly parents = new Set<string>();
  /** Where each id of the request was first seen. */
  private readonly seenIds = new Map<string, RecordPath>();
  private readonly faults: ValidationErrorItem[] = [];

  constructor(private readonly ctx: IngestContext) {}

  get prices(): PriceBook {
    return this.ctx.prices;
  }

  /**
   * The batch, or a 422 listing every fault found while building it: an id used by two records
   * of the request (which would otherwise be two writes to one record, the later silently
   * winning), or a record larger than a database row may be.
   */
  finish(): RecordBatch {
    if (this.faults.length > 0) throw new RequestValidationError(this.faults);
    return this.batch;
  }

  /** Adds a record; its metric names feed the run's available columns. */
  add(path: RecordPath, row: RecordRow, metrics: Record<string, number>): void {
    const { batch } = this;
    const firstSeen = this.seenIds.get(row.id);
    if (firstSeen) {
      const msg = `Value error, id ${row.id} is also the id of the record at ${firstSeen.slice(1).join(".")}: each record of a request needs its own id`;
      this.faults.push({ loc: [...path, "id"], msg, type: "value_error", input: row.id, ctx: { error: msg.replace("Value error, ", "") } });
      return;
    }
    this.seenIds.set(row.id, path);
    // Before encoding: the encoded row is what every table, index and trigger is written from.
    if (this.ctx.redaction) redactRecord(row, this.ctx.redaction);
    const encoded = JSON.stringify(RECORD_COLUMNS.map((c) => row[c]));
    // A UTF-16 unit is at most 3 bytes of UTF-8: most records are counted without a pass over them.
    const bytes = encoded.length * 3 <= RECORD_LIMITS.maxRecordBytes ? 0 : utf8Bytes(encoded);
    if (bytes > RECORD_LIMITS.maxRecordBytes) {
      const msg = `Value error, this record takes ${bytes} bytes as stored (its text fields and JSON together); a record may take at most ${RECORD_LIMITS.maxRecordBytes}`;
      this.faults.push({ loc: path, msg, type: "value_error", ctx: { error: msg.replace("Value error, ", ""), max_bytes: RECORD_LIMITS.maxRecordBytes } });
      return;
    }
    batch.records.push(row);
    batch.encoded.push(encoded);
    for (const column of filledColumns(row, Object.keys(metrics))) {
      const key = `${row.record_type}\u0000${column}`;
      if (!this.present.has(key)) {
        this.present.add(key);
        batch.presentColumns.push([row.record_type, column]);
      }
    }
  }

  markParent(id: string, family: RecordFamily): void {
    if (this.parents.has(id)) return;
    this.parents.add(id);
    this.batch.parentIds.push(id);
    const key = `${family}\u0000has_children`;
    if (!this.present.has(key)) {
      this.present.add(key);
      this.batch.presentColumns.push([family, "has_children"]);
    }
  }

  baseRow(
    family: RecordFamily,
    type: string,
    fields: IngestTrace | IngestSpan,
    ids: { id: string; session_id: string | null; trace_id: string | null; parent_id: string | null },
    times: RecordTimes,
    metrics: Record<string, number>,
  ): RecordRow {
    const [input, inputIsJson] = storedContent(fields.input);
    const [output, outputIsJson] = storedContent(fields.output, type === "retriever" ? normalizeDocuments : undefined);
    const isComplete = fields.is_complete ?? this.ctx.isComplete ?? true;
    // The ids spelled out, not spread: a literal that starts with a spread and adds 40-odd
    // properties after it is built property by property in V8's slow path, which made this
    // function most of the row builder's time (20x the rest; docs/benchmarks.md, "Ingestion").
    return {
      id: ids.id,
      session_id: ids.session_id,
      trace_id: ids.trace_id,
      parent_id: ids.parent_id,
      organization_id: this.ctx.organizationId,
      project_id: this.ctx.projectId,
      run_id: this.ctx.runId,
      record_type: family,
      type,
      name: fields.name ?? "",
      created_at: times.createdAt,
      updated_at: times.updatedAt,
      input,
      input_is_json: inputIsJson,
      output,
      output_is_json: outputIsJson,
      redacted_input: jsonOrNull(fields.redacted_input),
      redacted_output: jsonOrNull(fields.redacted_output),
      status_code: fields.status_code ?? null,
      external_id: fields.external_id ?? null,
      dataset_input: fields.dataset_input ?? null,
      dataset_output: fields.dataset_output ?? null,
      dataset_metadata: jsonOrNull(fields.dataset_metadata),
      is_complete: isComplete ? 1 : 0,
      step_number: fields.step_number ?? null,
      error_message: fields.error_message ?? null,
      progress_message: fields.progress_message ?? null,
      user_metadata: JSON.stringify(metadataOf(fields.user_metadata)),
      tags: JSON.stringify(fields.tags ?? []),
      metrics: JSON.stringify(metrics),
      metric_info: jsonOrNull(fields.metric_info),
      feedback_rating_info: jsonOrNull(fields.feedback_rating_info),
      model: null,
      temperature: null,
      finish_reason: null,
      tools: null,
      events: null,
      tool_call_id: null,
      agent_type: null,
      control_id: null,
      agent_name: null,
      check_stage: null,
      applies_to: null,
      evaluator_name: null,
      selector_path: null,
      previous_session_id: null,
      derived_metrics: 0,
      partition_seq: this.ctx.partitionSeq,
    };
  }

  /**
   * The record's times, each of the client's read once: `created_at` (else `fallback`) and
   * `updated_at`. A time the client gave more than RECORD_LIMITS.maxFutureMicros past the
   * server's clock is a fault of the record at `path` (contract section 12).
   */
  times(path: RecordPath, fields: { created_at?: string | null; updated_at?: string | null }, fallback: number): RecordTimes {
    const created = fields.created_at ? isoToMicros(fields.created_at) : undefined;
    const updated = fields.updated_at ? isoToMicros(fields.updated_at) : undefined;
    const latest = this.ctx.nowMicros + RECORD_LIMITS.maxFutureMicros;
    if (created !== undefined && created > latest) this.futureFault(path, "created_at", fields.created_at);
    if (updated !== undefined && updated > latest) this.futureFault(path, "updated_at", fields.updated_at);
    return { createdAt: created ?? fallback, updatedAt: updated ?? null };
  }

  private futureFault(path: RecordPath, field: "created_at" | "updated_at", given: string | null | undefined): void {
    const msg = `Value error, ${field} is more than 24 hours ahead of the server's clock (${new Date(this.ctx.nowMicros / 1000).toISOString()}): such a record would escape retention or refuse later updates`;
    this.faults.push({ loc: [...path, field], msg, type: "value_error", input: given, ctx: { error: msg.replace("Value error, ", "") } });
  }
}

/** A record's `created_at` and `updated_at`, in microseconds. */
interface RecordTimes {
  createdAt: number;
  updatedAt: number | null;
}

function spanKindFields(span: IngestSpan): Partial<RecordRow> {
  return {
    model: span.model ?? null,
    temperature: span.temperature ?? null,
    finish_reason: span.finish_reason ?? null,
    tools: span.tools == null ? null : typeof span.tools === "string" ? span.tools : JSON.stringify(span.tools),
    events: jsonOrNull(span.events),
    tool_call_id: span.tool_call_id ?? null,
    agent_type: span.type === "agent" ? (span.agent_type ?? "default") : null,
    control_id: span.control_id ?? null,
    agent_name: span.agent_name ?? null,
    check_stage: span.check_stage ?? null,
    applies_to: span.applies_to ?? null,
    evaluator_name: span.evaluator_name ?? null,
    selector_path: span.selector_path ?? null,
  };
}

/**
 * An llm span that names its model and both token counts but no cost gets the cost of its
 * model's price, marked as derived; a span whose model has no price gets none. A write that
 * lacks one of the three leaves the cost alone (a later write that completes them computes it).
 */
function withComputedCost(model: string | null, metrics: Record<string, number>, prices: PriceBook, pending: [string, number, number][]): number {
  const input = metrics.num_input_tokens;
  const output = metrics.num_output_tokens;
  if (model === null || metrics.cost !== undefined) return 0;
  const price = prices(model);
  if (price === null) return 0;
  if (input === undefined || output === undefined) {
    // The token counts may come in a later write of this span: keep the price it will need.
    pending.push([model, price.input_price, price.output_price]);
    return 0;
  }
  metrics.cost = callCost(price, input, output);
  return DERIVED_COST_BIT;
}

/** Rows of one span and, depth first, of all the spans nested in it. */
function addSpan(
  builder: BatchBuilder,
  path: RecordPath,
  span: IngestSpan,
  parent: { id: string; family: RecordFamily },
  traceId: string,
  sessionId: string | null,
  fallbackCreatedAt: number,
): void {
  const id = span.id ?? crypto.randomUUID();
  const times = builder.times(path, span, fallbackCreatedAt);
  // Priced before the row is built, so that its metrics are written out once, the cost included.
  const metrics = metricsOf(span.metrics);
  const derived = span.type === "llm" ? withComputedCost(span.model ?? null, metrics, builder.prices, builder.batch.pendingPrices!) : 0;
  const row = {
    ...builder.baseRow("span", span.type, span, { id, session_id: sessionId, trace_id: traceId, parent_id: parent.id }, times, metrics),
    ...spanKindFields(span),
    derived_metrics: derived,
  };
  builder.markParent(parent.id, parent.family);
  builder.add(path, row, metrics);
  (span.spans ?? []).forEach((child, i) => addSpan(builder, [...path, "spans", i], child, { id, family: "span" }, traceId, sessionId, times.createdAt));
}

/** Rows for an ingest request: each trace, then its spans depth first. */
export function traceRows(traces: IngestTrace[], ctx: IngestContext, path: RecordPath = ["body", "traces"]): RecordBatch {
  const builder = new BatchBuilder(ctx);
  for (const [index, trace] of traces.entries()) {
    const id = trace.id ?? crypto.randomUUID();
    const sessionId = trace.session_id ?? ctx.sessionId;
    const times = builder.times([...path, index], trace, ctx.nowMicros);
    const metrics = metricsOf(trace.metrics);
    // A trace's parent is its session: has_children of a session means "has traces".
    const row = builder.baseRow("trace", "trace", trace, { id, session_id: sessionId, trace_id: id, parent_id: sessionId }, times, metrics);
    if (sessionId) builder.markParent(sessionId, "session");
    builder.add([...path, index], row, metrics);
    (trace.spans ?? []).forEach((span, i) => addSpan(builder, [...path, index, "spans", i], span, { id, family: "trace" }, id, sessionId, times.createdAt));
  }
  return builder.finish();
}

/**
 * Rows for spans posted on their own (streaming: `POST /projects/{pid}/spans`) under a trace
 * and a parent that may not have arrived yet. The top-level spans hang from `parentId` (the trace
 * itself when it equals `traceId`); nested spans from their container, as in `traceRows`. The
 * session is unknown here: it is copied from the trace by src/ingest/streaming-links.ts.
 */
export function spanRows(
  spans: IngestSpan[],
  under: { traceId: string; parentId: string },
  ctx: IngestContext,
  path: RecordPath = ["body", "spans"],
): RecordBatch {
  const builder = new BatchBuilder(ctx);
  const parent = { id: under.parentId, family: (under.parentId === under.traceId ? "trace" : "span") as RecordFamily };
  spans.forEach((span, i) => addSpan(builder, [...path, i], span, parent, under.traceId, null, ctx.nowMicros));
  return builder.finish();
}

export interface SessionInput {
  id?: string | null;
  name?: string | null;
  previous_session_id?: string | null;
  external_id?: string | null;
  user_metadata?: Record<string, string | number | boolean | null> | null;
  created_at?: string | null;
}

export function sessionRows(session: SessionInput, ctx: IngestContext): RecordBatch {
  const builder = new BatchBuilder(ctx);
  const times = builder.times(["body"], session, ctx.nowMicros);
  const id = session.id ?? crypto.randomUUID();
  const row: RecordRow = {
    ...builder.baseRow("session", "session", { ...session, type: "trace" } as IngestTrace, { id, session_id: id, trace_id: null, parent_id: null }, times, {}),
    previous_session_id: session.previous_session_id ?? null,
  };
  builder.add(["body"], row, {});
  return builder.finish();
}

