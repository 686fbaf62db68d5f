/**
 * The synthetic run: sessions, traces and nested spans of every kind, as the `galileo` SDK would
 * send them (IngestTrace objects and session inputs), so that the service's own row builders turn
 * them into rows.
 *
 * Shape of a run of N records: N/100 sessions, N/10 traces, the rest spans (8.9 per trace on
 * average, 2 to 24 each, nested up to three levels under a workflow or agent root), created over
 * 30 days. The facts the benchmarks query are laid out so that each query shape has a full first
 * page at every size, and so that the deletion benchmark's value matches about 10% of traces:
 *
 * - trace `user_metadata`: `customer` (1 of 50, per session), `tenant` (1 of 10, per session:
 *   the deletion value), `environment` (production 80%, staging 20%), `app_version`, `region`;
 * - trace tags: the environment, the channel, `vip` (5% of sessions), `beta`;
 * - metrics: token counts, durations and cost on traces and llm spans; `toxicity` on 60% of
 *   traces and 70% of llm spans (skewed low: about 7% above 0.8);
 * - llm spans: five models; tool spans with 3% 500s and 2% 429s; retriever documents; control
 *   spans with every control column; agent spans with every agent type;
 * - the rare word (text-corpus.ts) in the question of 1 trace in 10,000 (at least one).
 */
import type { IngestSpan, IngestTrace } from "../../src/ingest/ingest-schemas";
import type { SessionInput } from "../../src/ingest/record-rows";
import { microsToIso } from "../../src/db/client";
import { SeededRandom } from "../lib/seeded-random";
import { TOOLS, answer, checkedText, documents, question, searchQuery, systemPrompt } from "./text-corpus";

/** Records are created in the 30 days before this instant (fixed, so datasets are reproducible). */
export const WINDOW_END_MICROS = Date.UTC(2026, 9, 1) * 1000;
export const WINDOW_MICROS = 30 * 24 * 3600 * 1_000_000;

export const MODELS = ["gpt-4o", "gpt-4o-mini", "claude-3-5-sonnet", "llama-3.1-70b", "gemini-1.5-pro"] as const;
/** The deletion benchmark's selector: one tenant of ten. */
export const DELETION_KEY = "tenant";
export const DELETION_VALUE = "tenant-3";

const AGENT_TYPES = ["judge", "router", "supervisor", "planner", "react", "reflection", "classifier", "default"] as const;
const APP_VERSIONS = ["2.3.0", "2.3.1", "2.4.0", "2.4.1", "2.5.0-beta"];
const REGIONS = ["eu-west-1", "us-east-1", "ap-northeast-1", "sa-east-1"];
const CHANNELS = ["web", "mobile", "api"];

export interface PlannedSession {
  index: number;
  id: string;
  createdAt: number;
  firstTrace: number;
}

export interface PlannedTrace {
  index: number;
  session: number;
  createdAt: number;
  spans: number;
  salted: boolean;
}

export interface RunPlan {
  sessions: PlannedSession[];
  /** In creation order: the order in which they are ingested. */
  traces: PlannedTrace[];
  counts: { sessions: number; traces: number; spans: number };
}

const PLAN_STREAM = 0x504c414e;
const SESSION_STREAM = 0x53455353;

