/**
 * Ingestion (contract, sections 3 and 7): nested traces read back from the database with the
 * right links, client ids kept, re-ingest idempotent, foreign ids refused atomically, and
 * idempotent creation of projects and runs (also under concurrent creates).
 */
import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { call } from "./support/client";
import { type Tenant, createTenant } from "./support/tenants";
import { allRecordDbs, databaseFor } from "./support/record-dbs";
import { METRIC_ROWS } from "./support/metric-rows";

interface StoredRecord {
  id: string;
  organization_id: string;
  project_id: string;
  run_id: string;
  record_type: string;
  type: string;
  name: string;
  created_at: number;
  session_id: string | null;
  trace_id: string | null;
  parent_id: string | null;
  has_children: number;
  is_complete: number;
  input: string | null;
  input_is_json: number;
  output: string | null;
  output_is_json: number;
  user_metadata: string;
  tags: string;
  metrics: string;
  model: string | null;
  temperature: number | null;
  agent_type: string | null;
  tool_call_id: string | null;
  control_id: number | null;
  check_stage: string | null;
  applies_to: string | null;
  evaluator_name: string | null;
  selector_path: string | null;
  agent_name: string | null;
  external_id: string | null;
}

async function stored(ids: string[]): Promise<Map<string, StoredRecord>> {
  const { results } = await allRecordDbs.prepare("SELECT * FROM records WHERE id IN (SELECT value FROM json_each(?))")
    .bind(JSON.stringify(ids))
    .all<StoredRecord>();
  return new Map(results.map((r) => [r.id, r]));
}

async function rows<T = Record<string, unknown>>(sql: string, ...params: unknown[]): Promise<T[]> {
  return (await databaseFor(sql).prepare(sql).bind(...params).all<T>()).results;
}

const uuid = () => crypto.randomUUID();

let tenant: Tenant;
let projectId: string;
let logStreamId: string;

beforeAll(async () => {
  tenant = await createTenant();
  projectId = (await call("/v2/projects", { as: tenant, body: { name: "ingest" } })).body.id;
  logStreamId = (await call(`/v2/projects/${projectId}/log_streams`, { as: tenant, body: { name: "default" } })).body.id;
});

function ingest(body: Record<string, unknown>, as: Tenant = tenant, project = projectId) {
  return call(`/v2/projects/${project}/traces`, { as, body });
}

