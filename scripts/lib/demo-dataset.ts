/// <reference types="node" />
/**
 * The demo dataset `npm start` seeds: a support assistant's log stream with three sessions of two
 * traces each and one trace outside any session, covering every span kind (agent, workflow, llm,
 * tool, retriever, control), metrics (toxicity among them), tags and user metadata, and one failed
 * tool call. Pure data: ids are derived from names (UUID v5), so seeding twice rewrites the same
 * records instead of duplicating them; times are relative to `now` so the data looks recent.
 */
import { createHash } from "node:crypto";

/** Namespace of the demo's UUID v5 ids (a random constant). */
const DEMO_NAMESPACE = "4f1a0a52-3c0e-4d7b-9a55-2f8a4b1f6c3e";

export function demoId(name: string): string {
  const namespace = Buffer.from(DEMO_NAMESPACE.replace(/-/g, ""), "hex");
  const hash = createHash("sha1").update(namespace).update(name).digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export const DEMO_PROJECT = "demo";
export const DEMO_LOG_STREAM = "default";
/**
 * A second, small project: the nightly probes. The service places a new project on the shard
 * with the most room, so the demo's two projects land on the two data shards `npm start` runs,
 * and the sharded path is what everyone uses every day.
 */
export const DEMO_PROBES_PROJECT = "demo-probes";
export const DEMO_PROBES_LOG_STREAM = "nightly";

type Json = Record<string, unknown>;

export interface DemoSession {
  body: Json;
  traces: Json[];
}

interface Conversation {
  key: string;
  title: string;
  customer: string;
  plan: "free" | "pro" | "enterprise";
  region: string;
  topic: string;
  question: string;
  answer: string;
  followUp: string;
  followUpAnswer: string;
  toxicity: [number, number];
  /** The second trace's tool call fails (status 500). */
  failingTool?: boolean;
}

const CONVERSATIONS: Conversation[] = [
  {
    key: "refund",
    title: "Refund for a damaged order",
    customer: "globex",
    plan: "enterprise",
    region: "eu-west",
    topic: "refunds",
    question: "My order #1042 arrived damaged. Can I get a refund?",
    answer: "I'm sorry about that. I've opened refund request R-88 for order #1042; expect it within 5 business days.",
    followUp: "Will I have to send the item back?",
    followUpAnswer: "No return is needed for damaged items under $200. Keep or recycle it.",
    toxicity: [0.02, 0.04],
  },
  {
    key: "password",
    title: "Locked out after password reset",
    customer: "initech",
    plan: "free",
    region: "us-east",
    topic: "account",
    question: "I reset my password and now I'm locked out. This is ridiculous!",
    answer: "That's frustrating, sorry. Your account was locked after 5 attempts; I've sent an unlock link to your email.",
    followUp: "The link says it expired.",
    followUpAnswer: "I couldn't reach the account service just now. Please try again in a few minutes.",
    toxicity: [0.31, 0.12],
    failingTool: true,
  },
  {
    key: "shipping",
    title: "Where is my order?",
    customer: "umbrella",
    plan: "pro",
    region: "ap-southeast",
    topic: "shipping",
    question: "Where is order #2210? It was due yesterday.",
    answer: "Order #2210 left the Singapore hub this morning and should arrive tomorrow before noon.",
    followUp: "Can I change the delivery address?",
    followUpAnswer: "Yes: I've updated the address to the one on your profile. The courier has been notified.",
    toxicity: [0.05, 0.01],
  },
];

const MODEL = "gpt-4o-mini";

function iso(ms: number, microsExtra = 0): string {
  const base = new Date(ms).toISOString(); // ...T12:00:00.123Z
  return `${base.slice(0, 23)}${String(microsExtra).padStart(3, "0")}Z`;
}

function llmMetrics(inputTokens: number, outputTokens: number, durationMs: number, toxicity: number): Json {
  return {
    num_input_tokens: inputTokens,
    num_output_tokens: outputTokens,
    num_total_tokens: inputTokens + outputTokens,
    duration_ns: durationMs * 1_000_000,
    time_to_first_token_ns: Math.round(durationMs * 0.3) * 1_000_000,
    cost: Number(((inputTokens * 0.15 + outputTokens * 0.6) / 1_000_000).toFixed(8)),
    toxicity,
  };
}

/** A retrieval-augmented answer: trace > workflow > (retriever, llm), then a control check. */
function ragTrace(c: Conversation, start: number): Json {
  const id = (part: string) => demoId(`${c.key}/rag/${part}`);
  const documents = [
    { content: `Policy for ${c.topic}: see the help centre article on ${c.topic}.`, metadata: { source: `kb/${c.topic}.md`, score: 0.91 } },
    { page_content: `Escalation path for ${c.plan} customers.`, metadata: { source: "kb/escalation.md", score: 0.77 } },
  ];
  return {
    id: id("trace"),
    name: `${c.topic}: first answer`,
    input: c.question,
    output: c.answer,
    created_at: iso(start, 101),
    tags: ["demo", c.topic, "rag"],
    user_metadata: { customer: c.customer, plan: c.plan, region: c.region, environment: "production" },
    metrics: { toxicity: c.toxicity[0], duration_ns: 2_400_000_000, cost: 0.00042 },
    spans: [
      {
        id: id("workflow"),
        type: "workflow",
        name: "answer-pipeline",
        input: c.question,
        output: c.answer,
        created_at: iso(start + 5, 0),
        metrics: { duration_ns: 2_300_000_000 },
        spans: [
          {
            id: id("retriever"),
            type: "retriever",
            name: "knowledge-base-search",
            input: c.question,
            output: documents,
            created_at: iso(start + 10, 0),
            metrics: { duration_ns: 180_000_000 },
            tags: ["vector-search"],
          },
          {
            id: id("llm"),
            type: "llm",
            name: "draft-answer",
            input: [
              { role: "system", content: "You are Acme's support assistant. Answer from the documents; be brief and kind." },
              { role: "user", content: c.question },
            ],
            output: { role: "assistant", content: c.answer },
            model: MODEL,
            temperature: 0.2,
            finish_reason: "stop",
            created_at: iso(start + 200, 0),
            tags: [MODEL],
            user_metadata: { prompt_version: "v3" },
            metrics: llmMetrics(412, 58, 1_900, c.toxicity[0]),
          },
        ],
      },
      {
        id: id("control"),
        type: "control",
        name: "pii-guard",
        input: c.answer,
        output: "pass",
        control_id: 101,
        agent_name: "support-assistant",
        check_stage: "post",
        applies_to: "llm_call",
        evaluator_name: "pii-detector",
        selector_path: "$.output.content",
        created_at: iso(start + 2_150, 0),
        metrics: { duration_ns: 35_000_000 },
      },
    ],
  };
}

/** An agent run: trace > agent (react) > (llm with tools, control, tool, agent (router) > llm). */
function agentTrace(c: Conversation, start: number): Json {
  const id = (part: string) => demoId(`${c.key}/agent/${part}`);
  const tool = c.failingTool
    ? { status_code: 500, error_message: "account-service timed out after 3000 ms", output: null }
    : { status_code: 200, output: JSON.stringify({ ok: true, reference: `${c.key.toUpperCase()}-7` }) };
  return {
    id: id("trace"),
    name: `${c.topic}: follow-up`,
    input: c.followUp,
    output: c.followUpAnswer,
    created_at: iso(start, 202),
    tags: ["demo", c.topic, "agent", ...(c.failingTool ? ["error"] : [])],
    user_metadata: { customer: c.customer, plan: c.plan, region: c.region, environment: "production" },
    metrics: { toxicity: c.toxicity[1], duration_ns: 4_100_000_000, cost: 0.00071 },
    ...(c.failingTool ? { status_code: 500, error_message: "tool call failed" } : { status_code: 200 }),
    spans: [
      {
        id: id("agent"),
        type: "agent",
        name: "support-agent",
        agent_type: "react",
        input: c.followUp,
        output: c.followUpAnswer,
        created_at: iso(start + 3, 0),
        metrics: { duration_ns: 4_000_000_000 },
        spans: [
          {
            id: id("plan"),
            type: "llm",
            name: "plan-next-step",
            input: [{ role: "user", content: c.followUp }],
            output: { role: "assistant", content: `Call ${c.topic}_lookup for the customer's latest case.` },
            model: MODEL,
            temperature: 0,
            finish_reason: "tool_calls",
            tools: [{ type: "function", function: { name: `${c.topic}_lookup`, parameters: { type: "object", properties: { customer: { type: "string" } } } } }],
            created_at: iso(start + 10, 0),
            tags: [MODEL],
            metrics: llmMetrics(230, 24, 900, 0.01),
          },
          {
            id: id("policy"),
            type: "control",
            name: "tool-policy",
            input: `${c.topic}_lookup`,
            output: "allow",
            control_id: 202,
            agent_name: "support-agent",
            check_stage: "pre",
            applies_to: "tool_call",
            evaluator_name: "allow-list",
            selector_path: "$.tool_calls[0].function.name",
            created_at: iso(start + 920, 0),
          },
          {
            id: id("tool"),
            type: "tool",
            name: `${c.topic}_lookup`,
            input: JSON.stringify({ customer: c.customer }),
            tool_call_id: `call_${c.key}_1`,
            created_at: iso(start + 930, 0),
            metrics: { duration_ns: c.failingTool ? 3_000_000_000 : 240_000_000 },
            ...tool,
          },
          {
            id: id("router"),
            type: "agent",
            name: "reply-router",
            agent_type: "router",
            input: c.followUp,
            output: c.followUpAnswer,
            created_at: iso(start + 3_950, 0),
            spans: [
              {
                id: id("reply"),
                type: "llm",
                name: "write-reply",
                input: [
                  { role: "system", content: "Write the reply to the customer." },
                  { role: "user", content: c.followUp },
                ],
                output: { role: "assistant", content: c.followUpAnswer },
                model: MODEL,
                temperature: 0.4,
                finish_reason: "stop",
                created_at: iso(start + 3_960, 0),
                tags: [MODEL],
                user_metadata: { prompt_version: "v3" },
                metrics: llmMetrics(388, 41, 1_100, c.toxicity[1]),
              },
            ],
          },
        ],
      },
    ],
  };
}

/** The sessions, each with its traces, in the order they happened. `now` is in milliseconds. */
export function demoSessions(now: number): DemoSession[] {
  return CONVERSATIONS.map((c, i) => {
    const start = now - (CONVERSATIONS.length - i) * 3_600_000;
    return {
      body: {
        id: demoId(`${c.key}/session`),
        name: c.title,
        external_id: `demo-${c.key}`,
        user_metadata: { customer: c.customer, plan: c.plan, channel: "chat" },
        created_at: iso(start),
      },
      traces: [ragTrace(c, start + 1_000), agentTrace(c, start + 120_000)],
    };
  });
}

/** A trace outside any session: a scheduled quality probe with a single workflow. */
export function demoLooseTraces(now: number): Json[] {
  const id = (part: string) => demoId(`probe/${part}`);
  const start = now - 600_000;
  return [
    {
      id: id("trace"),
      name: "nightly quality probe",
      input: "What are your opening hours?",
      output: "We're available 24/7 by chat.",
      created_at: iso(start, 303),
      tags: ["demo", "probe"],
      user_metadata: { environment: "staging", suite: "smoke" },
      metrics: { toxicity: 0.0, duration_ns: 800_000_000 },
      spans: [
        {
          id: id("workflow"),
          type: "workflow",
          name: "probe",
          input: "What are your opening hours?",
          output: "We're available 24/7 by chat.",
          created_at: iso(start + 2, 0),
          spans: [
            {
              id: id("llm"),
              type: "llm",
              name: "answer",
              input: [{ role: "user", content: "What are your opening hours?" }],
              output: { role: "assistant", content: "We're available 24/7 by chat." },
              model: MODEL,
              temperature: 0,
              finish_reason: "stop",
              created_at: iso(start + 5, 0),
              metrics: llmMetrics(35, 9, 600, 0.0),
            },
          ],
        },
      ],
    },
  ];
}
