/**
 * Decoding and mapping of OTLP payloads recorded from the real OpenTelemetry JS SDK
 * (test/fixtures/otlp, made by scripts/record-otlp-fixtures.ts): pure functions, no database.
 */
import { describe, expect, it } from "vitest";
import { RECORD_LIMITS, utf8Bytes } from "../src/ingest/record-limits";
import type { IngestSpan } from "../src/ingest/ingest-schemas";
import { decodeExportRequest } from "../src/otlp/decode-request";
import { fitMetadata, truncateUtf8 } from "../src/otlp/fit-record-limits";
import { hexToUuid, OTEL_SPAN_NAMESPACE, sessionUuid, spanUuid, uuidV5 } from "../src/otlp/otel-ids";
import { MAX_NESTING, planExport, type TracePlan } from "../src/otlp/plan-export";
import genAiAgent from "./fixtures/otlp/genai-agent.json";
import openInferenceRag from "./fixtures/otlp/openinference-rag.json";
import openLlmetryChat from "./fixtures/otlp/openllmetry-chat.json";
import { exportRequest, otlpSpan, protobufBody, randomHex } from "./support/otlp-requests";

const RUN = "11111111-2222-4333-8444-555555555555";

interface Fixture {
  content_type: string;
  trace_id: string;
  body?: string;
  body_base64?: string;
}

function decodeFixture(fixture: Fixture) {
  if (fixture.body_base64 !== undefined) {
    return decodeExportRequest(Uint8Array.from(atob(fixture.body_base64), (c) => c.charCodeAt(0)), "protobuf");
  }
  return decodeExportRequest(new TextEncoder().encode(fixture.body!), "json");
}

/** Every span of a trace plan, flattened, by name (names are unique in the fixtures but for repeats, kept in order). */
function spansOf(plan: TracePlan): IngestSpan[] {
  const out: IngestSpan[] = [];
  const pending = [...(plan.full?.spans ?? []), ...plan.detached.flatMap((g) => g.spans)];
  while (pending.length > 0) {
    const span = pending.shift()!;
    out.push(span);
    pending.push(...(span.spans ?? []));
  }
  return out;
}

const byName = (spans: IngestSpan[], name: string) => spans.filter((s) => s.name === name);

describe("ids", () => {
  it("maps a trace id to the UUID of its bytes and a span id to a version 5 UUID anyone can compute", async () => {
    expect(hexToUuid("4bf92f3577b34da6a3ce929d0e0e4736")).toBe("4bf92f35-77b3-4da6-a3ce-929d0e0e4736");
    // Python: uuid.uuid5(uuid.UUID(OTEL_SPAN_NAMESPACE), "4bf92f3577b34da6a3ce929d0e0e4736" + "00f067aa0ba902b7")
    expect(await spanUuid("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7")).toBe("88d52f3e-5a39-5aae-9cd0-7c8848c254b3");
    // RFC 9562's own example of a version 5 UUID (namespace DNS, name www.example.com).
    expect(await uuidV5("6ba7b810-9dad-11d1-80b4-00c04fd430c8", "www.example.com")).toBe("2ed6657d-e927-568b-95e1-2665a8aea6a2");
    expect(OTEL_SPAN_NAMESPACE).toMatch(/^[0-9a-f-]{36}$/);
    expect(await sessionUuid(RUN, "s-1")).not.toBe(await sessionUuid("99999999-2222-4333-8444-555555555555", "s-1"));
  });
});