describe("a nested trace", () => {
  const ids = {
    session: uuid(),
    trace: uuid(),
    workflow: uuid(),
    llm: uuid(),
    tool: uuid(),
    agent: uuid(),
    retriever: uuid(),
    control: uuid(),
  };
  let response: Awaited<ReturnType<typeof ingest>>;
  let records: Map<string, StoredRecord>;

  beforeAll(async () => {
    const session = await call(`/v2/projects/${projectId}/sessions`, {
      as: tenant,
      body: { log_stream_id: logStreamId, id: ids.session, name: "chat", external_id: "conversation-7", user_metadata: { user: "u1" } },
    });
    expect(session.status, JSON.stringify(session.body)).toBe(200);
    expect(session.body).toEqual({
      id: ids.session,
      name: "chat",
      project_id: projectId,
      project_name: "ingest",
      previous_session_id: null,
      external_id: "conversation-7",
    });
    response = await ingest({
      log_stream_id: logStreamId,
      session_id: ids.session,
      traces: [
        {
          id: ids.trace,
          name: "answer a question",
          input: "What is D1?",
          output: "SQLite at the edge.",
          created_at: "2026-01-02T03:04:05.123456Z",
          user_metadata: { customer: "acme", attempt: 2, beta: true },
          tags: ["prod", "v2", "prod"],
          metrics: { toxicity: 0.05 },
          spans: [
            {
              id: ids.workflow,
              type: "workflow",
              name: "pipeline",
              input: "What is D1?",
              spans: [
                {
                  id: ids.llm,
                  type: "llm",
                  name: "chat completion",
                  input: [{ role: "user", content: "What is D1?" }],
                  output: { role: "assistant", content: "SQLite at the edge." },
                  model: "gpt-4o-mini",
                  temperature: 0.3,
                  metrics: { num_input_tokens: 12, num_output_tokens: 5, toxicity: 0.01 },
                },
                { id: ids.tool, type: "tool", name: "lookup", input: "D1", output: "docs", tool_call_id: "call_1" },
              ],
            },
            {
              id: ids.agent,
              type: "agent",
              name: "researcher",
              spans: [
                {
                  id: ids.retriever,
                  type: "retriever",
                  name: "vector search",
                  input: "D1",
                  output: [{ page_content: "D1 is a database", metadata: { source: "docs" } }, "plain document"],
                },
                {
                  id: ids.control,
                  type: "control",
                  name: "pii check",
                  control_id: 7,
                  agent_name: "researcher",
                  check_stage: "post",
                  applies_to: "llm_call",
                  evaluator_name: "pii",
                  selector_path: "$.output",
                },
              ],
            },
          ],
        },
      ],
    });
    records = await stored(Object.values(ids));
  });

  it("answers what it wrote", () => {
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    expect(response.body).toEqual({
      project_id: projectId,
      project_name: "ingest",
      records_count: 7,
      traces_count: 1,
      spans_count: 6,
      log_stream_id: logStreamId,
      experiment_id: null,
      metrics_testing_id: null,
      session_id: ids.session,
    });
  });

  it("keeps the client's ids, kinds and scope", () => {
    expect(records.size).toBe(8);
    const kinds = Object.fromEntries([...records.values()].map((r) => [r.id, [r.record_type, r.type]]));
    expect(kinds).toEqual({
      [ids.session]: ["session", "session"],
      [ids.trace]: ["trace", "trace"],
      [ids.workflow]: ["span", "workflow"],
      [ids.llm]: ["span", "llm"],
      [ids.tool]: ["span", "tool"],
      [ids.agent]: ["span", "agent"],
      [ids.retriever]: ["span", "retriever"],
      [ids.control]: ["span", "control"],
    });
    for (const record of records.values()) {
      expect(record).toMatchObject({ organization_id: tenant.organizationId, project_id: projectId, run_id: logStreamId, is_complete: 1 });
    }
  });

  it("links each record to its parent, trace and session", () => {
    const links = Object.fromEntries(
      [...records.values()].map((r) => [r.id, { parent_id: r.parent_id, trace_id: r.trace_id, session_id: r.session_id, has_children: r.has_children }]),
    );
    expect(links).toEqual({
      // A session is its own session; it has children because a trace names it.
      [ids.session]: { parent_id: null, trace_id: null, session_id: ids.session, has_children: 1 },
      // A trace is its own trace and hangs from its session.
      [ids.trace]: { parent_id: ids.session, trace_id: ids.trace, session_id: ids.session, has_children: 1 },
      [ids.workflow]: { parent_id: ids.trace, trace_id: ids.trace, session_id: ids.session, has_children: 1 },
      [ids.llm]: { parent_id: ids.workflow, trace_id: ids.trace, session_id: ids.session, has_children: 0 },
      [ids.tool]: { parent_id: ids.workflow, trace_id: ids.trace, session_id: ids.session, has_children: 0 },
      [ids.agent]: { parent_id: ids.trace, trace_id: ids.trace, session_id: ids.session, has_children: 1 },
      [ids.retriever]: { parent_id: ids.agent, trace_id: ids.trace, session_id: ids.session, has_children: 0 },
      [ids.control]: { parent_id: ids.agent, trace_id: ids.trace, session_id: ids.session, has_children: 0 },
    });
  });

  it("stores timestamps in microseconds without losing digits", () => {
    expect(records.get(ids.trace)!.created_at).toBe(Date.UTC(2026, 0, 2, 3, 4, 5, 123) * 1000 + 456);
    // Spans without a timestamp inherit their container's.
    expect(records.get(ids.llm)!.created_at).toBe(records.get(ids.trace)!.created_at);
  });

  it("stores inputs and outputs as text, structured ones as JSON", () => {
    const trace = records.get(ids.trace)!;
    expect([trace.input, trace.input_is_json, trace.output, trace.output_is_json]).toEqual(["What is D1?", 0, "SQLite at the edge.", 0]);
    const llm = records.get(ids.llm)!;
    expect(llm.input_is_json).toBe(1);
    expect(JSON.parse(llm.input!)).toEqual([{ role: "user", content: "What is D1?" }]);
    expect(JSON.parse(llm.output!)).toEqual({ role: "assistant", content: "SQLite at the edge." });
    // Retriever documents: page_content is read as content, a bare string becomes a document.
    expect(JSON.parse(records.get(ids.retriever)!.output!)).toEqual([
      { content: "D1 is a database", metadata: { source: "docs" } },
      { content: "plain document", metadata: {} },
    ]);
  });

  it("stores the kind-specific fields", () => {
    expect(records.get(ids.llm)).toMatchObject({ model: "gpt-4o-mini", temperature: 0.3 });
    expect(records.get(ids.tool)).toMatchObject({ tool_call_id: "call_1" });
    expect(records.get(ids.agent)).toMatchObject({ agent_type: "default" });
    expect(records.get(ids.control)).toMatchObject({
      control_id: 7,
      agent_name: "researcher",
      check_stage: "post",
      applies_to: "llm_call",
      evaluator_name: "pii",
      selector_path: "$.output",
    });
    expect(records.get(ids.session)).toMatchObject({ external_id: "conversation-7", name: "chat" });
  });

  it("keeps metadata, tags and metrics on the record and in the side tables", async () => {
    const trace = records.get(ids.trace)!;
    expect(JSON.parse(trace.user_metadata)).toEqual({ customer: "acme", attempt: "2", beta: "true" });
    expect(JSON.parse(trace.tags)).toEqual(["prod", "v2", "prod"]);
    // With the llm span's tokens and computed cost rolled up (docs/analytics.md).
    expect(JSON.parse(trace.metrics)).toEqual({ toxicity: 0.05, cost: (12 * 0.15 + 5 * 0.6) / 1e6, num_input_tokens: 12, num_output_tokens: 5 });
    expect(await rows(
        "SELECT m.key, m.value, f.run_id, f.record_type, f.organization_id FROM record_metadata AS m JOIN run_families AS f ON f.key = m.family_key WHERE m.record_id = ? ORDER BY m.key",
        ids.trace,
      )).toEqual([
      { key: "attempt", value: "2", run_id: logStreamId, record_type: "trace", organization_id: tenant.organizationId },
      { key: "beta", value: "true", run_id: logStreamId, record_type: "trace", organization_id: tenant.organizationId },
      { key: "customer", value: "acme", run_id: logStreamId, record_type: "trace", organization_id: tenant.organizationId },
    ]);
    // Duplicate tags are one row.
    expect(await rows("SELECT t.tag, f.record_type FROM record_tags AS t JOIN run_families AS f ON f.key = t.family_key WHERE t.record_id = ? ORDER BY t.tag", ids.trace)).toEqual([
      { tag: "prod", record_type: "trace" },
      { tag: "v2", record_type: "trace" },
    ]);
    // The llm span's cost is computed from gpt-4o-mini's built-in price (docs/analytics.md).
    expect(await rows(`SELECT name, value, record_type FROM ${METRIC_ROWS} WHERE record_id = ? ORDER BY name`, ids.llm)).toEqual([
      { name: "cost", value: (12 * 0.15 + 5 * 0.6) / 1e6, record_type: "span" },
      { name: "num_input_tokens", value: 12, record_type: "span" },
      { name: "num_output_tokens", value: 5, record_type: "span" },
      { name: "toxicity", value: 0.01, record_type: "span" },
    ]);
    expect(await rows("SELECT key, value FROM record_metadata WHERE record_id = ?", ids.session)).toEqual([{ key: "user", value: "u1" }]);
  });
});

