/**
 * Stored rows -> records as the interface returns them, per kind: an llm span's input is a list
 * of messages and its output one message, a retriever's output a list of documents, and text
 * stored with `*_is_json = 1` is parsed back into the structure the client sent. Pure.
 *
 * Projection (contract, section 4): a record always has `id` and `type`; with `column_ids` it
 * has exactly the selected columns that apply to its kind, otherwise every field of its kind.
 */
import { MAX_JSON_DEPTH } from "../http/bounded-body";
import { nestsDeeperThan } from "../http/json-shape";
import { microsToIso } from "../db/client";
import { appliesToKind, type SelectedColumn } from "./search-columns";
import { SEARCH_LIMITS } from "./search-limits";
import type { Projection, SearchQuery } from "./search-query";

export type StoredRow = Record<string, unknown>;
type Json = unknown;

interface Message {
  role: string;
  content: unknown;
  [key: string]: unknown;
}

interface Document {
  content: unknown;
  metadata: Record<string, unknown>;
  [key: string]: unknown;
}

/** Fields every kind has, in the order records are written out. */
const COMMON_FIELDS = [
  "id", "type", "name", "input", "output", "redacted_input", "redacted_output", "created_at", "updated_at",
  "user_metadata", "tags", "status_code", "external_id", "dataset_input", "dataset_output", "dataset_metadata",
  "session_id", "trace_id", "project_id", "run_id", "has_children", "is_complete", "error_message",
  "progress_message",
] as const;

const SPAN_FIELDS = ["parent_id", "step_number"] as const;

const KIND_FIELDS: Record<string, readonly string[]> = {
  llm: ["model", "temperature", "finish_reason", "tools", "events"],
  tool: ["tool_call_id"],
  agent: ["agent_type"],
  control: ["control_id", "agent_name", "check_stage", "applies_to", "evaluator_name", "selector_path"],
  session: ["previous_session_id"],
};

const SPAN_KINDS = new Set(["agent", "workflow", "llm", "tool", "retriever", "control"]);

/** Annotation and file fields: part of the interface's records, never filled by this service. */
const EMPTY_FIELDS: Record<string, () => Json> = {
  annotations: () => ({}),
  annotation_aggregates: () => ({}),
  annotation_agreement: () => ({}),
  annotation_queue_ids: () => [],
  file_ids: () => [],
  file_modalities: () => [],
};

/** EMPTY_FIELDS' values as JSON text (the export writes records as text: export/record-json.ts). */
export const EMPTY_FIELD_JSON: ReadonlyMap<string, string> = new Map(Object.entries(EMPTY_FIELDS).map(([field, empty]) => [field, JSON.stringify(empty())]));

const FULL_FIELDS = new Map<string, readonly string[]>();

export function fullFieldsOf(kind: string): readonly string[] {
  let fields = FULL_FIELDS.get(kind);
  if (!fields) {
    fields = [...COMMON_FIELDS, ...(SPAN_KINDS.has(kind) ? SPAN_FIELDS : []), ...(KIND_FIELDS[kind] ?? []), ...Object.keys(EMPTY_FIELDS)];
    FULL_FIELDS.set(kind, fields);
  }
  return fields;
}

/** Stored columns a field is read from (default: the column of the same name). */
const FIELD_STORAGE: Record<string, readonly string[]> = {
  input: ["input", "input_is_json"],
  output: ["output", "output_is_json"],
  ...Object.fromEntries(Object.keys(EMPTY_FIELDS).map((f) => [f, []])),
};

function storageOfField(field: string): readonly string[] {
  return FIELD_STORAGE[field] ?? [field];
}

const FAMILY_KINDS: Record<SearchQuery["family"], readonly string[]> = {
  session: ["session"],
  trace: ["trace"],
  span: [...SPAN_KINDS],
};

function selectsMetrics(projection: Projection): boolean {
  return projection.metrics === "all" || projection.metrics.size > 0;
}

/** Fields of the selected columns (a metadata key selects its whole map). */
function selectedFields(columns: readonly SelectedColumn[]): string[] {
  const fields: string[] = [];
  for (const column of columns) {
    if (column.kind === "standard" || column.kind === "field") fields.push(column.id);
    else if (column.kind !== "metric" && column.kind !== "annotation") fields.push(column.kind);
  }
  return fields;
}