describe("GenAI semantic conventions (protobuf, recorded)", async () => {
  const plan = await planExport(decodeFixture(genAiAgent), RUN);
  const trace = plan.traces[0]!;
  const spans = spansOf(trace);

  it("makes one trace record from the root span, with every span under it", async () => {
    expect(plan.traces).toHaveLength(1);
    expect(plan.rejected).toBe(0);
    expect(trace.traceId).toBe(hexToUuid(genAiAgent.trace_id));
    expect(trace.full).toMatchObject({
      id: hexToUuid(genAiAgent.trace_id),
      name: "invoke_agent travel-planner",
      external_id: genAiAgent.trace_id,
      is_complete: true,
      output: "Rainy, 14°C: take an umbrella.",
      status_code: 200,
    });
    expect(trace.full!.metrics!.duration_ns).toBeGreaterThan(0);
    expect(trace.placeholder).toBeNull();
    expect(trace.detached).toEqual([]);
    expect(spans.map((s) => s.type).sort()).toEqual(["agent", "llm", "llm", "tool"]);
    const [root] = trace.full!.spans!;
    expect(root!.type).toBe("agent");
    expect(root!.spans!.map((s) => s.type).sort()).toEqual(["llm", "llm", "tool"]);
  });

  it("maps the conversation to a session and metadata, the user id and the resource to user_metadata", async () => {
    expect(trace.session).toEqual({ id: await sessionUuid(RUN, "conversation-fixture"), name: "conversation-fixture" });
    expect(trace.full!.session_id).toBe(trace.session!.id);
    const root = trace.full!.spans![0]!;
    expect(root.user_metadata).toMatchObject({ customer: "acme", "user.id": "user-fixture", "gen_ai.agent.name": "travel-planner" });
    expect(root.user_metadata).not.toHaveProperty("gen_ai.conversation.id");
    // The trace carries every resource attribute; spans only their own attributes.
    expect(trace.full!.user_metadata).toMatchObject({ "deployment.environment.name": "test", "service.name": "fixture-app", customer: "acme" });
    expect(root.user_metadata).not.toHaveProperty("service.name");
  });

  it("maps chat spans: model, temperature, messages with tool calls, finish reason, tools and token counts", () => {
    const [first, second] = byName(spans, "chat gpt-4o");
    expect(first).toMatchObject({
      type: "llm",
      model: "gpt-4o-2024-08-06",
      temperature: 0.2,
      finish_reason: "tool_calls",
      input: [
        { role: "system", content: "You plan trips." },
        { role: "user", content: "Weather in Paris?" },
      ],
      output: { role: "assistant", content: "", tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }] },
      metrics: { num_input_tokens: 42, num_output_tokens: 7, num_total_tokens: 49 },
    });
    expect(JSON.parse(first!.tools as string)).toEqual([{ type: "function", name: "get_weather", parameters: { type: "object" } }]);
    expect(first!.user_metadata).toMatchObject({ "gen_ai.provider.name": "openai" });
    expect(first!.user_metadata).not.toHaveProperty("gen_ai.input.messages");
    expect(second!.input).toEqual([
      { role: "user", content: "Weather in Paris?" },
      { role: "assistant", content: "", tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }] },
      { role: "tool", content: "rainy, 14°C", tool_call_id: "call_1" },
    ]);
    expect(second).toMatchObject({ output: { role: "assistant", content: "Rainy, 14°C: take an umbrella." }, finish_reason: "stop" });
  });

  it("maps the tool span: call id, arguments and result", () => {
    expect(byName(spans, "execute_tool get_weather")[0]).toMatchObject({
      type: "tool",
      tool_call_id: "call_1",
      input: '{"city":"Paris"}',
      output: "rainy, 14°C",
      status_code: 200,
    });
  });
});

describe("OpenInference (OTLP/JSON, recorded)", async () => {
  const plan = await planExport(decodeFixture(openInferenceRag), RUN);
  const trace = plan.traces[0]!;
  const spans = spansOf(trace);

  it("decodes hex ids and maps span kinds: CHAIN, RETRIEVER, LLM, TOOL", () => {
    expect(trace.traceId).toBe(hexToUuid(openInferenceRag.trace_id));
    expect(Object.fromEntries(spans.map((s) => [s.name, s.type]))).toEqual({ "rag-pipeline": "workflow", retrieve: "retriever", ChatOpenAI: "llm", lookup: "tool" });
  });

  it("maps retrieved documents, messages, token counts, invocation parameters and tools", () => {
    expect(byName(spans, "retrieve")[0]).toMatchObject({
      input: "D1",
      output: [
        { content: "D1 is SQLite at the edge.", metadata: { id: "doc-1", score: 0.92, source: "docs" } },
        { content: "Workers run JavaScript.", metadata: { id: "doc-2", score: 0.41 } },
      ],
    });
    const llm = byName(spans, "ChatOpenAI")[0]!;
    expect(llm).toMatchObject({
      model: "gpt-4o-mini",
      temperature: 0.1,
      input: [
        { role: "system", content: "Answer from the documents." },
        { role: "user", content: "What is D1?" },
      ],
      output: { role: "assistant", content: "D1 is SQLite at the edge." },
      metrics: { num_input_tokens: 30, num_output_tokens: 8, num_total_tokens: 38 },
    });
    expect(JSON.parse(llm.tools as string)).toEqual([{ type: "function", function: { name: "lookup" } }]);
    expect(llm.user_metadata).toHaveProperty("llm.invocation_parameters");
  });

  it("maps session.id, tag.tags and the metadata object; errors and exceptions to status_code and error_message", async () => {
    expect(trace.session?.name).toBe("session-fixture");
    expect(trace.full).toMatchObject({ tags: ["rag", "prod"], input: "What is D1?", output: "D1 is SQLite at the edge." });
    expect(trace.full!.user_metadata).toMatchObject({ customer: "acme", plan: "pro" });
    const tool = byName(spans, "lookup")[0]!;
    expect(tool.status_code).toBe(500);
    expect(tool.error_message).toContain("lookup failed");
    expect(tool.error_message).toContain("TypeError: lookup service unreachable");
  });
});