describe("ids and defaults", () => {
  it("generates ids the client did not send, and a trace without a session has none", async () => {
    const response = await ingest({ log_stream_id: logStreamId, traces: [{ name: "anonymous", spans: [{ type: "llm" }, { type: "tool" }] }] });
    expect(response.status).toBe(200);
    const traces = await rows<StoredRecord>("SELECT * FROM records WHERE run_id = ? AND name = 'anonymous'", logStreamId);
    expect(traces).toHaveLength(1);
    const trace = traces[0]!;
    expect(trace.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect([trace.session_id, trace.parent_id, trace.trace_id]).toEqual([null, null, trace.id]);
    const spans = await rows<StoredRecord>("SELECT * FROM records WHERE trace_id = ? AND record_type = 'span'", trace.id);
    expect(spans).toHaveLength(2);
    expect(new Set(spans.map((s) => s.id)).size).toBe(2);
    for (const span of spans) expect([span.parent_id, span.session_id]).toEqual([trace.id, null]);
  });

  it("a trace's own session_id wins over the request's, and is_complete defaults from the request", async () => {
    const [own, shared, traceA, traceB] = [uuid(), uuid(), uuid(), uuid()];
    const response = await ingest({
      log_stream_id: logStreamId,
      session_id: shared,
      is_complete: false,
      traces: [
        { id: traceA, session_id: own, spans: [{ type: "llm", is_complete: true }] },
        { id: traceB, is_complete: true },
      ],
    });
    expect(response.status).toBe(200);
    const got = await stored([traceA, traceB]);
    expect([got.get(traceA)!.session_id, got.get(traceA)!.is_complete]).toEqual([own, 0]);
    expect([got.get(traceB)!.session_id, got.get(traceB)!.is_complete]).toEqual([shared, 1]);
  });

  it("ingests into an experiment", async () => {
    const experiment = await call(`/v2/projects/${projectId}/experiments`, { as: tenant, body: { name: "exp-1", task_type: 16 } });
    expect(experiment.status).toBe(200);
    expect(experiment.body).toMatchObject({ name: "exp-1", project_id: projectId, task_type: 16 });
    const id = uuid();
    const response = await ingest({ experiment_id: experiment.body.id, traces: [{ id, name: "scored" }] });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ experiment_id: experiment.body.id, log_stream_id: null, records_count: 1 });
    expect((await stored([id])).get(id)!.run_id).toBe(experiment.body.id);
  });

  it("an unknown run of the project is a 404", async () => {
    const response = await ingest({ log_stream_id: uuid(), traces: [{ name: "lost" }] });
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ detail: expect.any(String) });
    // An experiment id named as a log stream is not found either: the kind is part of the key.
    const experiment = await call(`/v2/projects/${projectId}/experiments`, { as: tenant, body: { name: "exp-kind" } });
    expect((await ingest({ log_stream_id: experiment.body.id, traces: [{ name: "lost" }] })).status).toBe(404);
  });
});

