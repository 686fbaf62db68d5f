/**
 * One OpenTelemetry span as one of our span records (the table in docs/otlp.md "Mapping"). Pure:
 * ids are computed beforehand (src/otlp/otel-ids.ts), so this is plain data in, data out.
 */
import type { SpanKind } from "../columns/standard-columns";
import { microsToIso } from "../db/client";
import type { IngestSpan } from "../ingest/ingest-schemas";
import { RECORD_LIMITS, utf8Bytes } from "../ingest/record-limits";
import { type Plain, numberOf, stringOf, structured, valueText } from "./attribute-values";
import { DROP_MARKERS, fitLargeFields, fitMetadata, fitTags, truncateUtf8 } from "./fit-record-limits";
import { type ChatMessage, contentText, inputMessages, outputMessages, retrievedDocuments, toolDefinitions } from "./genai-content";
import { type Span, Status_StatusCode } from "./generated/opentelemetry/proto/trace/v1/trace_pb";
import { SpanAttributes } from "./span-attributes";
import { KIND_ATTRIBUTES, spanKindOf } from "./span-kind";

/** Bytes kept of a span's name and of its error text. */
const MAX_NAME_BYTES = 4096;
const MAX_ERROR_BYTES = 16 * 1024;

export interface SpanIds {
  id: string;
  traceId: string;
  /** Our id of the parent span; null for a root span. */
  parentId: string | null;
  traceHex: string;
  spanHex: string;
}

export interface MappedSpan extends SpanIds {
  kind: SpanKind;
  /** Start time in microseconds (undefined when the span gives none). */
  startMicros: number | undefined;
  /** The span record, without nested spans. */
  record: IngestSpan;
  /** `session.id` (or `gen_ai.conversation.id`) when the span names one. */
  sessionName: string | undefined;
  /** Metadata entries before the caps, in order of importance: the trace record starts from the root's. */
  metadataEntries: [string, string][];
}

const nanosToMicros = (nanos: bigint): number | undefined => (nanos > 0n ? Number(nanos / 1000n) : undefined);

/** `metadata` (a JSON object, OpenInference), `metadata.*` and OpenLLMetry association properties: the user's own metadata. */
function userMetadataEntries(attrs: SpanAttributes): [string, string][] {
  const entries: [string, string][] = [];
  const object = structured(attrs.take("metadata"));
  if (object && typeof object === "object" && !Array.isArray(object)) {
    for (const [key, value] of Object.entries(object)) if (value !== null) entries.push([key, valueText(value)]);
  } else if (object !== undefined && object !== null) entries.push(["metadata", valueText(object)]);
  for (const [key, value] of attrs.withPrefix("metadata.")) if (value !== null) entries.push([key, valueText(value)]);
  for (const [key, value] of attrs.withPrefix("traceloop.association.properties.")) if (value !== null) entries.push([key, valueText(value)]);
  return entries;
}

function tagsOf(value: Plain | undefined): string[] {
  const parsed = structured(value);
  if (Array.isArray(parsed)) return parsed.filter((t) => t !== null).map((t) => valueText(t));
  return typeof parsed === "string" && parsed !== "" ? [parsed] : [];
}

/** Token counts, latency and cost as metrics, from whichever convention the span speaks. */
function metricsOf(attrs: SpanAttributes, span: Span): Record<string, number> {
  const metrics: Record<string, number> = {};
  const start = span.startTimeUnixNano;
  const end = span.endTimeUnixNano;
  if (start > 0n && end >= start) metrics.duration_ns = Number(end - start);
  const input = numberOf(attrs.first("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt", "llm.usage.prompt_tokens"));
  const output = numberOf(attrs.first("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens", "llm.token_count.completion", "llm.usage.completion_tokens"));
  const total = numberOf(attrs.first("llm.token_count.total", "llm.usage.total_tokens", "gen_ai.usage.total_tokens"));
  if (input !== undefined) metrics.num_input_tokens = input;
  if (output !== undefined) metrics.num_output_tokens = output;
  if (total !== undefined) metrics.num_total_tokens = total;
  else if (input !== undefined && output !== undefined) metrics.num_total_tokens = input + output;
  const firstChunkSeconds = numberOf(attrs.first("gen_ai.response.time_to_first_chunk", "gen_ai.client.operation.time_to_first_chunk", "gen_ai.server.time_to_first_token"));
  // The AI SDK (`ai`) reports it in milliseconds, on its doStream and stream spans.
  const firstChunkMs = numberOf(attrs.first("ai.response.msToFirstChunk", "ai.stream.msToFirstChunk"));
  if (firstChunkSeconds !== undefined) metrics.time_to_first_token_ns = Math.round(firstChunkSeconds * 1e9);
  else if (firstChunkMs !== undefined) metrics.time_to_first_token_ns = Math.round(firstChunkMs * 1e6);
  const cost = numberOf(attrs.first("llm.cost.total"));
  if (cost !== undefined) metrics.cost = cost;
  return metrics;
}