/** Sizes, times and span counts of every session and trace: small, made once per dataset. */
export function planRun(records: number, seed: number): RunPlan {
  const r = new SeededRandom(seed, PLAN_STREAM);
  const sessionCount = Math.max(1, Math.round(records / 100));
  const traceCount = Math.max(sessionCount, Math.round(records / 10));
  const spanCount = records - sessionCount - traceCount;
  if (spanCount < traceCount * 2) throw new Error(`${records} records is too few for a run`);

  const sessions: PlannedSession[] = [];
  for (let i = 0; i < sessionCount; i += 1) {
    sessions.push({ index: i, id: r.uuid(), createdAt: WINDOW_END_MICROS - WINDOW_MICROS + Math.floor(r.next() * (WINDOW_MICROS - 6 * 3600 * 1_000_000)), firstTrace: -1 });
  }
  const tracesPerSession = new Array<number>(sessionCount).fill(1);
  for (let i = sessionCount; i < traceCount; i += 1) tracesPerSession[r.int(0, sessionCount - 1)]! += 1;

  const traces: PlannedTrace[] = [];
  let spansSoFar = 0;
  for (const session of sessions) {
    let at = session.createdAt;
    for (let k = 0; k < tracesPerSession[session.index]!; k += 1) {
      at += r.int(5, 600) * 1_000_000 + r.int(0, 999_999);
      const spans = r.int(3, 15);
      spansSoFar += spans;
      traces.push({ index: traces.length, session: session.index, createdAt: at, spans, salted: false });
    }
  }
  // Make the span total exact without leaving the 2..24 range.
  let difference = spanCount - spansSoFar;
  while (difference !== 0) {
    const trace = traces[r.int(0, traces.length - 1)]!;
    if (difference > 0 && trace.spans < 24) {
      trace.spans += 1;
      difference -= 1;
    } else if (difference < 0 && trace.spans > 2) {
      trace.spans -= 1;
      difference += 1;
    }
  }
  const salted = Math.max(1, Math.round(traceCount / 10_000));
  for (let i = 0; i < salted; i += 1) traces[r.int(0, traces.length - 1)]!.salted = true;

  traces.sort((a, b) => a.createdAt - b.createdAt || a.index - b.index);
  traces.forEach((trace) => {
    const session = sessions[trace.session]!;
    if (session.firstTrace === -1) session.firstTrace = trace.index;
  });
  return { sessions, traces, counts: { sessions: sessionCount, traces: traceCount, spans: spanCount } };
}

/** What a session contributes to its traces. */
interface SessionTraits {
  customer: string;
  tenant: string;
  channel: string;
  vip: boolean;
}

export function sessionTraits(seed: number, session: PlannedSession): SessionTraits {
  const r = new SeededRandom(seed, SESSION_STREAM, session.index);
  return {
    customer: `cust-${String(r.int(1, 50)).padStart(3, "0")}`,
    tenant: `tenant-${r.int(0, 9)}`,
    channel: r.pick(CHANNELS),
    vip: r.chance(0.05),
  };
}

export function sessionInput(seed: number, session: PlannedSession): SessionInput {
  const r = new SeededRandom(seed, SESSION_STREAM, session.index, 1);
  const traits = sessionTraits(seed, session);
  return {
    id: session.id,
    name: `Conversation ${session.index + 1}`,
    external_id: r.chance(0.5) ? `ext-${r.hex(12)}` : null,
    user_metadata: { channel: traits.channel, user_id: `user-${r.int(1, 200_000)}` },
    created_at: microsToIso(session.createdAt),
  };
}

type TraceKind = "chat" | "rag" | "agent" | "guarded";

const toxicity = (r: SeededRandom) => Math.round(r.next() ** 3 * 10_000) / 10_000;

class TraceBuilder {
  private clock: number;
  private step = 0;

  constructor(
    private readonly r: SeededRandom,
    startsAt: number,
    private readonly userQuestion: string,
  ) {
    this.clock = startsAt;
  }

  /** Creation times advance through the trace, depth first, like a real execution. */
  private nextTimestamp(): string {
    this.clock += this.r.int(20, 1_500) * 1000 + this.r.int(0, 999);
    return microsToIso(this.clock);
  }

  private base(type: IngestSpan["type"], name: string): IngestSpan {
    this.step += 1;
    return { id: this.r.uuid(), type, name, created_at: this.nextTimestamp(), step_number: this.step, status_code: 200 } as IngestSpan;
  }