describe("has_children across runs", () => {
  it("a span naming a parent id of another run does not mark that record as a parent", async () => {
    const other = (await call(`/v2/projects/${projectId}/log_streams`, { as: tenant, body: { name: "other-run" } })).body.id;
    const childless = uuid();
    expect((await ingest({ log_stream_id: other, traces: [{ id: childless, name: "alone" }] })).status).toBe(200);
    // Streaming ingestion takes the parent from the client, so it can name any id.
    const response = await call(`/v2/projects/${projectId}/spans`, {
      as: tenant,
      body: { log_stream_id: logStreamId, trace_id: uuid(), parent_id: childless, spans: [{ type: "tool" }] },
    });
    expect(response.status).toBe(200);
    expect((await stored([childless])).get(childless)!.has_children).toBe(0);
  });
});

describe("the record limit of a request", () => {
  const spans = (n: number) => Array.from({ length: n }, () => ({ type: "tool" }));

  // 10,000 records in one batch: more than vitest's 5 s default on a loaded machine.
  it("counts nested spans: 10,000 records pass, 10,001 are a 422 at the trace that crosses the limit", { timeout: 60_000 }, async () => {
    const accepted = await ingest({ log_stream_id: logStreamId, traces: [{ spans: spans(4_999) }, { spans: [{ type: "agent", spans: spans(4_998) }] }] });
    expect(accepted.status, JSON.stringify(accepted.body).slice(0, 300)).toBe(200);
    expect(accepted.body.records_count).toBe(10_000);
    const refused = await ingest({ log_stream_id: logStreamId, traces: [{ name: "small" }, { spans: [{ type: "agent", spans: spans(10_000) }] }] });
    expect(refused.status).toBe(422);
    const msg =
      "Value error, a request may carry at most 10000 records (traces and their spans at any depth); send the rest in another request";
    expect(refused.body.detail).toEqual([
      { loc: ["body", "traces", 1], msg, type: "value_error", input: expect.any(Object), ctx: { error: msg.slice("Value error, ".length) } },
    ]);
    expect(await rows("SELECT count(*) AS n FROM records WHERE run_id = ? AND name = 'small'", logStreamId)).toEqual([{ n: 0 }]);
  });
});