/** Status code and error text: an ERROR status or an `exception` event is a failure (500), anything else 200. */
function outcomeOf(span: Span): { status_code: number; error_message?: string } {
  const exception = span.events.find((event) => event.name === "exception");
  const failed = span.status?.code === Status_StatusCode.ERROR || exception !== undefined;
  if (!failed) return { status_code: 200 };
  const parts: string[] = [];
  if (span.status?.message) parts.push(span.status.message);
  if (exception) {
    const attrs = new Map(exception.attributes.map((kv) => [kv.key, kv.value?.value?.case === "stringValue" ? kv.value.value.value : ""]));
    const described = [attrs.get("exception.type"), attrs.get("exception.message")].filter(Boolean).join(": ");
    if (described && !parts.includes(described)) parts.push(described);
    if (attrs.get("exception.stacktrace")) parts.push(attrs.get("exception.stacktrace")!);
  }
  const text = parts.join("\n");
  return { status_code: 500, ...(text ? { error_message: truncateUtf8(text, MAX_ERROR_BYTES) } : {}) };
}

const userMessage = (content: string): ChatMessage => ({ role: "user", content });
const assistantMessage = (content: string): ChatMessage => ({ role: "assistant", content });

interface Content {
  input?: IngestSpan["input"];
  output?: IngestSpan["output"];
  kindFields: Partial<IngestSpan>;
  /** What the content holds that its fields cannot (tool results inside an answer), for user_metadata. */
  metadataEntries?: [string, string][];
}

function llmContent(attrs: SpanAttributes): Content {
  const inputValue = contentText(attrs.first("input.value"));
  const outputValue = contentText(attrs.first("output.value"));
  const embedded = attrs.indexed("embedding.embeddings.").map((group) => contentText(group.get("embedding.text"))).filter((t): t is string => !!t);
  const input = inputMessages(attrs) ?? (inputValue !== undefined ? [userMessage(inputValue)] : embedded.length > 0 ? [userMessage(embedded.join("\n"))] : undefined);
  const answered = outputMessages(attrs);
  const output = answered?.messages[0] ?? (outputValue !== undefined ? assistantMessage(outputValue) : undefined);
  // Tool results that came inside the answer's message follow it as `tool` messages: the answer's
  // text stays the answer, and the results are kept beside it.
  const toolResults = answered?.messages.slice(1).filter((m) => m.role === "tool") ?? [];
  const finishReasons = structured(attrs.take("gen_ai.response.finish_reasons"));
  const finishReason =
    (Array.isArray(finishReasons) ? stringOf(finishReasons[0]) : stringOf(finishReasons)) ?? answered?.finishReason ?? stringOf(attrs.first("llm.finish_reason"));
  const invocation = structured(attrs.map.get("llm.invocation_parameters"));
  const temperature =
    numberOf(attrs.first("gen_ai.request.temperature", "llm.request.temperature")) ??
    (invocation && typeof invocation === "object" && !Array.isArray(invocation) ? numberOf(invocation.temperature) : undefined);
  const model = stringOf(attrs.first("gen_ai.response.model", "gen_ai.request.model", "llm.model_name", "embedding.model_name", "llm.response.model", "llm.request.model"));
  return {
    input,
    output,
    kindFields: {
      ...(model ? { model } : {}),
      ...(temperature !== undefined ? { temperature } : {}),
      ...(finishReason ? { finish_reason: finishReason } : {}),
      ...(() => {
        const tools = toolDefinitions(attrs);
        return tools ? { tools } : {};
      })(),
    },
    ...(toolResults.length > 0 ? { metadataEntries: [["gen_ai.output.tool_results", JSON.stringify(toolResults)]] } : {}),
  };
}

function retrieverContent(attrs: SpanAttributes): Content {
  const query = contentText(attrs.first("gen_ai.retrieval.query.text", "input.value", "reranker.query"));
  const documents = retrievedDocuments(attrs);
  const outputValue = contentText(attrs.first("output.value"));
  return { input: query, output: documents ?? outputValue, kindFields: {} };
}

function toolContent(attrs: SpanAttributes): Content {
  const toolCallId = stringOf(attrs.first("gen_ai.tool.call.id"));
  return {
    // OpenLLMetry puts a tool's arguments and result in traceloop.entity.input / output.
    input: contentText(attrs.first("gen_ai.tool.call.arguments", "input.value", "traceloop.entity.input")),
    output: contentText(attrs.first("gen_ai.tool.call.result", "output.value", "traceloop.entity.output")),
    kindFields: toolCallId ? { tool_call_id: toolCallId } : {},
  };
}