/** The stored columns a page must read to shape its records. */
export function storageNeeded(query: SearchQuery): string[] {
  const needed = new Set<string>(["id", "type", "created_at"]);
  const { projection } = query;
  const fields = projection.columns ? selectedFields(projection.columns) : FAMILY_KINDS[query.family].flatMap(fullFieldsOf);
  for (const field of fields) for (const column of storageOfField(field)) needed.add(column);
  if (selectsMetrics(projection) || query.includeMetricInfo) needed.add("metrics");
  if (query.includeMetricInfo) needed.add("metric_info");
  if (projection.feedback) needed.add("feedback_rating_info");
  return [...needed];
}

/**
 * Stored JSON text as a value, or the text itself when it is not JSON or nests deeper than any body
 * the API accepts (MAX_JSON_DEPTH): answering such a value would overflow JSON.stringify's stack,
 * and a search must answer whatever was stored (OTLP keeps deep JSON-looking text as text).
 */
function parseJson(text: unknown): Json {
  if (typeof text !== "string") return null;
  if (nestsDeeperThan(text, MAX_JSON_DEPTH)) return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export function jsonObject(text: unknown): Record<string, Json> {
  const value = parseJson(text);
  return value && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, Json>) : {};
}

/** Stored text as sent: the string itself, or the parsed structure when it was stored as JSON. */
function storedContent(text: unknown, isJson: unknown): Json {
  if (text === null || text === undefined) return null;
  return isJson ? parseJson(text) : text;
}

function isObject(value: Json): value is Record<string, Json> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function toMessage(value: Json, defaultRole: string): Message {
  if (isObject(value)) return { ...value, role: typeof value.role === "string" ? value.role : defaultRole, content: value.content ?? "" };
  return { role: defaultRole, content: typeof value === "string" ? value : JSON.stringify(value) };
}

function toUserMessage(value: Json): Message {
  return toMessage(value, "user");
}

function toMessages(value: Json): Message[] {
  if (value === null) return [];
  return Array.isArray(value) ? value.map(toUserMessage) : [toUserMessage(value)];
}

/** One message: the last of a list (the model's final answer), or the value itself. */
function toOutputMessage(value: Json): Message | null {
  if (value === null) return null;
  if (Array.isArray(value)) return value.length === 0 ? null : toMessage(value[value.length - 1], "assistant");
  return toMessage(value, "assistant");
}

function toDocument(value: Json): Document {
  if (isObject(value)) {
    const { page_content, ...rest } = value;
    return { ...rest, content: rest.content ?? page_content ?? "", metadata: isObject(rest.metadata) ? rest.metadata : {} };
  }
  return { content: typeof value === "string" ? value : JSON.stringify(value), metadata: {} };
}

function toDocuments(value: Json): Document[] {
  if (value === null) return [];
  return Array.isArray(value) ? value.map(toDocument) : [toDocument(value)];
}

function inputOf(kind: string, value: Json): Json {
  return kind === "llm" ? toMessages(value) : value;
}

function outputOf(kind: string, value: Json): Json {
  if (kind === "llm") return toOutputMessage(value);
  if (kind === "retriever") return toDocuments(value);
  return value;
}

function truncateText(value: Json, limit: number): Json {
  return typeof value === "string" && value.length > limit ? value.slice(0, limit) : value;
}

/** Cuts long strings of an input or output, inside messages and documents too. */
function truncateContent(value: Json): Json {
  if (typeof value === "string") return truncateText(value, SEARCH_LIMITS.truncatedFieldLength);
  if (Array.isArray(value)) return value.map(truncateContent);
  if (isObject(value) && "content" in value) return { ...value, content: truncateContent(value.content) };
  return value;
}

function cut(value: Json, options: ShapeOptions): Json {
  return options.truncate ? truncateContent(value) : value;
}

/** Tools as sent: a list when the stored text is a JSON list, else the text. */
function toolsOf(text: unknown): Json {
  if (typeof text !== "string") return null;
  const parsed = parseJson(text);
  return Array.isArray(parsed) ? parsed : text;
}

function isoOrNull(micros: unknown): string | null {
  return typeof micros === "number" ? microsToIso(micros) : null;
}

export interface ShapeOptions {
  truncate: boolean;
}

/**
 * One field of a record. This runs for every field of every returned record, so it creates no
 * closures: the bundle keeps function names (esbuild `keepNames`, wrangler's default), which
 * costs a property definition per closure created.
 */
