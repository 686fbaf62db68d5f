/**
 * Inputs, outputs, tool calls and documents from the attributes of the three conventions LLM
 * applications emit (docs/otlp.md "Mapping"):
 *
 * - GenAI semantic conventions, current: `gen_ai.input.messages`, `gen_ai.output.messages`,
 *   `gen_ai.system_instructions` (messages of typed `parts`, as JSON text or structured values),
 *   `gen_ai.tool.call.*`, `gen_ai.retrieval.*`, `gen_ai.tool.definitions`;
 * - GenAI semantic conventions, older (OpenLLMetry): `gen_ai.prompt.N.*`, `gen_ai.completion.N.*`,
 *   `traceloop.entity.input|output`, `llm.request.functions.N.*`;
 * - OpenInference (Arize, Phoenix): `input.value`, `output.value`, `llm.input_messages.N.message.*`,
 *   `llm.output_messages.N.message.*`, `retrieval.documents.N.document.*`,
 *   `reranker.*_documents.N.document.*`, `llm.tools.N.tool.json_schema`.
 *
 * Messages come out in the service's shape, `{role, content}` with `tool_calls`
 * (`[{id, type: "function", function: {name, arguments}}]`) and `tool_call_id` when present;
 * documents as `{content, metadata}`.
 */
import { type Plain, stringOf, structured, valueText } from "./attribute-values";
import { type SpanAttributes, subGroups } from "./span-attributes";

export interface ToolCall {
  id?: string;
  type: "function";
  function: { name: string; arguments: string };
}

export interface ChatMessage {
  role: string;
  content: string;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
}

export interface Document {
  content: string;
  metadata: Record<string, string | number | boolean>;
}

const isRecord = (value: unknown): value is Record<string, Plain> => typeof value === "object" && value !== null && !Array.isArray(value);

const text = (value: Plain | undefined): string => (value === undefined || value === null ? "" : valueText(value));

function toolCall(id: Plain | undefined, name: Plain | undefined, args: Plain | undefined): ToolCall {
  return { ...(stringOf(id) ? { id: stringOf(id) } : {}), type: "function", function: { name: text(name), arguments: text(args) } };
}

function message(role: string, content: string, toolCalls: ToolCall[], toolCallId: string | undefined): ChatMessage {
  return { role, content, ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}), ...(toolCallId ? { tool_call_id: toolCallId } : {}) };
}

/**
 * One message of `gen_ai.input|output.messages`: `{role, parts: [{type, ...}]}` (current), or an
 * OpenAI-style `{role, content, tool_calls}` (what some instrumentations put there).
 */
function semconvMessage(value: Plain): ChatMessage[] {
  if (!isRecord(value)) return [];
  const role = stringOf(value.role) ?? "user";
  if (!Array.isArray(value.parts)) {
    const content = Array.isArray(value.content)
      ? value.content.map((part) => (isRecord(part) ? text(part.text ?? part.content) : text(part))).join("")
      : text(value.content);
    const calls = Array.isArray(value.tool_calls)
      ? value.tool_calls.filter(isRecord).map((call) => {
          const fn = isRecord(call.function) ? call.function : call;
          return toolCall(call.id, fn.name, fn.arguments);
        })
      : [];
    return [message(role, content, calls, stringOf(value.tool_call_id))];
  }
  const texts: string[] = [];
  const calls: ToolCall[] = [];
  const results: { id: string | undefined; content: string }[] = [];
  for (const part of value.parts) {
    if (!isRecord(part)) continue;
    const type = stringOf(part.type);
    if (type === "tool_call") calls.push(toolCall(part.id, part.name, part.arguments));
    else if (type === "tool_call_response") results.push({ id: stringOf(part.id), content: text(part.response ?? part.result) });
    else if (type === "text" || type === undefined) texts.push(text(part.content ?? part.text));
    // Reasoning, media (blob, uri, file) and other parts are not text of the conversation.
  }
  // A message of tool results only (role `tool`) is the result; results beside text or tool calls
  // (the AI SDK answers that way) follow the message as `tool` messages of their own, so that
  // they never run into the answer's text.
  if (texts.length === 0 && calls.length === 0 && results.length > 0) {
    return [message(role, results.map((r) => r.content).join("\n"), [], results[0]!.id)];
  }
  return [message(role, texts.join("\n"), calls, undefined), ...results.map((r) => message("tool", r.content, [], r.id))];
}

/**
 * `gen_ai.input|output.messages` as messages. A value that does not read as a list of messages
 * (text nested deeper than MAX_TEXT_JSON_DEPTH, text that is not JSON, a structure that is not a
 * list, a list in which no message is found) is kept whole as one message of `role` holding its
 * text: contract section 12, nothing sent is lost (issue 30: 6,000 levels of `[` were stored as
 * an empty input). An empty list, or no attribute, gives none.
 */
function semconvMessages(value: Plain | undefined, role: string): ChatMessage[] | undefined {
  if (value === undefined || value === null) return undefined;
  const parsed = structured(value);
  if (Array.isArray(parsed)) {
    const messages = parsed.flatMap(semconvMessage);
    if (messages.length > 0) return messages;
    if (parsed.length === 0) return undefined;
  }
  const whole = text(value);
  return whole.trim() === "" ? undefined : [message(role, whole, [], undefined)];
}

/** `gen_ai.system_instructions`: a list of parts (or a string) as one system message. */
function systemInstructions(value: Plain | undefined): ChatMessage | undefined {
  const parsed = structured(value);
  if (parsed === undefined || parsed === null) return undefined;
  if (typeof parsed === "string") return parsed === "" ? undefined : message("system", parsed, [], undefined);
  const parts = Array.isArray(parsed) ? parsed : [parsed];
  const content = parts.map((part) => (isRecord(part) ? text(part.content ?? part.text) : text(part))).join("\n");
  return content === "" ? undefined : message("system", content, [], undefined);
}

