/**
 * A record's JSON text for the export, written from its stored row: the same bytes as
 * `JSON.stringify` of the record the search shapes (shapeRecord, then `redacted` when asked), at
 * a fraction of the cost. Shaping builds an object of ~45 fields per record, parses every stored
 * JSON text into objects, and JSON.stringify then walks them all again; here each field is
 * written as text in the shaped record's key order, and a stored JSON text whose shaped value is
 * what was stored is copied into the line as it is.
 *
 * Why copying is the same bytes: input and output are stored with `*_is_json = 1` only as
 * `JSON.stringify` of the value the client sent (src/ingest/record-rows.ts `storedContent`;
 * merges keep one side's text whole, src/ingest/write-records.ts), and JSON.stringify's text is a
 * fixed point of parse-then-stringify (same keys in the same order, numbers in their shortest
 * form, the same escapes). Columns that SQLite's JSON functions rewrite (user_metadata, metrics,
 * metric_info: json_patch keeps its own key order and number text) are parsed and written again,
 * as before, unless they hold the empty object. An llm's messages and a retriever's documents are
 * parsed to see whether shaping would change them (a missing role, a `page_content` alias, a
 * single message for a list); only when it would not is the stored text copied.
 * test/export-record-json.test.ts holds both writers to the same bytes record by record.
 */
import { MAX_JSON_DEPTH } from "../http/bounded-body";
import { nestsDeeperThan } from "../http/json-shape";
import { microsToIso } from "../db/client";
import type { SearchQuery } from "../search/search-query";
import { EMPTY_FIELD_JSON, type ShapeOptions, type StoredRow, fullFieldsOf, jsonObject, metricInfoOf, metricsOf, readField, shapeRecord } from "../search/shape-record";
import { redacted } from "./export-formats";

const OPTIONS: ShapeOptions = { truncate: false };

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === "object" && !Array.isArray(value);

/** A message shaping leaves as it is: an object with a string role and a content. */
const isWholeMessage = (value: unknown): boolean =>
  isObject(value) && typeof value.role === "string" && value.content !== undefined && value.content !== null;

/** A document shaping leaves as it is: a content, an object metadata, no `page_content` alias. */
const isWholeDocument = (value: unknown): boolean =>
  isObject(value) && !Object.hasOwn(value, "page_content") && value.content !== undefined && value.content !== null && isObject(value.metadata);

/**
 * Whether shaping the parsed stored value of `field` for `kind` gives back the same value:
 * readField's inputOf / outputOf (shape-record.ts) change nothing but these shapes.
 */
function shapedAsStored(field: "input" | "output", kind: string, text: string): boolean {
  const messages = kind === "llm";
  const documents = kind === "retriever" && field === "output";
  if (!messages && !documents) return true;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return false;
  }
  if (documents) return Array.isArray(value) && value.every(isWholeDocument);
  return field === "input" ? Array.isArray(value) && value.every(isWholeMessage) : isWholeMessage(value);
}

/** input or output: the stored JSON text itself where shaping keeps it, else the shaped value's text. */
function contentJson(field: "input" | "output", row: StoredRow, kind: string): string {
  const text = row[field];
  if (typeof text === "string" && row[`${field}_is_json`] && !nestsDeeperThan(text, MAX_JSON_DEPTH) && shapedAsStored(field, kind, text)) return text;
  return JSON.stringify(readField(field, row, kind, OPTIONS));
}

/** An object column: `{}` as it is, anything else parsed and written again. */
function objectJson(text: unknown): string {
  return text === "{}" || text === null || text === undefined ? "{}" : JSON.stringify(jsonObject(text));
}

/** One field's JSON text (readField's value, written). */
function fieldJson(field: string, row: StoredRow, kind: string): string {
  switch (field) {
    case "input":
    case "output":
      return contentJson(field, row, kind);
    case "redacted_input":
    case "redacted_output":
    case "tools":
    case "events":
    case "dataset_input":
    case "dataset_output":
      return row[field] === null || row[field] === undefined ? "null" : JSON.stringify(readField(field, row, kind, OPTIONS));
    case "created_at":
    case "updated_at": {
      const micros = row[field];
      return typeof micros === "number" ? `"${microsToIso(micros)}"` : "null";
    }
    case "user_metadata":
    case "dataset_metadata":
      return objectJson(row[field]);
    case "tags":
      return row.tags === "[]" ? "[]" : JSON.stringify(readField(field, row, kind, OPTIONS));
    case "has_children":
    case "is_complete":
      return row[field] === 1 ? "true" : "false";
    default:
      return EMPTY_FIELD_JSON.get(field) ?? JSON.stringify(row[field] ?? null);
  }
}

/**
 * The record of `row` as JSON text, without a line break: `JSON.stringify(shapeRecord(row,
 * query))`, or of its redacted form (export-formats.ts `redacted`) when `redact`.
 */
export function recordJson(row: StoredRow, query: SearchQuery, redact: boolean): string {
  const { projection } = query;
  if (projection.columns !== null || query.truncateFields) {
    const record = shapeRecord(row, query);
    return JSON.stringify(redact ? redacted(record) : record);
  }
  const kind = String(row.type);
  // Redaction puts the redacted text in input's / output's place (their keys keep their places).
  let input: string | undefined;
  let output: string | undefined;
  if (redact) {
    if (row.redacted_input !== null && row.redacted_input !== undefined) {
      const value = readField("redacted_input", row, kind, OPTIONS);
      if (value !== null) input = JSON.stringify(value);
    }
    if (row.redacted_output !== null && row.redacted_output !== undefined) {
      const value = readField("redacted_output", row, kind, OPTIONS);
      if (value !== null) output = JSON.stringify(value);
    }
  }
  let text = "{";
  for (const field of fullFieldsOf(kind)) {
    const value = field === "input" && input !== undefined ? input : field === "output" && output !== undefined ? output : fieldJson(field, row, kind);
    text += `${text.length === 1 ? "" : ","}"${field}":${value}`;
  }
  // As shapeRecord appends them: every metric, the stored feedback, the child counts, metric info.
  const metrics = row.metrics === "{}" && !query.includeMetricInfo ? undefined : metricsOf(row, projection.metrics);
  text += `,"metrics":${metrics === undefined ? "{}" : JSON.stringify(metrics)}`;
  if (projection.feedback) text += `,"feedback_rating_info":${objectJson(row.feedback_rating_info)}`;
  if (query.includeCounts && kind === "trace") text += `,"num_spans":${JSON.stringify(row.num_spans ?? 0)}`;
  if (query.includeCounts && kind === "session") text += `,"num_traces":${JSON.stringify(row.num_traces ?? 0)}`;
  if (query.includeMetricInfo) text += `,"metric_info":${JSON.stringify(metricInfoOf(row, metrics ?? {}))}`;
  return `${text}}`;
}