describe("OpenLLMetry (protobuf, recorded)", async () => {
  const plan = await planExport(decodeFixture(openLlmetryChat), RUN);
  const trace = plan.traces[0]!;
  const spans = spansOf(trace);

  it("maps the older gen_ai.prompt.N / gen_ai.completion.N attributes and traceloop's workflow", () => {
    expect(byName(spans, "answer.workflow")[0]).toMatchObject({ type: "workflow", input: '{"question":"Hi?"}', output: '{"answer":"Hello!"}' });
    expect(byName(spans, "openai.chat")[0]).toMatchObject({
      type: "llm",
      model: "gpt-3.5-turbo",
      input: [{ role: "user", content: "Hi?" }],
      output: { role: "assistant", content: "Hello!" },
      finish_reason: "stop",
      metrics: { num_input_tokens: 5, num_output_tokens: 2, num_total_tokens: 7 },
    });
    expect(trace.session?.name).toBe("chat-fixture");
    expect(trace.full!.user_metadata).toMatchObject({ customer: "globex" });
  });
});

describe("order of arrival, in one request", () => {
  const traceHex = randomHex(16);
  const root = otlpSpan({ trace: traceHex, span: "0000000000000001", name: "root" });
  const child = otlpSpan({ trace: traceHex, span: "0000000000000002", parent: "0000000000000001", name: "child", startMs: Date.UTC(2026, 10, 1) + 1 });
  const grandchild = otlpSpan({ trace: traceHex, span: "0000000000000003", parent: "0000000000000002", name: "grandchild", startMs: Date.UTC(2026, 10, 1) + 2 });

  it("children without their root: a placeholder trace, the spans hang from their parent's id", async () => {
    const plan = await planExport(exportRequest([grandchild, child]), RUN);
    const trace = plan.traces[0]!;
    expect(trace.full).toBeNull();
    expect(trace.placeholder).toMatchObject({ id: hexToUuid(traceHex), name: "", is_complete: false, created_at: "2026-11-01T00:00:00.001000Z" });
    expect(trace.detached).toHaveLength(1);
    expect(trace.detached[0]!.parentId).toBe(await spanUuid(traceHex, "0000000000000001"));
    expect(trace.detached[0]!.spans.map((s) => s.name)).toEqual(["child"]);
    expect(trace.detached[0]!.spans[0]!.spans!.map((s) => s.name)).toEqual(["grandchild"]);
  });

  it("the root alone: the full trace, no placeholder", async () => {
    const plan = await planExport(exportRequest([root]), RUN);
    expect(plan.traces[0]!.full?.name).toBe("root");
    expect(plan.traces[0]!.placeholder).toBeNull();
  });

  it("a span sent twice in one request is stored once; invalid ids and cycles are rejected, the rest kept", async () => {
    const a = otlpSpan({ trace: traceHex, span: "00000000000000aa", parent: "00000000000000bb" });
    const b = otlpSpan({ trace: traceHex, span: "00000000000000bb", parent: "00000000000000aa" });
    const badTrace = otlpSpan({ trace: "00000000000000000000000000000000", span: "0000000000000009" });
    const badSpan = otlpSpan({ trace: traceHex, span: "0000000000000000" });
    const plan = await planExport(exportRequest([child, child, a, b, badTrace, badSpan]), RUN);
    expect(plan.spanCount).toBe(1);
    expect(plan.rejected).toBe(4);
    expect(plan.rejections.join("\n")).toMatch(/cycle/);
    expect(plan.rejections.join("\n")).toMatch(/invalid trace_id/);
    expect(plan.rejections.join("\n")).toMatch(/invalid span_id/);
  });

  it("a chain deeper than MAX_NESTING keeps every span and every parent link", async () => {
    const hex = (i: number) => (i + 1).toString(16).padStart(16, "0");
    const chain = Array.from({ length: MAX_NESTING * 3 }, (_, i) => otlpSpan({ trace: traceHex, span: hex(i), ...(i > 0 ? { parent: hex(i - 1) } : {}) }));
    const plan = await planExport(exportRequest(chain.reverse()), RUN);
    const trace = plan.traces[0]!;
    expect(plan.spanCount).toBe(chain.length);
    const parents = new Map<string, string>();
    const walk = (span: IngestSpan, parent: string) => {
      parents.set(span.id!, parent);
      for (const kid of span.spans ?? []) walk(kid, span.id!);
    };
    for (const top of trace.full!.spans!) walk(top, trace.traceId);
    for (const group of trace.detached) for (const top of group.spans) walk(top, group.parentId);
    expect(parents.size).toBe(chain.length);
    for (let i = 1; i < chain.length; i++) expect(parents.get(await spanUuid(traceHex, hex(i)))).toBe(await spanUuid(traceHex, hex(i - 1)));
  });
});

