/**
 * The real OpenTelemetry JS SDK against the real service (`wrangler dev` on a free loopback port,
 * test/node/sdk-service.ts), configured as a user would: the OTLP endpoint variables and one
 * header. Both exporters (protobuf and JSON), SimpleSpanProcessor (one request per span as it
 * ends: children first, the root last), BatchSpanProcessor, gzip, and an exporter retry through a
 * proxy that loses the service's first answer. Then searches and record lookups read it back.
 */
import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { OTLPTraceExporter as JsonExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as ProtoExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, SimpleSpanProcessor, type SpanExporter, TracerProvider } from "@opentelemetry/sdk-trace";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { aiSdkWeatherAgent, openInferenceChatCompletion, openLlmetryToolCall } from "./otel-client-packages";
import { genAiAgentTrace, openInferenceTrace, openLlmetryTrace } from "./otel-example-traces";
import { type RunningService, startService } from "./sdk-service";

let service: RunningService;
const RUN = `otel-${Date.now().toString(36)}`;
const PROJECT = `otel-e2e-${RUN}`;
const LOG_STREAM = "otel";

beforeAll(async () => {
  service = await startService();
});

afterAll(async () => {
  await service?.stop();
  for (const key of ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"]) delete process.env[key];
});

/** Runs `make` on a provider that exports with `exporter` through `processor`, then flushes and shuts it down. */
/** The exporters' own agents keep connections alive; wrangler dev closes idle ones (test/node/no-keep-alive.ts). */
const NO_KEEP_ALIVE = { keepAlive: false };

async function emit(exporter: SpanExporter, processor: "simple" | "batch", make: (provider: TracerProvider) => string): Promise<string> {
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ "service.name": "otel-e2e-app", "deployment.environment.name": "ci" }),
    spanProcessors: [processor === "simple" ? new SimpleSpanProcessor({ exporter }) : new BatchSpanProcessor({ exporter })],
  });
  const traceId = make(provider);
  await provider.forceFlush();
  await provider.shutdown();
  return traceId;
}

const headers = () => ({ "Service-API-Key": service.tenant.apiKey, "content-type": "application/json" });