describe("re-ingest", () => {
  it("does not duplicate, and merges: new values win, absent ones never erase", async () => {
    const [traceId, spanId, childId] = [uuid(), uuid(), uuid()];
    const first = {
      log_stream_id: logStreamId,
      traces: [
        {
          id: traceId,
          name: "v1",
          user_metadata: { keep: "1", drop: "x" },
          tags: ["old", "both"],
          metrics: { toxicity: 0.9, latency: 3 },
          spans: [{ id: spanId, type: "agent", name: "a", spans: [{ id: childId, type: "llm", tags: ["t"] }] }],
        },
      ],
    };
    expect((await ingest(first)).status).toBe(200);
    const second = {
      log_stream_id: logStreamId,
      traces: [
        {
          id: traceId,
          name: "v2",
          user_metadata: { keep: "2", added: "y" },
          tags: ["both", "new"],
          metrics: { toxicity: 0.1 },
          spans: [{ id: spanId, type: "agent", name: "a2", spans: [{ id: childId, type: "llm" }] }],
        },
      ],
    };
    for (let attempt = 0; attempt < 2; attempt++) {
      const response = await ingest(second);
      expect(response.status).toBe(200);
      expect(response.body.records_count).toBe(3);
    }
    const all = await rows<StoredRecord>("SELECT * FROM records WHERE trace_id = ?", traceId);
    expect(Object.fromEntries(all.map((r) => [r.id, r.name]))).toEqual({ [traceId]: "v2", [spanId]: "a2", [childId]: "" });
    // The agent still has its child after being rewritten.
    expect(all.find((r) => r.id === spanId)!.has_children).toBe(1);
    // Metadata and metrics merge key by key (a key the second write does not name stays);
    // a non-empty tag list replaces the tags; an empty one (the child's) erases nothing.
    expect(JSON.parse(all.find((r) => r.id === traceId)!.user_metadata)).toEqual({ keep: "2", drop: "x", added: "y" });
    expect(await rows("SELECT key, value FROM record_metadata WHERE record_id = ? ORDER BY key", traceId)).toEqual([
      { key: "added", value: "y" },
      { key: "drop", value: "x" },
      { key: "keep", value: "2" },
    ]);
    expect(await rows("SELECT tag FROM record_tags WHERE record_id = ? ORDER BY tag", traceId)).toEqual([{ tag: "both" }, { tag: "new" }]);
    expect(await rows("SELECT tag FROM record_tags WHERE record_id = ?", childId)).toEqual([{ tag: "t" }]);
    expect(await rows(`SELECT name, value FROM ${METRIC_ROWS} WHERE record_id = ? ORDER BY name`, traceId)).toEqual([
      { name: "latency", value: 3 },
      { name: "toxicity", value: 0.1 },
    ]);
  });

  it("an older write never overrides a newer one, and is_complete never goes back", async () => {
    const traceId = uuid();
    const at = (minute: number) => `2026-01-01T00:0${minute}:00Z`;
    const write = (fields: Record<string, unknown>) => ingest({ log_stream_id: logStreamId, traces: [{ id: traceId, ...fields }] });
    expect((await write({ name: "newest", output: "final", updated_at: at(5), is_complete: true, status_code: 200 })).status).toBe(200);
    // A stale copy of the record (an earlier state, re-delivered): it fills nothing that is set.
    expect((await write({ name: "stale", output: "draft", updated_at: at(1), is_complete: false, status_code: 500, input: "q" })).status).toBe(200);
    const [stale] = await rows<StoredRecord>("SELECT * FROM records WHERE project_id = ? AND id = ?", projectId, traceId);
    expect(stale).toMatchObject({ name: "newest", output: "final", is_complete: 1, status_code: 200, input: "q" });
    expect((stale as unknown as { updated_at: number }).updated_at).toBe(Date.parse(at(5)) * 1000);
    // A later write wins where it says something.
    expect((await write({ name: "later", updated_at: at(7) })).status).toBe(200);
    const [later] = await rows<StoredRecord>("SELECT * FROM records WHERE project_id = ? AND id = ?", projectId, traceId);
    expect(later).toMatchObject({ name: "later", output: "final", is_complete: 1 });
  });

  it("two records with the same id in one request are a 422 naming both places, and nothing is written", async () => {
    const [traceId, spanId] = [uuid(), uuid()];
    const response = await ingest({
      log_stream_id: logStreamId,
      traces: [
        { id: traceId, name: "t", spans: [{ id: spanId, type: "llm" }, { type: "agent", spans: [{ id: spanId, type: "tool" }] }] },
        { id: traceId, name: "again" },
      ],
    });
    expect(response.status, JSON.stringify(response.body)).toBe(422);
    const faults = response.body.detail as { loc: unknown[]; type: string; msg: string }[];
    expect(faults.map((f) => f.loc)).toEqual([
      ["body", "traces", 0, "spans", 1, "spans", 0, "id"],
      ["body", "traces", 1, "id"],
    ]);
    expect(faults.every((f) => f.type === "value_error" && /traces\.0/.test(f.msg))).toBe(true);
    expect(await stored([traceId, spanId])).toEqual(new Map());
  });

  it("re-posting a session does not duplicate it", async () => {
    const id = uuid();
    for (const name of ["first", "second"]) {
      const response = await call(`/v2/projects/${projectId}/sessions`, { as: tenant, body: { log_stream_id: logStreamId, id, name } });
      expect(response.status).toBe(200);
    }
    expect(await rows("SELECT name FROM records WHERE id = ?", id)).toEqual([{ name: "second" }]);
  });
});