  container(type: "workflow" | "agent"): IngestSpan {
    const r = this.r;
    const span = this.base(type, type === "workflow" ? r.pick(["handle-request", "rag-pipeline", "answer-composer", "retrieval-step"]) : r.pick(["support-agent", "router", "planner", "billing-agent"]));
    span.input = this.userQuestion;
    span.output = answer(r);
    if (type === "agent") span.agent_type = r.pick(AGENT_TYPES);
    span.metrics = { duration_ns: r.int(200, 20_000) * 1_000_000 };
    span.spans = [];
    return span;
  }

  llm(): IngestSpan {
    const r = this.r;
    const span = this.base("llm", r.pick(["chat-completion", "answer", "summarize", "classify-intent", "rewrite-query"]));
    const inputTokens = r.int(60, 3_000);
    const outputTokens = r.int(10, 800);
    const messages: { role: string; content: string }[] = [
      { role: "system", content: systemPrompt(r) },
      { role: "user", content: this.userQuestion },
    ];
    if (r.chance(0.2)) messages.push({ role: "tool", content: JSON.stringify(r.pick(TOOLS).result(r)) });
    span.input = messages;
    span.output = { role: "assistant", content: answer(r) };
    span.model = r.weighted([[MODELS[0], 25], [MODELS[1], 30], [MODELS[2], 20], [MODELS[3], 15], [MODELS[4], 10]]);
    span.temperature = r.pick([0, 0.2, 0.7, 1]);
    span.finish_reason = r.weighted([["stop", 85], ["tool_calls", 10], ["length", 5]]);
    if (r.chance(0.3)) {
      span.tools = JSON.stringify(TOOLS.slice(0, r.int(1, TOOLS.length)).map((t) => ({ type: "function", function: { name: t.name, description: `Calls ${t.name.replace(/_/g, " ")}.` } })));
    }
    const metrics: Record<string, number> = {
      num_input_tokens: inputTokens,
      num_output_tokens: outputTokens,
      num_total_tokens: inputTokens + outputTokens,
      duration_ns: r.int(300, 9_000) * 1_000_000,
      time_to_first_token_ns: r.int(80, 1_500) * 1_000_000,
      cost: Math.round((inputTokens * 2.5 + outputTokens * 10) / 1_000) / 1_000,
    };
    if (r.chance(0.7)) metrics.toxicity = toxicity(r);
    span.metrics = metrics;
    const tag = r.weighted([[null, 80], ["cached", 15], ["retry", 5]]);
    if (tag) span.tags = [tag];
    if (r.chance(0.25)) span.user_metadata = { prompt_version: `v${r.int(1, 6)}` };
    return span;
  }

  tool(): IngestSpan {
    const r = this.r;
    const tool = r.pick(TOOLS);
    const span = this.base("tool", tool.name);
    span.input = JSON.stringify(tool.args(r));
    span.tool_call_id = `call_${r.hex(24)}`;
    const outcome = r.weighted([[200, 95], [500, 3], [429, 2]]);
    span.status_code = outcome;
    if (outcome === 200) span.output = JSON.stringify(tool.result(r));
    else span.error_message = outcome === 500 ? "upstream service timed out after 30 s" : "rate limited by the upstream service";
    span.metrics = { duration_ns: r.int(5, 3_000) * 1_000_000 };
    if (r.chance(0.1)) span.tags = ["external"];
    return span;
  }

  retriever(): IngestSpan {
    const r = this.r;
    const span = this.base("retriever", r.pick(["vector-search", "bm25-search", "hybrid-search"]));
    span.input = searchQuery(r);
    span.output = documents(r, r.int(3, 5));
    span.metrics = { duration_ns: r.int(10, 400) * 1_000_000 };
    return span;
  }