/** OpenLLMetry's flattened `gen_ai.prompt.N.*` / `gen_ai.completion.N.*`. */
function flattenedMessages(groups: Map<string, Plain>[], defaultRole: string): ChatMessage[] | undefined {
  const messages = groups.map((group) => {
    const calls = subGroups(group, "tool_calls.").map((call) => toolCall(call.get("id"), call.get("name"), call.get("arguments")));
    return message(stringOf(group.get("role")) ?? defaultRole, text(group.get("content")), calls, stringOf(group.get("tool_call_id")));
  });
  return messages.length > 0 ? messages : undefined;
}

/** OpenInference's `llm.input_messages.N.message.*`. */
function openInferenceMessages(groups: Map<string, Plain>[], defaultRole: string): ChatMessage[] | undefined {
  const messages = groups.map((group) => {
    let content = text(group.get("message.content"));
    if (content === "") {
      content = subGroups(group, "message.contents.")
        .map((part) => text(part.get("message_content.text")))
        .join("");
    }
    const calls = subGroups(group, "message.tool_calls.").map((call) =>
      toolCall(call.get("tool_call.id"), call.get("tool_call.function.name"), call.get("tool_call.function.arguments")),
    );
    return message(stringOf(group.get("message.role")) ?? defaultRole, content, calls, stringOf(group.get("message.tool_call_id")));
  });
  return messages.length > 0 ? messages : undefined;
}

/** Messages sent to the model, from whichever convention the span speaks. */
export function inputMessages(attrs: SpanAttributes): ChatMessage[] | undefined {
  const system = systemInstructions(attrs.take("gen_ai.system_instructions"));
  const messages =
    semconvMessages(attrs.take("gen_ai.input.messages"), "user") ??
    flattenedMessages(attrs.indexed("gen_ai.prompt."), "user") ??
    openInferenceMessages(attrs.indexed("llm.input_messages."), "user");
  if (system && !(messages?.[0]?.role === "system")) return [system, ...(messages ?? [])];
  return messages;
}

/** Messages the model answered (the first is the span's output), and the finish reason they give. */
export function outputMessages(attrs: SpanAttributes): { messages: ChatMessage[]; finishReason?: string } | undefined {
  const taken = attrs.take("gen_ai.output.messages");
  const raw = structured(taken);
  const semconv = semconvMessages(taken, "assistant");
  if (semconv) {
    const first = Array.isArray(raw) && isRecord(raw[0]) ? stringOf(raw[0].finish_reason) : undefined;
    return { messages: semconv, finishReason: first };
  }
  const completions = attrs.indexed("gen_ai.completion.");
  const flattened = flattenedMessages(completions, "assistant");
  if (flattened) return { messages: flattened, finishReason: stringOf(completions[0]?.get("finish_reason")) };
  const openInference = openInferenceMessages(attrs.indexed("llm.output_messages."), "assistant");
  return openInference ? { messages: openInference } : undefined;
}

function documentOf(content: Plain | undefined, metadata: Record<string, Plain | undefined>): Document {
  const meta: Record<string, string | number | boolean> = {};
  for (const [key, value] of Object.entries(metadata)) {
    if (value === undefined || value === null) continue;
    if (typeof value === "object") {
      // OpenInference puts a document's own metadata as JSON text under `document.metadata`.
      if (!Array.isArray(value)) for (const [k, v] of Object.entries(value)) if (v !== null) meta[k] = typeof v === "object" ? JSON.stringify(v) : v;
      else meta[key] = JSON.stringify(value);
    } else meta[key] = value;
  }
  return { content: text(content), metadata: meta };
}

function openInferenceDocuments(groups: Map<string, Plain>[]): Document[] | undefined {
  if (groups.length === 0) return undefined;
  return groups.map((group) =>
    documentOf(group.get("document.content"), {
      id: group.get("document.id"),
      score: group.get("document.score"),
      metadata: structured(group.get("document.metadata")),
    }),
  );
}

/** Documents a retriever (or reranker) returned. */
export function retrievedDocuments(attrs: SpanAttributes): Document[] | undefined {
  const fromOpenInference = openInferenceDocuments(attrs.indexed("retrieval.documents.")) ?? openInferenceDocuments(attrs.indexed("reranker.output_documents."));
  if (fromOpenInference) return fromOpenInference;
  const semconv = structured(attrs.take("gen_ai.retrieval.documents"));
  if (!Array.isArray(semconv)) return undefined;
  return semconv.map((doc) => {
    if (!isRecord(doc)) return documentOf(doc, {});
    const { content, text: body, ...rest } = doc;
    return documentOf(content ?? body, rest);
  });
}

/** Tool definitions offered to the model, as JSON text. */
export function toolDefinitions(attrs: SpanAttributes): string | undefined {
  const semconv = structured(attrs.take("gen_ai.tool.definitions"));
  if (semconv !== undefined && semconv !== null) return typeof semconv === "string" ? semconv : JSON.stringify(semconv);
  const openInference = attrs.indexed("llm.tools.").map((group) => structured(group.get("tool.json_schema")));
  if (openInference.length > 0) return JSON.stringify(openInference);
  const traceloop = attrs.indexed("llm.request.functions.").map((group) => ({
    name: text(group.get("name")),
    description: text(group.get("description")),
    parameters: structured(group.get("parameters")) ?? null,
  }));
  return traceloop.length > 0 ? JSON.stringify(traceloop) : undefined;
}

/** A value as the text of a string input or output (structured values as JSON). */
export function contentText(value: Plain | undefined): string | undefined {
  if (value === undefined || value === null) return undefined;
  return valueText(value);
}