describe("an id that belongs to another run", () => {
  let intruder: Tenant;
  let intruderProject: string;
  let intruderStream: string;
  const victimTrace = uuid();

  beforeAll(async () => {
    const written = await ingest({
      log_stream_id: logStreamId,
      traces: [{ id: victimTrace, name: "victim", user_metadata: { owner: "tenant" }, tags: ["mine"], metrics: { toxicity: 0.2 } }],
    });
    expect(written.status).toBe(200);
    intruder = await createTenant();
    intruderProject = (await call("/v2/projects", { as: intruder, body: { name: "ingest" } })).body.id;
    intruderStream = (await call(`/v2/projects/${intruderProject}/log_streams`, { as: intruder, body: { name: "default" } })).body.id;
  });

  async function victimUnchanged(): Promise<void> {
    const [victim] = await rows<StoredRecord>("SELECT * FROM records WHERE project_id = ? AND id = ?", projectId, victimTrace);
    expect(victim).toMatchObject({ organization_id: tenant.organizationId, project_id: projectId, run_id: logStreamId, name: "victim" });
    expect(JSON.parse(victim!.user_metadata)).toEqual({ owner: "tenant" });
    const sideRows = (table: string, columns: string) =>
      rows(`SELECT ${columns} FROM ${table} WHERE record_rid = ?`, (victim as unknown as { rid: number }).rid);
    expect(await sideRows("record_metadata", "key, value, (SELECT organization_id FROM run_families WHERE run_families.key = family_key) AS organization_id")).toEqual([
      { key: "owner", value: "tenant", organization_id: tenant.organizationId },
    ]);
    expect(await sideRows("record_tags", "tag")).toEqual([{ tag: "mine" }]);
    expect(await sideRows(METRIC_ROWS, "name, value")).toEqual([{ name: "toxicity", value: 0.2 }]);
  }

  it("used by another organization is that organization's own record: no 409 tells it the id exists", async () => {
    const innocent = uuid();
    const response = await ingest(
      {
        log_stream_id: intruderStream,
        traces: [
          { id: innocent, name: "fine" },
          { id: victimTrace, name: "stolen", user_metadata: { owner: "intruder" }, tags: [], spans: [{ type: "llm" }] },
        ],
      },
      intruder,
      intruderProject,
    );
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    await victimUnchanged();
    const [theirs] = await rows<StoredRecord>("SELECT * FROM records WHERE project_id = ? AND id = ?", intruderProject, victimTrace);
    expect(theirs).toMatchObject({ organization_id: intruder.organizationId, run_id: intruderStream, name: "stolen" });
    // And the victim can still write its id afterwards: no tenant can pre-empt another's ids.
    const again = await ingest({ log_stream_id: logStreamId, traces: [{ id: victimTrace, name: "victim" }] });
    expect(again.status).toBe(200);
    await victimUnchanged();
  });

  it("in another run of the same project is a 409 that changes nothing, not even the rest of the request", async () => {
    const otherStream = (await call(`/v2/projects/${projectId}/log_streams`, { as: tenant, body: { name: "other" } })).body.id;
    const innocent = uuid();
    const response = await ingest({ log_stream_id: otherStream, traces: [{ id: innocent, name: "fine" }, { id: victimTrace, name: "moved" }] });
    expect(response.status).toBe(409);
    expect(response.body).toEqual({ detail: expect.any(String) });
    await victimUnchanged();
    // The batch is atomic: the other trace of the refused request was not written either.
    expect(await stored([innocent])).toEqual(new Map());
  });

  it("as a span of the same project is a 409 (an id is one record: a trace cannot become a span)", async () => {
    const response = await ingest({ log_stream_id: logStreamId, traces: [{ name: "wrapper", spans: [{ id: victimTrace, type: "tool" }] }] });
    expect(response.status).toBe(409);
    await victimUnchanged();
  });

  it("as a session of the same project is a 409", async () => {
    const response = await call(`/v2/projects/${projectId}/sessions`, { as: tenant, body: { log_stream_id: logStreamId, id: victimTrace } });
    expect(response.status).toBe(409);
    await victimUnchanged();
  });

  it("in another project of the same organization is a record of that project", async () => {
    const otherProject = (await call("/v2/projects", { as: tenant, body: { name: `other-${uuid()}` } })).body.id;
    const otherStream = (await call(`/v2/projects/${otherProject}/log_streams`, { as: tenant, body: { name: "default" } })).body.id;
    const response = await ingest({ log_stream_id: otherStream, traces: [{ id: victimTrace, name: "elsewhere" }] }, tenant, otherProject);
    expect(response.status).toBe(200);
    await victimUnchanged();
  });
});

