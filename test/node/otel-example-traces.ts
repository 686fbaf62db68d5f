/**
 * Traces as LLM applications instrumented with OpenTelemetry emit them, made with the real OTel
 * JS SDK: one per convention the intake maps (docs/otlp.md). Used by the end-to-end test
 * (test/node/otlp-end-to-end.test.ts) and to record the unit tests' payloads
 * (scripts/record-otlp-fixtures.ts). Spans end children first, the root last, as in real code.
 */
import { context, type Span, SpanStatusCode, trace, type Tracer } from "@opentelemetry/api";

/** Starts a child of `parent` (or a root), runs `body`, ends it. */
function child(tracer: Tracer, parent: Span | undefined, name: string, attributes: Record<string, any>, body?: (span: Span) => void): Span {
  const ctx = parent ? trace.setSpan(context.active(), parent) : context.active();
  const span = tracer.startSpan(name, { attributes }, ctx);
  body?.(span);
  span.end();
  return span;
}

const json = (value: unknown) => JSON.stringify(value);

export interface ExampleOptions {
  /** Distinguishes this run's data (sessions, users, metadata). */
  tag: string;
}

/** GenAI semantic conventions: an agent that calls a model, a tool, and the model again. */
export function genAiAgentTrace(tracer: Tracer, { tag }: ExampleOptions): string {
  const root = tracer.startSpan("invoke_agent travel-planner", {
    attributes: {
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": "travel-planner",
      "gen_ai.conversation.id": `conversation-${tag}`,
      "user.id": `user-${tag}`,
      "metadata.customer": "acme",
      "gen_ai.input.messages": json([{ role: "user", parts: [{ type: "text", content: "Weather in Paris?" }] }]),
    },
  });
  child(tracer, root, "chat gpt-4o", {
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": "openai",
    "gen_ai.request.model": "gpt-4o",
    "gen_ai.response.model": "gpt-4o-2024-08-06",
    "gen_ai.request.temperature": 0.2,
    "gen_ai.usage.input_tokens": 42,
    "gen_ai.usage.output_tokens": 7,
    "gen_ai.response.finish_reasons": ["tool_calls"],
    "gen_ai.system_instructions": json([{ type: "text", content: "You plan trips." }]),
    "gen_ai.input.messages": json([{ role: "user", parts: [{ type: "text", content: "Weather in Paris?" }] }]),
    "gen_ai.output.messages": json([
      { role: "assistant", parts: [{ type: "tool_call", id: "call_1", name: "get_weather", arguments: { city: "Paris" } }], finish_reason: "tool_calls" },
    ]),
    "gen_ai.tool.definitions": json([{ type: "function", name: "get_weather", parameters: { type: "object" } }]),
  });
  child(tracer, root, "execute_tool get_weather", {
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": "get_weather",
    "gen_ai.tool.call.id": "call_1",
    "gen_ai.tool.call.arguments": json({ city: "Paris" }),
    "gen_ai.tool.call.result": "rainy, 14°C",
  });
  child(tracer, root, "chat gpt-4o", {
    "gen_ai.operation.name": "chat",
    "gen_ai.request.model": "gpt-4o",
    "gen_ai.usage.input_tokens": 60,
    "gen_ai.usage.output_tokens": 12,
    "gen_ai.input.messages": json([
      { role: "user", parts: [{ type: "text", content: "Weather in Paris?" }] },
      { role: "assistant", parts: [{ type: "tool_call", id: "call_1", name: "get_weather", arguments: { city: "Paris" } }] },
      { role: "tool", parts: [{ type: "tool_call_response", id: "call_1", response: "rainy, 14°C" }] },
    ]),
    "gen_ai.output.messages": json([{ role: "assistant", parts: [{ type: "text", content: "Rainy, 14°C: take an umbrella." }], finish_reason: "stop" }]),
  });
  root.setAttribute("gen_ai.output.messages", json([{ role: "assistant", parts: [{ type: "text", content: "Rainy, 14°C: take an umbrella." }] }]));
  root.end();
  return root.spanContext().traceId;
}

