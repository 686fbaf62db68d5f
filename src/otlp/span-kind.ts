/**
 * The kind of record an OpenTelemetry span becomes (docs/otlp.md "Span kinds"). The first
 * convention the span speaks decides: OpenInference's `openinference.span.kind`, then the GenAI
 * semantic conventions' `gen_ai.operation.name`, then OpenLLMetry's `traceloop.span.kind` and
 * `llm.request.type`; a span that names none is a workflow span.
 */
import type { SpanKind } from "../columns/standard-columns";
import type { Plain } from "./attribute-values";

const OPENINFERENCE: Record<string, SpanKind> = {
  LLM: "llm",
  EMBEDDING: "llm",
  TOOL: "tool",
  AGENT: "agent",
  RETRIEVER: "retriever",
  // A reranker takes documents and returns them reordered: a retrieval step.
  RERANKER: "retriever",
  // A guardrail checks an input or output and lets it through or not: a control step.
  GUARDRAIL: "control",
  CHAIN: "workflow",
  EVALUATOR: "workflow",
  PROMPT: "workflow",
};

const GEN_AI_OPERATION: Record<string, SpanKind> = {
  chat: "llm",
  text_completion: "llm",
  generate_content: "llm",
  embeddings: "llm",
  execute_tool: "tool",
  invoke_agent: "agent",
  create_agent: "agent",
  retrieval: "retriever",
  invoke_workflow: "workflow",
};

const TRACELOOP: Record<string, SpanKind> = {
  agent: "agent",
  tool: "tool",
  workflow: "workflow",
  task: "workflow",
};

export const KIND_ATTRIBUTES = ["openinference.span.kind", "gen_ai.operation.name", "traceloop.span.kind", "llm.request.type"] as const;

export function spanKindOf(attributes: Map<string, Plain>): SpanKind {
  const text = (key: string) => {
    const value = attributes.get(key);
    return typeof value === "string" ? value : undefined;
  };
  const openInference = text("openinference.span.kind");
  if (openInference !== undefined) return OPENINFERENCE[openInference.toUpperCase()] ?? "workflow";
  const operation = text("gen_ai.operation.name");
  if (operation !== undefined) return GEN_AI_OPERATION[operation.toLowerCase()] ?? "workflow";
  const traceloop = text("traceloop.span.kind");
  if (traceloop !== undefined) return TRACELOOP[traceloop.toLowerCase()] ?? "workflow";
  if (text("llm.request.type") !== undefined) return "llm";
  return "workflow";
}