describe("idempotent creation", () => {
  it("a project name maps to one project, also under concurrent creates", async () => {
    const name = `concurrent-${uuid()}`;
    const answers = await Promise.all(Array.from({ length: 8 }, () => call("/v2/projects", { as: tenant, body: { name, type: "gen_ai" } })));
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
    expect(new Set(answers.map((a) => a.body.id)).size).toBe(1);
    expect(await rows("SELECT count(*) AS n FROM projects WHERE organization_id = ? AND name = ?", tenant.organizationId, name)).toEqual([{ n: 1 }]);
    const again = await call("/v2/projects", { as: tenant, body: { name } });
    expect(again.body.id).toBe(answers[0]!.body.id);
    const listed = await call(`/v2/projects?project_name=${encodeURIComponent(name)}`, { as: tenant });
    expect(listed.body.map((p: { id: string }) => p.id)).toEqual([answers[0]!.body.id]);
  });

  it("the same project name in two organizations is two projects", async () => {
    const other = await createTenant();
    const mine = await call("/v2/projects", { as: tenant, body: { name: "shared-name" } });
    const theirs = await call("/v2/projects", { as: other, body: { name: "shared-name" } });
    expect(mine.body.id).not.toBe(theirs.body.id);
  });

  for (const [path, body] of [
    ["log_streams", { name: "" }],
    ["experiments", { name: "", task_type: 16 }],
  ] as const) {
    it(`a ${path} name maps to one run, also under concurrent creates`, async () => {
      const name = `run-${uuid()}`;
      const answers = await Promise.all(
        Array.from({ length: 8 }, () => call(`/v2/projects/${projectId}/${path}`, { as: tenant, body: { ...body, name } })),
      );
      expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
      expect(new Set(answers.map((a) => a.body.id)).size).toBe(1);
      expect(answers[0]!.body).toMatchObject({ name, project_id: projectId });
      expect(await rows("SELECT count(*) AS n FROM runs WHERE project_id = ? AND name = ?", projectId, name)).toEqual([{ n: 1 }]);
      const listed = await call(`/v2/projects/${projectId}/${path}?name=${encodeURIComponent(name)}`, { as: tenant });
      expect(listed.status).toBe(200);
      expect(listed.body.map((r: { id: string }) => r.id)).toEqual([answers[0]!.body.id]);
    });
  }

  it("a log stream and an experiment may share a name", async () => {
    const logStream = await call(`/v2/projects/${projectId}/log_streams`, { as: tenant, body: { name: "same" } });
    const experiment = await call(`/v2/projects/${projectId}/experiments`, { as: tenant, body: { name: "same" } });
    expect(logStream.body.id).not.toBe(experiment.body.id);
  });
});
