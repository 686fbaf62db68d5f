/**
 * Random datasets for the search tests: sessions, traces and nested spans of every kind drawn
 * from small value pools (so that filters match, values collide and sorts tie), ingested through
 * the real POST /sessions and POST /traces routes, together with the records the service should
 * hold for them (test/search-reference-evaluator.ts reads those).
 */
import fc from "fast-check";
import { expect } from "vitest";
import { call } from "./support/client";
import type { Tenant } from "./support/tenants";
import { isoMicros, type RefRecord } from "./search-reference-evaluator";

export const POOLS = {
  names: ["alpha", "Alpha", "beta", "gamma ray", "Ünïcode é", ""],
  texts: ["hello world", "Hello World", "find the needle", "NEEDLE in haystack", "ünïcode ÉCOLE", "50% off_sale", "Straße \u212Aelvin l'école", ""],
  models: ["gpt-4o", "GPT-4o", "claude-3"],
  env: ["prod", "Prod", "dev"],
  customer: ["c1", "c2", "c10"],
  tags: ["red", "Red", "blue", "green", "with space"],
  toxicity: [0, 0.25, 0.5, 1],
  duration: [100, 200, 300],
  statusCodes: [200, 404, 500],
  errors: ["boom", "Boom", "timeout"],
  externalIds: ["ext-1", "ext-2"],
  datasetInputs: ["q1", "Q1"],
  splits: ["train", "test"],
  steps: [1, 2, 3],
  temperatures: [0, 0.7],
  toolCallIds: ["call-1", "call-2"],
  agentTypes: ["router", "planner", "default"],
  agentNames: ["guard", "Guard"],
  controlIds: [1, 2],
};

const BASE_MS = Date.parse("2026-01-01T00:00:00Z");

/** An ISO timestamp with microseconds, on a coarse grid so that records share timestamps. */
export function isoAt(second: number, micros: number): string {
  const iso = new Date(BASE_MS + second * 1000).toISOString().slice(0, 19);
  return `${iso}.${String(micros).padStart(6, "0")}Z`;
}

const when = fc.record({ second: fc.integer({ min: 0, max: 12 }), micros: fc.constantFrom(0, 1, 500, 999999) }).map(({ second, micros }) => isoAt(second, micros));
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: null, freq: 3 });
const pick = <T>(values: readonly T[]) => fc.constantFrom(...values);

const commonFields = fc.record({
  name: pick(POOLS.names),
  created_at: when,
  updated_at: maybe(when),
  user_metadata: fc.record({ env: pick(POOLS.env), customer: pick(POOLS.customer) }, { requiredKeys: [] }),
  tags: fc.subarray(POOLS.tags),
  metrics: fc.record({ toxicity: pick(POOLS.toxicity), duration_ns: pick(POOLS.duration) }, { requiredKeys: [] }),
  status_code: maybe(pick(POOLS.statusCodes)),
  external_id: maybe(pick(POOLS.externalIds)),
  dataset_input: maybe(pick(POOLS.datasetInputs)),
  dataset_metadata: maybe(fc.record({ split: pick(POOLS.splits) })),
  error_message: maybe(pick(POOLS.errors)),
  is_complete: fc.boolean(),
  step_number: maybe(pick(POOLS.steps)),
});

export interface SpanSpec {
  type: string;
  fields: Record<string, unknown>;
  children: SpanSpec[];
}

export interface TraceSpec {
  fields: Record<string, unknown>;
  session: number | null;
  spans: SpanSpec[];
}

export interface SessionSpec {
  name: string;
  created_at: string;
  user_metadata: Record<string, string>;
  external_id: string | null;
}

export interface DatasetSpec {
  sessions: SessionSpec[];
  traces: TraceSpec[];
}

const text = pick(POOLS.texts);
const message = (role: string) => text.map((content) => ({ role, content }));

function spanArb(depth: number): fc.Arbitrary<SpanSpec> {
  const kinds: fc.Arbitrary<[string, Record<string, unknown>]>[] = [
    fc.record({ input: fc.array(message("user"), { minLength: 1, maxLength: 2 }), output: maybe(message("assistant")), model: maybe(pick(POOLS.models)), temperature: maybe(pick(POOLS.temperatures)) }).map((f) => ["llm", f]),
    fc.record({ input: text, output: maybe(text), tool_call_id: maybe(pick(POOLS.toolCallIds)) }).map((f) => ["tool", f]),
    fc.record({ input: text, output: fc.array(text.map((content) => ({ content, metadata: { source: "kb" } })), { maxLength: 2 }) }).map((f) => ["retriever", f]),
    fc.record({ input: text, agent_name: maybe(pick(POOLS.agentNames)), control_id: maybe(pick(POOLS.controlIds)) }).map((f) => ["control", f]),
    fc.record({ input: text, output: maybe(text) }).map((f) => ["workflow", f]),
    fc.record({ input: text, output: maybe(text), agent_type: maybe(pick(POOLS.agentTypes)) }).map((f) => ["agent", f]),
  ];
  return fc.tuple(fc.oneof(...kinds), commonFields).chain(([[type, kindFields], common]) => {
    const nests = depth > 0 && (type === "workflow" || type === "agent");
    return (nests ? fc.array(spanArb(depth - 1), { maxLength: 2 }) : fc.constant([] as SpanSpec[])).map((children) => ({
      type,
      fields: { ...common, ...kindFields },
      children,
    }));
  });
}