/** Agent, workflow and control spans: text in and out, or the conversation they carry. */
function stepContent(attrs: SpanAttributes): Content {
  const input = contentText(attrs.first("input.value", "traceloop.entity.input")) ?? inputMessages(attrs);
  const explicitOutput = contentText(attrs.first("output.value", "traceloop.entity.output"));
  const answered = explicitOutput === undefined ? outputMessages(attrs) : undefined;
  const last = answered?.messages.filter((m) => m.role !== "tool").at(-1);
  return { input, output: explicitOutput ?? last?.content, kindFields: {} };
}

const CONTENT: Record<SpanKind, (attrs: SpanAttributes) => Content> = {
  llm: llmContent,
  retriever: retrieverContent,
  tool: toolContent,
  agent: stepContent,
  workflow: stepContent,
  control: stepContent,
};

/** UTF-16 length of every key and text value of the attributes (structured values by their JSON). */
function attributeTextLength(attributes: Map<string, Plain>): number {
  let length = 0;
  for (const [key, value] of attributes) length += key.length + (typeof value === "string" ? value.length : value === null ? 0 : JSON.stringify(value).length);
  return length;
}

const storedText = (value: unknown): string => (typeof value === "string" ? value : JSON.stringify(value ?? null));

export function mapSpan(span: Span, ids: SpanIds, attributes: Map<string, Plain>): MappedSpan {
  const attrs = new SpanAttributes(attributes);
  const kind = spanKindOf(attributes);
  for (const key of KIND_ATTRIBUTES) attrs.take(key);
  // `input.mime_type` / `output.mime_type` (OpenInference) go to user_metadata with the rest: they
  // say whether the text stored as input and output is JSON.

  const sessionName = stringOf(attrs.first("session.id", "gen_ai.conversation.id", "traceloop.association.properties.session_id"));
  const tagged = fitTags(tagsOf(attrs.take("tag.tags")));
  const content = CONTENT[kind](attrs);
  const metrics = metricsOf(attrs, span);

  const metadataEntries: [string, string][] = [...userMetadataEntries(attrs), ...(content.metadataEntries ?? [])];
  const userId = attrs.take("user.id");
  if (userId !== undefined && userId !== null) metadataEntries.push(["user.id", valueText(userId)]);
  for (const [key, value] of attrs.remaining()) if (value !== null) metadataEntries.push([key, valueText(value)]);
  // Resource attributes describe the process, the same for every span: they go to the trace
  // record only (src/otlp/plan-export.ts), not into an indexed row per span.
  const metadata = fitMetadata(metadataEntries);
  if (tagged.dropped > 0) metadata[DROP_MARKERS.droppedTags] = String(tagged.dropped);

  let input = content.input;
  let output = content.output;
  let tools = content.kindFields.tools as string | undefined;
  // Everything a record holds comes from the span's attributes, at most doubled by the JSON
  // around flattened messages and at most three UTF-8 bytes a UTF-16 unit: a span whose
  // attributes are far from the record cap is not measured (most spans; it spares re-encoding).
  if (attributeTextLength(attributes) * 6 + span.name.length * 3 > RECORD_LIMITS.maxRecordBytes / 2) {
    const large = [
      ...(input !== undefined ? [{ name: "input", text: storedText(input) }] : []),
      ...(output !== undefined ? [{ name: "output", text: storedText(output) }] : []),
      ...(tools !== undefined ? [{ name: "tools", text: tools }] : []),
    ];
    const otherBytes = utf8Bytes(JSON.stringify(metadata)) + tagged.tags.reduce((sum, t) => sum + utf8Bytes(t) + 3, 0);
    const cuts = fitLargeFields(large, otherBytes);
    if (cuts.size > 0) {
      input = cuts.get("input") ?? input;
      output = cuts.get("output") ?? output;
      tools = cuts.get("tools") ?? tools;
      metadata[DROP_MARKERS.truncatedFields] = [...cuts.keys()].sort().join(",");
    }
  }

  const startMicros = nanosToMicros(span.startTimeUnixNano);
  const record: IngestSpan = {
    id: ids.id,
    type: kind,
    name: truncateUtf8(span.name, MAX_NAME_BYTES),
    ...(startMicros !== undefined ? { created_at: microsToIso(startMicros) } : {}),
    ...(input !== undefined ? { input } : {}),
    ...(output !== undefined ? { output } : {}),
    ...outcomeOf(span),
    user_metadata: metadata,
    tags: tagged.tags,
    metrics,
    ...content.kindFields,
    ...(tools !== undefined ? { tools } : {}),
  };
  return { ...ids, kind, startMicros, record, sessionName, metadataEntries };
}