describe("caps: nothing is rejected for what it carries", () => {
  it("cuts metadata values at 4,096 bytes and drops keys past the cap, and says so", () => {
    const entries: [string, string][] = Array.from({ length: 200 }, (_, i) => [`k${i}`, "é".repeat(3000)]);
    const metadata = fitMetadata([["", "empty key"], ["x".repeat(300), "long key"], ...entries]);
    expect(Object.keys(metadata)).toHaveLength(RECORD_LIMITS.maxMetadataKeys - 4 + 2);
    expect(utf8Bytes(metadata.k0!)).toBeLessThanOrEqual(RECORD_LIMITS.maxMetadataValueBytes);
    expect(metadata["otel.dropped_attributes"]).toBe(String(2 + 200 - (RECORD_LIMITS.maxMetadataKeys - 4)));
    expect(metadata["otel.truncated_attributes"]).toBe(String(RECORD_LIMITS.maxMetadataKeys - 4));
  });

  it("never cuts inside a character", () => {
    expect(truncateUtf8("a😀b", 2)).toBe("a");
    expect(truncateUtf8("a😀b", 5)).toBe("a😀");
    expect(truncateUtf8("日本語", 7)).toBe("日本");
  });

  it("cuts an input and output too large for a record, keeping the span", async () => {
    const big = "x".repeat(1_500_000);
    const span = otlpSpan({ trace: randomHex(16), span: randomHex(8), attributes: { "input.value": big, "output.value": big, "tag.tags": Array.from({ length: 150 }, (_, i) => `t${i}`) } });
    const plan = await planExport(exportRequest([span]), RUN);
    const stored = plan.traces[0]!.full!.spans![0]!;
    const bytes = utf8Bytes(stored.input as string) + utf8Bytes(stored.output as string) + utf8Bytes(JSON.stringify(stored.user_metadata));
    expect(bytes).toBeLessThan(RECORD_LIMITS.maxRecordBytes);
    expect(stored.user_metadata).toMatchObject({ "otel.truncated_fields": "input,output", "otel.dropped_tags": "50" });
    expect(stored.tags).toHaveLength(RECORD_LIMITS.maxTags);
  });
});

