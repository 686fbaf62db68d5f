/**
 * OTLP export requests for tests, built with the same generated protobuf code the service
 * decodes with: spans from a few fields, and bodies in both encodings (OTLP/JSON with hex ids).
 */
import { create, toBinary, toJson } from "@bufbuild/protobuf";
import { SELF, createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import type { Env } from "../../src/env";
import worker from "../../src/index";
import type { KeyValue } from "../../src/otlp/generated/opentelemetry/proto/common/v1/common_pb";
import {
  type ExportTraceServiceRequest,
  ExportTraceServiceRequestSchema,
} from "../../src/otlp/generated/opentelemetry/proto/collector/trace/v1/trace_service_pb";
import { type Span, SpanSchema, Status_StatusCode } from "../../src/otlp/generated/opentelemetry/proto/trace/v1/trace_pb";

export type AttributeValue = string | number | boolean | string[];

export function keyValues(attributes: Record<string, AttributeValue>): KeyValue[] {
  return Object.entries(attributes).map(([key, value]) => ({
    $typeName: "opentelemetry.proto.common.v1.KeyValue",
    key,
    keyStrindex: 0,
    value: {
      $typeName: "opentelemetry.proto.common.v1.AnyValue",
      value: Array.isArray(value)
        ? { case: "arrayValue", value: { $typeName: "opentelemetry.proto.common.v1.ArrayValue", values: value.map((v) => ({ $typeName: "opentelemetry.proto.common.v1.AnyValue", value: { case: "stringValue", value: v } })) } }
        : typeof value === "string"
          ? { case: "stringValue", value }
          : typeof value === "boolean"
            ? { case: "boolValue", value }
            : Number.isInteger(value)
              ? { case: "intValue", value: BigInt(value) }
              : { case: "doubleValue", value },
    },
  })) as KeyValue[];
}

export const hexBytes = (hex: string) => Uint8Array.from(hex.match(/../g) ?? [], (h) => parseInt(h, 16));

export const randomHex = (bytes: number) => [...crypto.getRandomValues(new Uint8Array(bytes))].map((b) => b.toString(16).padStart(2, "0")).join("");

export interface SpanInit {
  trace: string;
  span: string;
  parent?: string;
  name?: string;
  /** Start, in milliseconds since the epoch; ends `durationMs` later. */
  startMs?: number;
  durationMs?: number;
  attributes?: Record<string, AttributeValue>;
  error?: string;
}

export function otlpSpan(init: SpanInit): Span {
  const start = BigInt(init.startMs ?? Date.UTC(2026, 10, 1)) * 1_000_000n;
  return create(SpanSchema, {
    traceId: hexBytes(init.trace),
    spanId: hexBytes(init.span),
    parentSpanId: init.parent ? hexBytes(init.parent) : new Uint8Array(0),
    name: init.name ?? `span-${init.span}`,
    startTimeUnixNano: start,
    endTimeUnixNano: start + BigInt(init.durationMs ?? 5) * 1_000_000n,
    attributes: keyValues(init.attributes ?? {}),
    ...(init.error ? { status: { code: Status_StatusCode.ERROR, message: init.error } } : {}),
  });
}

export function exportRequest(spans: Span[], resource: Record<string, AttributeValue> = { "service.name": "test-app" }): ExportTraceServiceRequest {
  return create(ExportTraceServiceRequestSchema, {
    resourceSpans: [{ resource: { attributes: keyValues(resource) }, scopeSpans: [{ scope: { name: "test" }, spans }] }],
  });
}

export const protobufBody = (request: ExportTraceServiceRequest) => toBinary(ExportTraceServiceRequestSchema, request);

const base64ToHex = (b64: string) => [...atob(b64)].map((c) => c.charCodeAt(0).toString(16).padStart(2, "0")).join("");

/** OTLP/JSON: proto3 JSON with trace and span ids as hex, as exporters send it. */
export function jsonBody(request: ExportTraceServiceRequest): string {
  const json = toJson(ExportTraceServiceRequestSchema, request) as any;
  for (const rs of json.resourceSpans ?? []) {
    for (const ss of rs.scopeSpans ?? []) {
      for (const span of ss.spans ?? []) {
        for (const key of ["traceId", "spanId", "parentSpanId"]) if (span[key]) span[key] = base64ToHex(span[key]);
      }
    }
  }
  return JSON.stringify(json);
}

export interface PostOptions {
  contentType?: string;
  headers?: Record<string, string>;
  path?: string;
}

/** POSTs a body to the OTLP route through the worker's real entry point. */
export function postOtlp(body: BodyInit, options: PostOptions = {}): Promise<Response> {
  const headers: Record<string, string> = { "content-type": options.contentType ?? "application/x-protobuf", ...options.headers };
  return SELF.fetch(`http://trace-store.test${options.path ?? "/otel/v1/traces"}`, { method: "POST", headers, body });
}

/**
 * POSTs a body to the OTLP route through the worker's entry point with these bindings (postOtlp
 * runs the test environment's own; a test that replaces one, such as a queue that loses its
 * messages, or that reads back what was written, calls this), and waits for the work the answer
 * left behind (its waitUntil).
 */
export async function postOtlpWith(bindings: Env, body: BodyInit, options: PostOptions = {}): Promise<Response> {
  const headers: Record<string, string> = { "content-type": options.contentType ?? "application/x-protobuf", ...options.headers };
  const ctx = createExecutionContext();
  const response = await worker.fetch(new Request(`http://trace-store.test${options.path ?? "/otel/v1/traces"}`, { method: "POST", headers, body }), bindings, ctx);
  await waitOnExecutionContext(ctx);
  return response;
}

export async function gzip(bytes: Uint8Array | string): Promise<Uint8Array> {
  const input = typeof bytes === "string" ? new TextEncoder().encode(bytes) : bytes;
  const stream = new Blob([input]).stream().pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}