/** OpenInference (Arize, Phoenix): a RAG chain with a retriever, an LLM and a failing tool. */
export function openInferenceTrace(tracer: Tracer, { tag }: ExampleOptions): string {
  const root = tracer.startSpan("rag-pipeline", {
    attributes: {
      "openinference.span.kind": "CHAIN",
      "input.value": "What is D1?",
      "session.id": `session-${tag}`,
      "tag.tags": ["rag", "prod"],
      metadata: json({ customer: "acme", plan: "pro" }),
    },
  });
  child(tracer, root, "retrieve", {
    "openinference.span.kind": "RETRIEVER",
    "session.id": `session-${tag}`,
    "input.value": "D1",
    "retrieval.documents.0.document.id": "doc-1",
    "retrieval.documents.0.document.content": "D1 is SQLite at the edge.",
    "retrieval.documents.0.document.score": 0.92,
    "retrieval.documents.0.document.metadata": json({ source: "docs" }),
    "retrieval.documents.1.document.id": "doc-2",
    "retrieval.documents.1.document.content": "Workers run JavaScript.",
    "retrieval.documents.1.document.score": 0.41,
  });
  child(tracer, root, "ChatOpenAI", {
    "openinference.span.kind": "LLM",
    "session.id": `session-${tag}`,
    "llm.model_name": "gpt-4o-mini",
    "llm.invocation_parameters": json({ temperature: 0.1 }),
    "llm.input_messages.0.message.role": "system",
    "llm.input_messages.0.message.content": "Answer from the documents.",
    "llm.input_messages.1.message.role": "user",
    "llm.input_messages.1.message.content": "What is D1?",
    "llm.output_messages.0.message.role": "assistant",
    "llm.output_messages.0.message.content": "D1 is SQLite at the edge.",
    "llm.token_count.prompt": 30,
    "llm.token_count.completion": 8,
    "llm.token_count.total": 38,
    "llm.tools.0.tool.json_schema": json({ type: "function", function: { name: "lookup" } }),
    "input.value": "What is D1?",
    "output.value": "D1 is SQLite at the edge.",
  });
  child(tracer, root, "lookup", { "openinference.span.kind": "TOOL", "input.value": json({ term: "D1" }) }, (span) => {
    span.recordException(new TypeError("lookup service unreachable"));
    span.setStatus({ code: SpanStatusCode.ERROR, message: "lookup failed" });
  });
  root.setAttribute("output.value", "D1 is SQLite at the edge.");
  root.end();
  return root.spanContext().traceId;
}

/** OpenLLMetry (Traceloop), older GenAI attributes: a workflow around one chat call. */
export function openLlmetryTrace(tracer: Tracer, { tag }: ExampleOptions): string {
  const root = tracer.startSpan("answer.workflow", {
    attributes: {
      "traceloop.span.kind": "workflow",
      "traceloop.entity.name": "answer",
      "traceloop.entity.input": json({ question: "Hi?" }),
      "traceloop.association.properties.session_id": `chat-${tag}`,
      "traceloop.association.properties.customer": "globex",
    },
  });
  child(tracer, root, "openai.chat", {
    "llm.request.type": "chat",
    "gen_ai.system": "openai",
    "gen_ai.request.model": "gpt-3.5-turbo",
    "gen_ai.prompt.0.role": "user",
    "gen_ai.prompt.0.content": "Hi?",
    "gen_ai.completion.0.role": "assistant",
    "gen_ai.completion.0.content": "Hello!",
    "gen_ai.completion.0.finish_reason": "stop",
    "gen_ai.usage.prompt_tokens": 5,
    "gen_ai.usage.completion_tokens": 2,
    "llm.usage.total_tokens": 7,
  });
  root.setAttribute("traceloop.entity.output", json({ answer: "Hello!" }));
  root.end();
  return root.spanContext().traceId;
}