async function api<T = any>(path: string, body?: unknown): Promise<T> {
  const response = await fetch(`${service.apiUrl}${path}`, { method: body === undefined ? "GET" : "POST", headers: headers(), body: body === undefined ? undefined : JSON.stringify(body) });
  if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

const uuidOf = (hex: string) => `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;

let projectId: string;
let runId: string;

async function spansOfTrace(traceHex: string): Promise<Record<string, any>[]> {
  const body = await api(`/projects/${projectId}/spans/partial_search`, {
    log_stream_id: runId,
    filters: [{ type: "id", column_id: "trace_id", operator: "eq", value: uuidOf(traceHex) }],
    select_columns: { include_all_metrics: true },
    limit: 100,
  });
  return body.records;
}

/** A proxy in front of the service that forwards every request but answers the first one with 503: the response is "lost", the exporter retries the same body. */
async function lossyProxy(target: string): Promise<{ url: string; requests: () => number; close: () => Promise<void> }> {
  let count = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      count += 1;
      const first = count === 1;
      const upstream = httpRequest(`${target}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
        const body: Buffer[] = [];
        answer.on("data", (c: Buffer) => body.push(c));
        answer.on("end", () => {
          if (first) res.writeHead(503, { "Retry-After": "1" }).end();
          else res.writeHead(answer.statusCode ?? 502, answer.headers).end(Buffer.concat(body));
        });
      });
      upstream.end(Buffer.concat(chunks));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests: () => count,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe("the OpenTelemetry JS SDK against the real service", () => {
  const traces = {} as Record<"genai" | "openinference" | "openllmetry" | "retried", string>;

  it("exports a GenAI agent trace span by span (children first) with the protobuf exporter configured by environment variables", async () => {
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = `${service.origin}/otel`;
    // As the README writes it: the space of the header value percent-encoded.
    process.env.OTEL_EXPORTER_OTLP_HEADERS = `Authorization=Bearer%20${service.tenant.apiKey},project=${PROJECT},logstream=${LOG_STREAM}`;
    traces.genai = await emit(new ProtoExporter({ httpAgentOptions: NO_KEEP_ALIVE }), "simple", (p) => genAiAgentTrace(p.getTracer("e2e"), { tag: RUN }));

    const [project] = await api(`/projects?project_name=${PROJECT}`);
    projectId = project.id;
    const [stream] = await api(`/projects/${projectId}/log_streams?name=${LOG_STREAM}`);
    runId = stream.id;

    const spans = await spansOfTrace(traces.genai);
    expect(spans.map((s) => s.type).sort()).toEqual(["agent", "llm", "llm", "tool"]);
    const agent = spans.find((s) => s.type === "agent")!;
    expect(agent.parent_id).toBe(uuidOf(traces.genai));
    for (const span of spans.filter((s) => s !== agent)) expect(span.parent_id).toBe(agent.id);
    const firstChat = spans.find((s) => s.type === "llm" && s.finish_reason === "tool_calls")!;
    expect(firstChat).toMatchObject({ model: "gpt-4o-2024-08-06", temperature: 0.2, is_complete: true });
    expect(firstChat.metrics).toMatchObject({ num_input_tokens: 42, num_output_tokens: 7, num_total_tokens: 49 });
    expect(firstChat.output.tool_calls[0].function.name).toBe("get_weather");
    expect(spans.find((s) => s.type === "tool")).toMatchObject({ tool_call_id: "call_1", output: "rainy, 14°C" });

    const trace = await api(`/projects/${projectId}/traces/${uuidOf(traces.genai)}`);
    expect(trace).toMatchObject({ name: "invoke_agent travel-planner", is_complete: true, output: "Rainy, 14°C: take an umbrella." });
    expect(trace.user_metadata).toMatchObject({ customer: "acme", "user.id": `user-${RUN}`, "service.name": "otel-e2e-app", "deployment.environment.name": "ci" });
    const session = await api(`/projects/${projectId}/sessions/${trace.session_id}`);
    expect(session).toMatchObject({ name: `conversation-${RUN}`, external_id: `conversation-${RUN}` });
    expect(spans.every((s) => s.session_id === trace.session_id)).toBe(true);
  });

  it("exports an OpenInference trace with the JSON exporter, gzip, to Galileo's path", async () => {
    const exporter = new JsonExporter({
      httpAgentOptions: NO_KEEP_ALIVE,
      url: `${service.origin}/otel/traces`,
      compression: "gzip" as never,
      headers: { Authorization: `Bearer ${service.tenant.apiKey}`, project: PROJECT, logstream: LOG_STREAM },
    });
    traces.openinference = await emit(exporter, "simple", (p) => openInferenceTrace(p.getTracer("e2e"), { tag: RUN }));
    const spans = await spansOfTrace(traces.openinference);
    expect(Object.fromEntries(spans.map((s) => [s.name, s.type]))).toEqual({ "rag-pipeline": "workflow", retrieve: "retriever", ChatOpenAI: "llm", lookup: "tool" });
    expect(spans.find((s) => s.name === "retrieve")!.output[0]).toMatchObject({ content: "D1 is SQLite at the edge.", metadata: { id: "doc-1", source: "docs" } });
    expect(spans.find((s) => s.name === "lookup")).toMatchObject({ status_code: 500 });
    expect(spans.find((s) => s.name === "lookup")!.error_message).toContain("lookup service unreachable");
    const trace = await api(`/projects/${projectId}/traces/${uuidOf(traces.openinference)}`);
    expect(trace).toMatchObject({ name: "rag-pipeline", input: "What is D1?", tags: ["rag", "prod"], is_complete: true });
    expect(trace.user_metadata).toMatchObject({ customer: "acme", plan: "pro" });
  });

  it("exports an OpenLLMetry trace in one batch; a retried request (its first answer lost) stores nothing twice", async () => {
    const exporterHeaders = { Authorization: `Bearer ${service.tenant.apiKey}`, project: PROJECT, logstream: LOG_STREAM };
    traces.openllmetry = await emit(new ProtoExporter({ httpAgentOptions: NO_KEEP_ALIVE, url: `${service.origin}/v2/otel/v1/traces`, headers: exporterHeaders }), "batch", (p) =>
      openLlmetryTrace(p.getTracer("e2e"), { tag: RUN }),
    );
    const proxy = await lossyProxy(service.origin);
    try {
      traces.retried = await emit(new ProtoExporter({ httpAgentOptions: NO_KEEP_ALIVE, url: `${proxy.url}/otel/v1/traces`, headers: exporterHeaders }), "batch", (p) =>
        openLlmetryTrace(p.getTracer("e2e"), { tag: `${RUN}-retry` }),
      );
      expect(proxy.requests()).toBe(2);
    } finally {
      await proxy.close();
    }
    for (const traceHex of [traces.openllmetry, traces.retried]) {
      const spans = await spansOfTrace(traceHex);
      expect(spans.map((s) => s.name).sort()).toEqual(["answer.workflow", "openai.chat"]);
      expect(spans.find((s) => s.type === "llm")).toMatchObject({ model: "gpt-3.5-turbo", finish_reason: "stop", metrics: expect.objectContaining({ num_total_tokens: 7 }) });
    }
  });

  it("searches see every trace with its span count, sessions, and the run's columns", async () => {
    const { records } = await api(`/projects/${projectId}/traces/partial_search`, {
      log_stream_id: runId,
      include_counts: true,
      select_columns: { column_ids: ["name", "is_complete", "session_id"] },
      limit: 100,
    });
    const byId = new Map(records.map((r: any) => [r.id, r]));
    expect((byId.get(uuidOf(traces.genai)) as any).num_spans).toBe(4);
    expect((byId.get(uuidOf(traces.openinference)) as any).num_spans).toBe(4);
    expect((byId.get(uuidOf(traces.retried)) as any).num_spans).toBe(2);
    expect(records.every((r: any) => r.is_complete === true)).toBe(true);
    const sessions = await api(`/projects/${projectId}/sessions/partial_search`, { log_stream_id: runId, include_counts: true, limit: 100 });
    expect(sessions.records.map((s: any) => s.name).sort()).toEqual([`chat-${RUN}`, `chat-${RUN}-retry`, `conversation-${RUN}`, `session-${RUN}`].sort());
    const rows = await service.sql<{ n: number }>(`SELECT count(*) AS n FROM records WHERE run_id = '${runId}' AND record_type = 'span'`);
    expect(rows[0]![0]!.n).toBe(12);
    const columns = await api(`/projects/${projectId}/spans/available_columns`, { log_stream_id: runId });
    const ids = columns.columns.map((c: any) => c.id);
    expect(ids).toEqual(expect.arrayContaining(["metrics/num_input_tokens", "metrics/duration_ns"]));
  });
});