  control(): IngestSpan {
    const r = this.r;
    const evaluator = r.pick(["pii-detector", "toxicity-filter", "prompt-injection", "topic-allowlist"]);
    const span = this.base("control", `guardrail:${evaluator}`);
    span.input = checkedText(r);
    span.output = JSON.stringify({ decision: r.weighted([["allow", 92], ["block", 8]]), evaluator });
    span.control_id = r.int(1, 40);
    span.agent_name = r.pick(["support-agent", "router", "planner", "billing-agent"]);
    span.check_stage = r.pick(["pre", "post"]);
    span.applies_to = r.pick(["tool_call", "llm_call"]);
    span.evaluator_name = evaluator;
    span.selector_path = r.pick(["$.input", "$.output", "$.tool_calls[0].arguments"]);
    span.metrics = { duration_ns: r.int(1, 80) * 1_000_000 };
    return span;
  }
}

/** One trace with its nested spans, exactly `planned.spans` of them. */
export function traceInput(seed: number, planned: PlannedTrace, session: PlannedSession): IngestTrace {
  const r = new SeededRandom(seed, planned.index);
  const traits = sessionTraits(seed, session);
  const kind: TraceKind = r.weighted([["chat", 35], ["rag", 30], ["agent", 25], ["guarded", 10]]);
  const userQuestion = question(r, planned.salted);
  const traceId = r.uuid();
  const builder = new TraceBuilder(r, planned.createdAt, userQuestion);

  const root = builder.container(kind === "agent" ? "agent" : "workflow");
  const weights: readonly (readonly [string, number])[] =
    kind === "rag" ? [["retriever", 30], ["llm", 40], ["tool", 10], ["control", 5], ["workflow", 8], ["agent", 7]]
    : kind === "guarded" ? [["control", 35], ["llm", 35], ["tool", 15], ["retriever", 5], ["workflow", 5], ["agent", 5]]
    : kind === "agent" ? [["llm", 40], ["tool", 30], ["retriever", 8], ["control", 7], ["workflow", 5], ["agent", 10]]
    : [["llm", 55], ["tool", 15], ["retriever", 15], ["control", 5], ["workflow", 5], ["agent", 5]];
  // Open containers and how many more children each takes (the root takes any number).
  const open: { span: IngestSpan; room: number }[] = [{ span: root, room: Infinity }];
  for (let remaining = planned.spans - 1; remaining > 0; remaining -= 1) {
    const parent = open[open.length - 1]!;
    const type = r.weighted(weights);
    const span =
      type === "llm" ? builder.llm()
      : type === "tool" ? builder.tool()
      : type === "retriever" ? builder.retriever()
      : type === "control" ? builder.control()
      : builder.container(type as "workflow" | "agent");
    parent.span.spans!.push(span);
    parent.room -= 1;
    if (parent.room === 0) open.pop();
    if (span.spans && open.length < 3 && remaining > 2) open.push({ span, room: r.int(1, Math.min(4, remaining - 1)) });
  }

  const environment = r.chance(0.8) ? "production" : "staging";
  const appVersion = r.pick(APP_VERSIONS);
  const tags = [environment, traits.channel];
  if (traits.vip) tags.push("vip");
  if (appVersion.endsWith("beta")) tags.push("beta");
  const inputTokens = r.int(200, 9_000);
  const outputTokens = r.int(50, 2_000);
  const metrics: Record<string, number> = {
    duration_ns: r.int(500, 45_000) * 1_000_000,
    num_input_tokens: inputTokens,
    num_output_tokens: outputTokens,
    num_total_tokens: inputTokens + outputTokens,
    cost: Math.round((inputTokens * 2.5 + outputTokens * 10) / 1_000) / 1_000,
  };
  if (r.chance(0.6)) metrics.toxicity = toxicity(r);
  return {
    id: traceId,
    type: "trace",
    name: { chat: "chat", rag: "rag-query", agent: "agent-run", guarded: "guarded-chat" }[kind],
    input: userQuestion,
    output: root.output as string,
    created_at: microsToIso(planned.createdAt),
    session_id: session.id,
    status_code: 200,
    user_metadata: {
      customer: traits.customer,
      [DELETION_KEY]: traits.tenant,
      environment,
      app_version: appVersion,
      region: r.pick(REGIONS),
    },
    tags,
    metrics,
    spans: [root],
  } as IngestTrace;
}
