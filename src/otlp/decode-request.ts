/**
 * Decodes an ExportTraceServiceRequest from its two OTLP/HTTP encodings with @bufbuild/protobuf
 * and the code generated from the OTLP .proto files (src/otlp/generated, `npm run otlp:proto`):
 *
 * - `application/x-protobuf`: the binary encoding, as OTel SDKs send by default.
 * - `application/json`: OTLP/JSON, which is proto3's JSON mapping with one exception: trace and
 *   span ids are hex strings, not base64. They are rewritten to base64 before the generic JSON
 *   decoder reads them. An id that is not hex of the right length (32 digits for a trace, 16 for
 *   a span; empty is allowed, as for a root's parent) is a 400, as the OpenTelemetry Collector
 *   answers: the body cannot be decoded, which is not a span to reject one by one. Enums as numbers or names, int64 as strings
 *   or numbers and both lowerCamelCase and snake_case keys are accepted; unknown keys are ignored,
 *   as OTLP requires of receivers.
 *
 * Anything that cannot be decoded is a 400 (OTLP's answer for this route, not our usual 422).
 */
import { fromBinary, fromJson, type JsonValue } from "@bufbuild/protobuf";
import { type ExportTraceServiceRequest, ExportTraceServiceRequestSchema } from "./generated/opentelemetry/proto/collector/trace/v1/trace_service_pb";
import { jsonShape } from "../http/json-shape";
import { OtlpError } from "./otlp-errors";
import { OTLP_LIMITS } from "./otlp-limits";
import { countWire } from "./wire-counts";

export type OtlpEncoding = "protobuf" | "json";

/** The encoding a Content-Type names; any other media type is a 415, as OTLP/HTTP requires. */
export function encodingOf(contentType: string | undefined): OtlpEncoding {
  const mediaType = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  if (mediaType === "application/x-protobuf" || mediaType === "application/protobuf") return "protobuf";
  if (mediaType === "application/json" || mediaType === "") return "json";
  throw new OtlpError(415, `unsupported Content-Type ${JSON.stringify(contentType)}: send application/x-protobuf or application/json`);
}

const HEX = /^[0-9a-fA-F]*$/;

function hexToBase64(hex: string): string {
  let binary = "";
  for (let i = 0; i < hex.length; i += 2) binary += String.fromCharCode(parseInt(hex.slice(i, i + 2), 16));
  return btoa(binary);
}

/** Rewrites `object[key]` from hex of `bytes` bytes to base64; anything else but "" or null is a 400. */
function rewriteId(object: Record<string, unknown>, keys: string[], bytes: number, where: string): void {
  for (const key of keys) {
    const value = object[key];
    if (value === undefined || value === null || value === "") continue;
    if (typeof value === "string" && value.length === bytes * 2 && HEX.test(value)) {
      object[key] = hexToBase64(value);
      continue;
    }
    const shown = typeof value === "string" ? JSON.stringify(value.slice(0, 64)) : typeof value;
    throw new OtlpError(400, `the body is not a valid OTLP/JSON ExportTraceServiceRequest: ${where}.${key} must be ${bytes * 2} hex digits, got ${shown}`);
  }
}

const TRACE_ID = ["traceId", "trace_id"];
const SPAN_ID = ["spanId", "span_id"];
const PARENT_SPAN_ID = ["parentSpanId", "parent_span_id"];

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/** The elements of `object[key]` (either spelling) that are objects. */
function children(object: Record<string, unknown>, camel: string, snake: string): Record<string, unknown>[] {
  const list = object[camel] ?? object[snake];
  return Array.isArray(list) ? list.filter(isObject) : [];
}

/** OTLP/JSON's hex ids to proto3 JSON's base64, in place, wherever ids occur in a request. */
function hexIdsToBase64(request: unknown): void {
  if (!isObject(request)) return;
  for (const [r, resourceSpans] of children(request, "resourceSpans", "resource_spans").entries()) {
    for (const [s, scopeSpans] of children(resourceSpans, "scopeSpans", "scope_spans").entries()) {
      for (const [i, span] of children(scopeSpans, "spans", "spans").entries()) {
        const where = `resourceSpans[${r}].scopeSpans[${s}].spans[${i}]`;
        rewriteId(span, TRACE_ID, 16, where);
        rewriteId(span, SPAN_ID, 8, where);
        rewriteId(span, PARENT_SPAN_ID, 8, where);
        for (const [l, link] of children(span, "links", "links").entries()) {
          rewriteId(link, TRACE_ID, 16, `${where}.links[${l}]`);
          rewriteId(link, SPAN_ID, 8, `${where}.links[${l}]`);
        }
      }
    }
  }
}

const undecodable = (encoding: OtlpEncoding, error: unknown) =>
  new OtlpError(400, `the body is not a valid ${encoding === "json" ? "OTLP/JSON" : "protobuf"} ExportTraceServiceRequest: ${error instanceof Error ? error.message : String(error)}`.slice(0, 1000));

const SPLIT = "split the batch into smaller requests (OTEL_BSP_MAX_EXPORT_BATCH_SIZE, or the Collector's send_batch_max_size)";

/** Deepest JSON nesting read: AnyValue lists nest, but not past OTLP_LIMITS.maxValueDepth that is kept. */
const MAX_JSON_DEPTH = 128;

export function decodeExportRequest(body: Uint8Array, encoding: OtlpEncoding): ExportTraceServiceRequest {
  if (encoding === "protobuf") {
    const counts = countWire(body, OTLP_LIMITS.maxSpansPerRequest, OTLP_LIMITS.maxEntriesPerRequest);
    if (counts.over === "spans") throw new OtlpError(413, `more than ${OTLP_LIMITS.maxSpansPerRequest} spans in one request: ${SPLIT}`);
    if (counts.over === "entries") {
      throw new OtlpError(413, `more than ${OTLP_LIMITS.maxEntriesPerRequest} attributes, events and links in one request: ${SPLIT}`);
    }
    try {
      return fromBinary(ExportTraceServiceRequestSchema, body, { readUnknownFields: false });
    } catch (error) {
      throw undecodable(encoding, error);
    }
  }
  const shape = jsonShape(body, OTLP_LIMITS.maxJsonValues, MAX_JSON_DEPTH);
  if (shape.over === "values") throw new OtlpError(413, `more than ${OTLP_LIMITS.maxJsonValues} JSON values in one request: ${SPLIT}`);
  if (shape.over === "depth") throw new OtlpError(400, `the body is not a valid OTLP/JSON ExportTraceServiceRequest: JSON nested deeper than ${MAX_JSON_DEPTH} levels`);
  let parsed: unknown;
  try {
    const text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(body);
    // An empty body is an empty request, as an empty protobuf body is.
    parsed = text.trim() === "" ? {} : JSON.parse(text);
  } catch (error) {
    throw undecodable(encoding, error);
  }
  hexIdsToBase64(parsed);
  try {
    return fromJson(ExportTraceServiceRequestSchema, parsed as JsonValue, { ignoreUnknownFields: true });
  } catch (error) {
    throw undecodable(encoding, error);
  }
}