/**
 * The spans the real client packages record (test/node/otel-client-packages.ts), exported to the
 * service and read back: what each package puts where must land in the field a user looks for.
 * A log stream of their own, so the counts above are not disturbed.
 */
describe("spans recorded by the real client packages", () => {
  const CLIENTS = "clients";
  const exporterHeaders = () => ({ Authorization: `Bearer ${service.tenant.apiKey}`, project: PROJECT, logstream: CLIENTS });

  async function clientSpans(where: { column_id: string; value: string }): Promise<Record<string, any>[]> {
    const [project] = await api(`/projects?project_name=${PROJECT}`);
    const [stream] = await api(`/projects/${project.id}/log_streams?name=${CLIENTS}`);
    const found = await api(`/projects/${project.id}/spans/partial_search`, {
      log_stream_id: stream.id,
      filters: [{ type: "text", column_id: where.column_id, operator: "eq", value: where.value }],
      select_columns: { include_all_metrics: true },
      limit: 10,
    });
    const traceId = found.records[0]?.trace_id;
    if (!traceId) throw new Error(`no span with ${where.column_id} = ${where.value}`);
    const all = await api(`/projects/${project.id}/spans/partial_search`, {
      log_stream_id: stream.id,
      filters: [{ type: "id", column_id: "trace_id", operator: "eq", value: traceId }],
      select_columns: { include_all_metrics: true },
      limit: 100,
    });
    return all.records;
  }

  it("the AI SDK (@ai-sdk/otel): time to first chunk, tool arguments and result, and an answer whose parts are text, tool call and tool result", async () => {
    const functionId = `weather-agent-${RUN}`;
    const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter: new ProtoExporter({ httpAgentOptions: NO_KEEP_ALIVE, url: `${service.origin}/otel/v1/traces`, headers: exporterHeaders() }) })] });
    const text = await aiSdkWeatherAgent(provider.getTracer("ai"), functionId);
    await provider.forceFlush();
    await provider.shutdown();
    expect(text).toBe("Rainy in Paris.");

    const spans = await clientSpans({ column_id: "name", value: "execute_tool weather" });
    const chats = spans.filter((s) => s.type === "llm");
    expect(chats).toHaveLength(2);
    for (const chat of chats) {
      // gen_ai.client.operation.time_to_first_chunk is in seconds; the model waited 25 ms before its first chunk.
      expect(chat.metrics.time_to_first_token_ns).toBeGreaterThanOrEqual(20_000_000);
      expect(chat.metrics.time_to_first_token_ns).toBeLessThan(chat.metrics.duration_ns + 1);
      expect(chat.model).toBe("gpt-4o-mini");
    }
    const tool = spans.find((s) => s.type === "tool")!;
    expect(tool).toMatchObject({ name: "execute_tool weather", tool_call_id: "call_weather_1" });
    expect(JSON.parse(tool.input)).toEqual({ city: "Paris" });
    expect(JSON.parse(tool.output)).toEqual({ city: "Paris", forecast: "rain", celsius: 14 });

    // The first chat answered with a tool call, stored as the message's tool_calls.
    const toolCallChat = chats.find((s) => s.output?.tool_calls?.length)!;
    expect(toolCallChat.output.tool_calls[0]).toMatchObject({ id: "call_weather_1", function: { name: "weather" } });
    expect(JSON.parse(toolCallChat.output.tool_calls[0].function.arguments)).toEqual({ city: "Paris" });
    // The agent's output message holds text, the tool call and the tool result: its output is
    // the text alone, the result is not appended to it.
    const agent = spans.find((s) => s.type === "agent")!;
    expect(agent.output).toBe("Rainy in Paris.");
  });

  it("OpenInference's OpenAI instrumentation: llm.finish_reason, token counts, and the mime types kept in metadata", async () => {
    const question = `Weather in Oslo? ${RUN}`;
    const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter: new ProtoExporter({ httpAgentOptions: NO_KEEP_ALIVE, url: `${service.origin}/otel/v1/traces`, headers: exporterHeaders() }) })] });
    await openInferenceChatCompletion(provider, question);
    await provider.forceFlush();
    await provider.shutdown();

    const [chat] = await clientSpans({ column_id: "name", value: "OpenAI Chat Completions" });
    expect(chat).toMatchObject({ type: "llm", model: "gpt-4o-mini-2024-07-18", finish_reason: "length" });
    expect(chat!.metrics).toMatchObject({ num_input_tokens: 12, num_output_tokens: 4, num_total_tokens: 16 });
    expect(chat!.input).toEqual([expect.objectContaining({ role: "user", content: question })]);
    expect(chat!.output).toMatchObject({ role: "assistant", content: "It is rainy and" });
    expect(chat!.user_metadata).toMatchObject({ "input.mime_type": "application/json", "output.mime_type": "application/json" });
  });

  it("OpenLLMetry (the Traceloop SDK's own exporter): a tool span's traceloop.entity.input and output are its input and output", async () => {
    const workflow = `orders-${RUN}`;
    const answer = await openLlmetryToolCall({
      baseUrl: `${service.origin}/otel`,
      apiKey: service.tenant.apiKey,
      headers: { project: PROJECT, logstream: CLIENTS },
      workflow,
    });
    expect(answer).toEqual({ order: "A-17", status: "shipped" });

    const spans = await clientSpans({ column_id: "name", value: `${workflow}.workflow` });
    const tool = spans.find((s) => s.name === "lookup_order.tool")!;
    expect(tool.type).toBe("tool");
    expect(JSON.parse(tool.input)).toEqual({ args: [], kwargs: { order: "A-17" } });
    expect(JSON.parse(tool.output)).toEqual({ order: "A-17", status: "shipped" });
    expect(tool.user_metadata).not.toHaveProperty("traceloop.entity.input");
  });
});