export const datasetArbitrary: fc.Arbitrary<DatasetSpec> = fc.record({
  sessions: fc.array(
    fc.record({ name: pick(POOLS.names), created_at: when, user_metadata: fc.record({ env: pick(POOLS.env) }, { requiredKeys: [] }), external_id: maybe(pick(POOLS.externalIds)) }),
    { maxLength: 3 },
  ),
  traces: fc.array(
    fc.record({
      fields: fc.tuple(commonFields, fc.record({ input: text, output: maybe(text) })).map(([a, b]) => ({ ...a, ...b })),
      session: maybe(fc.nat(2)),
      spans: fc.array(spanArb(2), { maxLength: 5 }),
    }),
    { minLength: 2, maxLength: 10 },
  ),
});

export interface SearchFixture {
  projectId: string;
  runId: string;
}

export async function createRun(tenant: Tenant, name = `p-${crypto.randomUUID()}`): Promise<SearchFixture> {
  const project = await call("/v2/projects", { as: tenant, body: { name, type: "gen_ai" } });
  expect(project.status).toBe(200);
  const stream = await call(`/v2/projects/${project.body.id}/log_streams`, { as: tenant, body: { name: "default" } });
  expect(stream.status).toBe(200);
  return { projectId: project.body.id, runId: stream.body.id };
}

function storedText(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  return typeof value === "string" ? value : JSON.stringify(value);
}

function baseRecord(fixture: SearchFixture): Omit<RefRecord, "id" | "family" | "type" | "name" | "created_at"> {
  return {
    updated_at: null, input: null, output: null, status_code: null, external_id: null, dataset_input: null,
    dataset_output: null, dataset_metadata: null, session_id: null, trace_id: null, parent_id: null,
    project_id: fixture.projectId, run_id: fixture.runId, has_children: false, is_complete: true,
    step_number: null, error_message: null, progress_message: null, user_metadata: {}, tags: [],
    metrics: {}, model: null, temperature: null, finish_reason: null, tool_call_id: null,
    agent_type: null, control_id: null, agent_name: null,
  };
}

function recordOf(fixture: SearchFixture, id: string, family: RefRecord["family"], type: string, fields: Record<string, unknown>): RefRecord {
  const f = fields as Record<string, any>;
  return {
    ...baseRecord(fixture),
    id,
    family,
    type,
    name: f.name ?? "",
    created_at: isoMicros(f.created_at),
    updated_at: f.updated_at ? isoMicros(f.updated_at) : null,
    input: storedText(f.input),
    output: storedText(f.output),
    status_code: f.status_code ?? null,
    external_id: f.external_id ?? null,
    dataset_input: f.dataset_input ?? null,
    dataset_metadata: f.dataset_metadata ?? null,
    is_complete: f.is_complete ?? true,
    step_number: f.step_number ?? null,
    error_message: f.error_message ?? null,
    user_metadata: { ...(f.user_metadata ?? {}) },
    tags: [...new Set<string>(f.tags ?? [])],
    metrics: { ...(f.metrics ?? {}) },
    model: f.model ?? null,
    temperature: f.temperature ?? null,
    tool_call_id: f.tool_call_id ?? null,
    agent_type: type === "agent" ? (f.agent_type ?? "default") : null,
    control_id: f.control_id ?? null,
    agent_name: f.agent_name ?? null,
  };
}

/** Ingests the dataset into a fresh run and returns the records the service should now hold. */
export async function ingestDataset(tenant: Tenant, fixture: SearchFixture, spec: DatasetSpec): Promise<RefRecord[]> {
  const records: RefRecord[] = [];
  const sessionIds: string[] = [];
  for (const session of spec.sessions) {
    const id = crypto.randomUUID();
    const res = await call(`/v2/projects/${fixture.projectId}/sessions`, { as: tenant, body: { log_stream_id: fixture.runId, id, ...session } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    sessionIds.push(id);
    records.push({ ...recordOf(fixture, id, "session", "session", session as never), session_id: id });
  }
  const traces = spec.traces.map((trace) => {
    const id = crypto.randomUUID();
    const sessionId = trace.session !== null && sessionIds.length > 0 ? sessionIds[trace.session % sessionIds.length]! : null;
    const spanPayload = (span: SpanSpec, parentId: string): Record<string, unknown> => {
      const spanId = crypto.randomUUID();
      const children = span.children.map((c) => spanPayload(c, spanId));
      records.push({
        ...recordOf(fixture, spanId, "span", span.type, span.fields),
        session_id: sessionId,
        trace_id: id,
        parent_id: parentId,
        has_children: children.length > 0,
      });
      return { ...span.fields, id: spanId, type: span.type, spans: children };
    };
    const spans = trace.spans.map((s) => spanPayload(s, id));
    records.push({ ...recordOf(fixture, id, "trace", "trace", trace.fields), session_id: sessionId, trace_id: id, has_children: spans.length > 0 });
    if (sessionId) records.find((r) => r.id === sessionId)!.has_children = true;
    return { ...trace.fields, id, session_id: sessionId, spans };
  });
  const res = await call(`/v2/projects/${fixture.projectId}/traces`, { as: tenant, body: { log_stream_id: fixture.runId, traces } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return records;
}