export function readField(field: string, row: StoredRow, kind: string, options: ShapeOptions): Json {
  switch (field) {
    case "input":
      return cut(inputOf(kind, storedContent(row.input, row.input_is_json)), options);
    case "output":
      return cut(outputOf(kind, storedContent(row.output, row.output_is_json)), options);
    case "redacted_input": {
      const value = parseJson(row.redacted_input);
      return value === null ? null : cut(inputOf(kind, value), options);
    }
    case "redacted_output": {
      const value = parseJson(row.redacted_output);
      return value === null ? null : cut(outputOf(kind, value), options);
    }
    case "dataset_input":
    case "dataset_output":
      return cut(row[field] ?? null, options);
    case "created_at":
    case "updated_at":
      return isoOrNull(row[field]);
    case "user_metadata":
    case "dataset_metadata":
    case "feedback_rating_info":
      return jsonObject(row[field]);
    case "tags": {
      const tags = parseJson(row.tags);
      return Array.isArray(tags) ? tags : [];
    }
    case "has_children":
    case "is_complete":
      return row[field] === 1;
    case "tools":
      return toolsOf(row.tools);
    case "events":
      return parseJson(row.events);
    default: {
      const empty = EMPTY_FIELDS[field];
      if (empty) return empty();
      return row[field] ?? null;
    }
  }
}

export function metricsOf(row: StoredRow, selection: Projection["metrics"]): Record<string, number> {
  const all = jsonObject(row.metrics);
  const out: Record<string, number> = {};
  for (const [name, value] of Object.entries(all)) {
    if (typeof value === "number" && (selection === "all" || selection.has(name))) out[name] = value;
  }
  return out;
}

/**
 * `metric_info.<name>`: a client's metric as `{status_type: "success", value, metadata}` (its
 * stored dictionary as the metadata); a scorer's result (an entry the evaluations wrote, marked
 * by its `scorer_id`: src/evaluations/result-writes.ts) as stored, pending, error and
 * not_applicable included, which have no value (contract section 15).
 */
export function metricInfoOf(row: StoredRow, metrics: Record<string, number>) {
  const stored = jsonObject(row.metric_info);
  const info: Record<string, Json> = {};
  for (const [name, value] of Object.entries(metrics)) {
    const entry = stored[name];
    info[name] = isScorerResult(entry) ? entry : { status_type: "success", value, metadata: isObject(entry) ? entry : {} };
  }
  for (const [name, entry] of Object.entries(stored)) {
    if (!(name in info) && isScorerResult(entry)) info[name] = entry;
  }
  return info;
}

const isScorerResult = (entry: Json | undefined): entry is Record<string, Json> => isObject(entry) && typeof entry.scorer_id === "string" && typeof entry.status_type === "string";

function selectedColumnsOf(record: Record<string, Json>, row: StoredRow, kind: string, columns: readonly SelectedColumn[], options: ShapeOptions): void {
  for (const column of columns) {
    if (!appliesToKind(column, kind)) continue;
    if (column.kind === "standard" || column.kind === "field") {
      record[column.id] = readField(column.id, row, kind, options);
    } else if (column.kind === "user_metadata" || column.kind === "dataset_metadata") {
      const all = jsonObject(row[column.kind]);
      const picked = (record[column.kind] ??= {}) as Record<string, Json>;
      if (Object.hasOwn(all, column.key)) picked[column.key] = all[column.key];
    }
  }
}

/** One record of the answer. */
export function shapeRecord(row: StoredRow, query: SearchQuery): Record<string, Json> {
  const kind = String(row.type);
  const options: ShapeOptions = { truncate: query.truncateFields };
  const { projection } = query;
  const record: Record<string, Json> = { id: row.id, type: kind };
  if (projection.columns) {
    selectedColumnsOf(record, row, kind, projection.columns, options);
  } else {
    for (const field of fullFieldsOf(kind)) record[field] = readField(field, row, kind, options);
  }
  const metrics = selectsMetrics(projection) || query.includeMetricInfo ? metricsOf(row, projection.metrics) : {};
  if (selectsMetrics(projection) || !projection.columns) record.metrics = metrics;
  if (projection.feedback) record.feedback_rating_info = jsonObject(row.feedback_rating_info);
  if (query.includeCounts && kind === "trace") record.num_spans = row.num_spans ?? 0;
  if (query.includeCounts && kind === "session") record.num_traces = row.num_traces ?? 0;
  if (query.includeMetricInfo) record.metric_info = metricInfoOf(row, metrics);
  return record;
}