describe("decoding", () => {
  it("reads OTLP/JSON ids in hex, enums as numbers, int64 as strings; ids in base64 are a 400, as the Collector answers", () => {
    const body = JSON.stringify({
      resourceSpans: [
        {
          scopeSpans: [
            {
              spans: [
                { traceId: "5b8efff798038103d269b633813fc60c", spanId: "eee19b7ec3c1b174", name: "hex", kind: 2, startTimeUnixNano: "1544712660000000000", endTimeUnixNano: "1544712661000000000", status: { code: 2 } },
                { traceId: "5b8efff798038103d269b633813fc60c", spanId: "eee19b7ec3c1b175", name: "second", unknownField: true },
              ],
            },
          ],
        },
      ],
    });
    const spans = decodeExportRequest(new TextEncoder().encode(body), "json").resourceSpans[0]!.scopeSpans[0]!.spans;
    expect(spans.map((s) => [...s.traceId])).toEqual([[...spans[1]!.traceId], [...spans[1]!.traceId]]);
    expect(spans[0]!.startTimeUnixNano).toBe(1544712660000000000n);
    expect(spans[0]!.status?.code).toBe(2);
    const base64 = body.replace('"eee19b7ec3c1b175"', '"7uGbfsPBsXQ="');
    expect(() => decodeExportRequest(new TextEncoder().encode(base64), "json")).toThrow(expect.objectContaining({ status: 400, message: expect.stringContaining("spans[1].spanId must be 16 hex digits") }));
  });

  it("refuses what is not an export request with a 400", () => {
    for (const [body, encoding] of [["{", "json"], ["[1,2]", "json"], ['{"resourceSpans": 5}', "json"], ["\u00ff\u00fe", "protobuf"]] as const) {
      expect(() => decodeExportRequest(Uint8Array.from(body, (c) => c.charCodeAt(0)), encoding)).toThrow(expect.objectContaining({ status: 400 }));
    }
    expect(decodeExportRequest(protobufBody(exportRequest([])), "protobuf").resourceSpans).toHaveLength(1);
  });
});

/** The one span a request of one span maps to. */
async function mapOne(attributes: Record<string, string | number | string[]>): Promise<IngestSpan> {
  const trace = randomHex(16);
  const plan = await planExport(exportRequest([otlpSpan({ trace, span: randomHex(8), parent: randomHex(8), attributes })]), RUN);
  return spansOf(plan.traces[0]!)[0]!;
}

describe("what real clients send (issue 19, point 4b)", () => {
  it("OpenLLMetry's tool spans: traceloop.entity.input and output are the input and output", async () => {
    const span = await mapOne({ "traceloop.span.kind": "tool", "traceloop.entity.name": "get_weather", "traceloop.entity.input": '{"city":"Paris"}', "traceloop.entity.output": '{"temp":21}' });
    expect(span).toMatchObject({ type: "tool", input: '{"city":"Paris"}', output: '{"temp":21}' });
    expect(span.user_metadata).not.toHaveProperty("traceloop.entity.input");
  });

  it("OpenInference's llm.finish_reason is the finish reason; input and output mime types stay in user_metadata", async () => {
    const span = await mapOne({ "openinference.span.kind": "LLM", "llm.finish_reason": "stop", "input.value": '{"q":1}', "input.mime_type": "application/json", "output.mime_type": "text/plain", "output.value": "a" });
    expect(span.finish_reason).toBe("stop");
    expect(span.user_metadata).toMatchObject({ "input.mime_type": "application/json", "output.mime_type": "text/plain" });
  });

  it("an output message of text, tool call and tool result: the answer's text is the text, the result is kept beside it", async () => {
    const output = [
      {
        role: "assistant",
        parts: [
          { type: "text", content: "Looking it up." },
          { type: "tool_call", id: "call_1", name: "weather", arguments: { city: "Paris" } },
          { type: "tool_call_response", id: "call_1", response: "21 degrees" },
        ],
        finish_reason: "tool_call",
      },
    ];
    const span = await mapOne({ "gen_ai.operation.name": "chat", "gen_ai.output.messages": JSON.stringify(output) });
    expect(span.output).toEqual({ role: "assistant", content: "Looking it up.", tool_calls: [{ id: "call_1", type: "function", function: { name: "weather", arguments: '{"city":"Paris"}' } }] });
    expect(JSON.parse(String(span.user_metadata!["gen_ai.output.tool_results"]))).toEqual([{ role: "tool", content: "21 degrees", tool_call_id: "call_1" }]);
  });

  it("time to first chunk: gen_ai.client.operation.time_to_first_chunk (seconds) and the AI SDK's ai.response.msToFirstChunk", async () => {
    expect((await mapOne({ "gen_ai.operation.name": "chat", "gen_ai.client.operation.time_to_first_chunk": 0.25 })).metrics).toMatchObject({ time_to_first_token_ns: 250_000_000 });
    expect((await mapOne({ "gen_ai.operation.name": "chat", "ai.response.msToFirstChunk": 120 })).metrics).toMatchObject({ time_to_first_token_ns: 120_000_000 });
  });
});
