/**
 * The benchmark's traces as an OpenTelemetry SDK would export them: each native trace (from the
 * search benchmark's generator) becomes the same spans with the attributes of the GenAI semantic
 * conventions and OpenInference, so that both paths store the same content. Scorer metrics
 * (toxicity) are left out: they are computed by evaluators, not emitted by an instrumented
 * application, and no convention carries them on a span. The trace record of
 * the OTLP path is made from the root span (the native trace's top container), which carries the
 * trace's metadata, tags and session.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import type { IngestSpan, IngestTrace } from "../../src/ingest/ingest-schemas";
import { isoToMicros } from "../../src/ingest/timestamps";
import type { AnyValue, KeyValue } from "../../src/otlp/generated/opentelemetry/proto/common/v1/common_pb";
import { ExportTraceServiceRequestSchema } from "../../src/otlp/generated/opentelemetry/proto/collector/trace/v1/trace_service_pb";
import { type Span, SpanSchema, Status_StatusCode } from "../../src/otlp/generated/opentelemetry/proto/trace/v1/trace_pb";

type Attribute = string | number | string[];

function anyValue(value: Attribute): AnyValue {
  if (Array.isArray(value)) {
    return { value: { case: "arrayValue", value: { values: value.map((v) => ({ value: { case: "stringValue", value: v } })) } } } as AnyValue;
  }
  if (typeof value === "string") return { value: { case: "stringValue", value } } as AnyValue;
  return (Number.isInteger(value) ? { value: { case: "intValue", value: BigInt(value) } } : { value: { case: "doubleValue", value } }) as AnyValue;
}

const keyValues = (attributes: Record<string, Attribute | undefined>): KeyValue[] =>
  Object.entries(attributes)
    .filter((e): e is [string, Attribute] => e[1] !== undefined)
    .map(([key, value]) => ({ key, value: anyValue(value) }) as KeyValue);

const text = (value: unknown) => (typeof value === "string" ? value : JSON.stringify(value));

function parts(message: { role: string; content: string }) {
  return { role: message.role, parts: [{ type: "text", content: message.content }] };
}

/** A span's own attributes, by kind, in the conventions the intake reads. */
function attributesOf(span: IngestSpan): Record<string, Attribute | undefined> {
  const m = span.metrics ?? {};
  const common: Record<string, Attribute | undefined> = {};
  for (const [key, value] of Object.entries(span.user_metadata ?? {})) if (value !== null) common[`metadata.${key}`] = String(value);
  if (span.tags?.length) common["tag.tags"] = span.tags;
  switch (span.type) {
    case "llm": {
      const input = span.input as { role: string; content: string }[];
      const output = span.output as { role: string; content: string };
      return {
        ...common,
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": span.model ?? undefined,
        "gen_ai.request.temperature": span.temperature ?? undefined,
        "gen_ai.response.finish_reasons": span.finish_reason ? [span.finish_reason] : undefined,
        "gen_ai.input.messages": JSON.stringify(input.map(parts)),
        "gen_ai.output.messages": JSON.stringify([{ ...parts(output), finish_reason: span.finish_reason }]),
        "gen_ai.tool.definitions": typeof span.tools === "string" ? span.tools : undefined,
        "gen_ai.usage.input_tokens": m.num_input_tokens ?? undefined,
        "gen_ai.usage.output_tokens": m.num_output_tokens ?? undefined,
        "gen_ai.response.time_to_first_chunk": typeof m.time_to_first_token_ns === "number" ? m.time_to_first_token_ns / 1e9 : undefined,
        "llm.cost.total": m.cost ?? undefined,
      };
    }
    case "tool":
      return {
        ...common,
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.call.id": span.tool_call_id ?? undefined,
        "gen_ai.tool.call.arguments": span.input == null ? undefined : text(span.input),
        "gen_ai.tool.call.result": span.output == null ? undefined : text(span.output),
      };
    case "retriever": {
      const documents = (span.output ?? []) as { content: string; metadata: Record<string, unknown> }[];
      const flattened: Record<string, Attribute> = {};
      documents.forEach((doc, i) => {
        flattened[`retrieval.documents.${i}.document.content`] = doc.content;
        flattened[`retrieval.documents.${i}.document.metadata`] = JSON.stringify(doc.metadata);
      });
      return { ...common, "openinference.span.kind": "RETRIEVER", "input.value": text(span.input), ...flattened };
    }
    case "control":
      return {
        ...common,
        "openinference.span.kind": "GUARDRAIL",
        "input.value": text(span.input),
        "output.value": text(span.output),
      };
    default:
      return {
        ...common,
        "gen_ai.operation.name": span.type === "agent" ? "invoke_agent" : "invoke_workflow",
        "input.value": text(span.input),
        "output.value": text(span.output),
      };
  }
}

const hex = () => [...crypto.getRandomValues(new Uint8Array(8))].map((b) => b.toString(16).padStart(2, "0")).join("");

/** The OTel spans of one native trace: its top container is the root, carrying the trace's metadata, tags and session. */
export function otelSpansOf(trace: IngestTrace, sessionName: string | null): { root: Span; children: Span[] } {
  const traceId = Uint8Array.from(trace.id!.replace(/-/g, "").match(/../g)!, (h) => parseInt(h, 16));
  const children: Span[] = [];
  let root: Span | undefined;
  const visit = (span: IngestSpan, parentSpanId: Uint8Array) => {
    const spanId = Uint8Array.from(hex().match(/../g)!, (h) => parseInt(h, 16));
    const start = BigInt(isoToMicros(span.created_at!)!) * 1000n;
    const attributes = attributesOf(span);
    if (!root) {
      for (const [key, value] of Object.entries(trace.user_metadata ?? {})) if (value !== null) attributes[`metadata.${key}`] = String(value);
      attributes["tag.tags"] = trace.tags ?? [];
      if (sessionName) attributes["session.id"] = sessionName;
    }
    const otel = create(SpanSchema, {
      traceId,
      spanId,
      parentSpanId,
      name: span.name ?? "",
      startTimeUnixNano: start,
      endTimeUnixNano: start + BigInt(Math.round(span.metrics?.duration_ns ?? 1_000_000)),
      attributes: keyValues(attributes),
      ...(span.status_code && span.status_code >= 400 ? { status: { code: Status_StatusCode.ERROR, message: span.error_message ?? "" } } : {}),
    });
    if (!root) root = otel;
    else children.push(otel);
    for (const child of span.spans ?? []) visit(child, spanId);
  };
  visit(trace.spans![0]!, new Uint8Array(0));
  return { root: root!, children };
}

export function protobufExport(spans: Span[]): Uint8Array {
  return toBinary(
    ExportTraceServiceRequestSchema,
    create(ExportTraceServiceRequestSchema, {
      resourceSpans: [
        {
          resource: { attributes: keyValues({ "service.name": "bench-app", "deployment.environment.name": "bench", "telemetry.sdk.language": "nodejs" }) },
          scopeSpans: [{ scope: { name: "bench" }, spans }],
        },
      ],
    }),
  );
}
