/**
 * What a search returns: records shaped per kind (llm input as messages and output as one message,
 * retriever output as documents, structured text parsed back), projection by `select_columns`,
 * metrics selection, counts, scorer metadata, truncation, and the full-record `search` routes.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { SEARCH_LIMITS } from "../src/search/search-limits";
import { call } from "./support/client";
import { createTenant, type Tenant } from "./support/tenants";
import { createRun, type SearchFixture } from "./search-dataset";

let tenant: Tenant;
let fixture: SearchFixture;
const SESSION = crypto.randomUUID();
const TRACE = crypto.randomUUID();
const OTHER_TRACE = crypto.randomUUID();
const LONG = "abcdefghij".repeat(300);

const COMMON = [
  "id", "type", "name", "input", "output", "redacted_input", "redacted_output", "created_at", "updated_at", "user_metadata", "tags",
  "status_code", "external_id", "dataset_input", "dataset_output", "dataset_metadata", "session_id", "trace_id", "project_id", "run_id",
  "has_children", "is_complete", "error_message", "progress_message", "annotations", "annotation_aggregates", "annotation_agreement",
  "annotation_queue_ids", "file_ids", "file_modalities", "metrics",
];
const SPAN = [...COMMON, "parent_id", "step_number"];

async function search(route: string, body: Record<string, unknown>, mode = "partial_search") {
  const res = await call(`/v2/projects/${fixture.projectId}/${route}/${mode}`, { as: tenant, body: { log_stream_id: fixture.runId, limit: 1000, ...body } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.records as Record<string, any>[];
}

const byName = (records: Record<string, any>[]) => Object.fromEntries(records.map((r) => [r.name, r]));

beforeAll(async () => {
  tenant = await createTenant();
  fixture = await createRun(tenant);
  const base = `/v2/projects/${fixture.projectId}`;
  expect((await call(`${base}/sessions`, { as: tenant, body: { log_stream_id: fixture.runId, id: SESSION, name: "the-session", previous_session_id: crypto.randomUUID() } })).status).toBe(200);
  const traces = [
    {
      id: TRACE, name: "the-trace", session_id: SESSION, input: LONG, output: "answer", tags: ["a"], user_metadata: { env: "prod", team: "x" },
      metrics: { toxicity: 0.25, duration_ns: 900 }, metric_info: { toxicity: { reason: "mild", model: "tox-1" } },
      feedback_rating_info: { thumbs: { rating: 1 } }, dataset_input: LONG, dataset_metadata: { split: "train" },
      spans: [
        {
          type: "workflow", name: "wf", input: { question: "structured" },
          spans: [
            { type: "llm", name: "llm-string", input: "plain prompt", output: "plain answer", model: "gpt-4o", temperature: 0.5, finish_reason: "stop", tools: [{ name: "search" }], events: [{ type: "message" }], metrics: { toxicity: 0.75 } },
            { type: "llm", name: "llm-messages", input: [{ role: "system", content: LONG }, { role: "user", content: "q" }], output: { role: "assistant", content: LONG, tool_calls: [{ id: "c1" }] } },
          ],
        },
        { type: "retriever", name: "ret", input: "find", output: [{ page_content: "doc one", metadata: { source: "kb" } }, "doc two"] },
        { type: "tool", name: "tool", input: "x", output: "y", tool_call_id: "call-9" },
        { type: "agent", name: "agent", input: "x", agent_type: "planner" },
        { type: "control", name: "control", control_id: 3, agent_name: "guard", check_stage: "pre", applies_to: "tool_call", evaluator_name: "ev", selector_path: "$.x" },
      ],
    },
    { id: OTHER_TRACE, name: "other-trace", session_id: SESSION, input: "short" },
  ];
  expect((await call(`${base}/traces`, { as: tenant, body: { log_stream_id: fixture.runId, traces } })).status).toBe(200);
});

describe("search: records shaped per kind", () => {
  it("returns every field of each kind when no columns are selected", async () => {
    const spans = byName(await search("spans", {}));
    expect(Object.keys(spans["llm-string"]!).sort()).toEqual([...SPAN, "model", "temperature", "finish_reason", "tools", "events"].sort());
    expect(Object.keys(spans.tool!).sort()).toEqual([...SPAN, "tool_call_id"].sort());
    expect(Object.keys(spans.agent!).sort()).toEqual([...SPAN, "agent_type"].sort());
    expect(Object.keys(spans.control!).sort()).toEqual([...SPAN, "control_id", "agent_name", "check_stage", "applies_to", "evaluator_name", "selector_path"].sort());
    expect(Object.keys(spans.ret!).sort()).toEqual(SPAN.sort());
    expect(Object.keys(spans.wf!).sort()).toEqual(SPAN.sort());
    const [trace] = await search("traces", { filters: [{ type: "id", column_id: "id", value: TRACE }] });
    expect(Object.keys(trace!).sort()).toEqual(COMMON.sort());
    const [session] = await search("sessions", {});
    expect(Object.keys(session!).sort()).toEqual([...COMMON, "previous_session_id"].sort());
    expect(spans.control).toMatchObject({ control_id: 3, agent_name: "guard", check_stage: "pre", applies_to: "tool_call", evaluator_name: "ev", selector_path: "$.x" });
    expect(spans.agent).toMatchObject({ agent_type: "planner" });
  });

  it("gives llm spans message lists in and one message out, and retrievers documents out", async () => {
    const spans = byName(await search("spans", {}));
    expect(spans["llm-string"]).toMatchObject({
      input: [{ role: "user", content: "plain prompt" }],
      output: { role: "assistant", content: "plain answer" },
      model: "gpt-4o",
      temperature: 0.5,
      finish_reason: "stop",
      tools: [{ name: "search" }],
      events: [{ type: "message" }],
    });
    expect(spans["llm-messages"]!.input).toEqual([{ role: "system", content: LONG }, { role: "user", content: "q" }]);
    expect(spans["llm-messages"]!.output).toEqual({ role: "assistant", content: LONG, tool_calls: [{ id: "c1" }] });
    expect(spans.ret!.output).toEqual([{ content: "doc one", metadata: { source: "kb" } }, { content: "doc two", metadata: {} }]);
    expect(spans.ret!.input).toBe("find");
    expect(spans.wf!.input).toEqual({ question: "structured" });
    expect(spans.tool!.output).toBe("y");
  });

  it("links records: trace ids, parents, sessions, children, completeness, times", async () => {
    const spans = byName(await search("spans", {}));
    expect(spans["llm-string"]).toMatchObject({ trace_id: TRACE, parent_id: spans.wf!.id, session_id: SESSION, has_children: false, is_complete: true, project_id: fixture.projectId, run_id: fixture.runId });
    expect(spans.wf).toMatchObject({ parent_id: TRACE, has_children: true });
    expect(spans.wf!.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
    const [session] = await search("sessions", {});
    expect(session).toMatchObject({ id: SESSION, session_id: SESSION, trace_id: null, has_children: true, tags: [], metrics: {} });
  });
});

describe("search: projection and flags", () => {
  it("returns id, type and exactly the selected columns that apply to each record's kind", async () => {
    const spans = byName(
      await search("spans", { select_columns: { column_ids: ["name", "model", "metrics/toxicity", "user_metadata.env", "tool_call_id"] } }),
    );
    expect(spans["llm-string"]).toEqual({ id: expect.any(String), type: "llm", name: "llm-string", model: "gpt-4o", metrics: { toxicity: 0.75 }, user_metadata: {} });
    expect(spans.tool).toEqual({ id: expect.any(String), type: "tool", name: "tool", tool_call_id: "call-9", metrics: {}, user_metadata: {} });
    const [trace] = await search("traces", { select_columns: { column_ids: ["user_metadata.team", "tags"] }, filters: [{ type: "id", column_id: "id", value: TRACE }] });
    expect(trace).toEqual({ id: TRACE, type: "trace", user_metadata: { team: "x" }, tags: ["a"] });
  });

  it("returns the metrics selected by name, by column id, or all of them", async () => {
    const only = { filters: [{ type: "id", column_id: "id", value: TRACE }] };
    expect((await search("traces", only))[0]!.metrics).toEqual({});
    expect((await search("traces", { ...only, select_columns: { metric_columns_names: ["duration_ns", "absent"] } }))[0]!.metrics).toEqual({ duration_ns: 900 });
    expect((await search("traces", { ...only, select_columns: { include_all_metrics: true } }))[0]!.metrics).toEqual({ toxicity: 0.25, duration_ns: 900 });
    expect((await search("traces", { ...only, select_columns: { includes_metric_columns: true, column_ids: ["name"] } }))[0]).toEqual({ id: TRACE, type: "trace", name: "the-trace", metrics: { toxicity: 0.25, duration_ns: 900 } });
  });

  it("adds feedback, counts and scorer metadata when asked", async () => {
    const traces = byName(
      await search("traces", { select_columns: { column_ids: ["name"], include_all_feedback: true, include_all_metrics: true }, include_counts: true, include_code_metric_metadata: true }),
    );
    expect(traces["the-trace"]).toEqual({
      id: TRACE,
      type: "trace",
      name: "the-trace",
      metrics: { toxicity: 0.25, duration_ns: 900 },
      // What the record was ingested with, beside the caller's own ratings (none here), and the
      // feedback fields of section 8 (test/annotation-feedback.test.ts).
      feedback_rating_info: { thumbs: { rating: 1 } },
      annotations: {},
      annotation_aggregates: {},
      annotation_agreement: {},
      annotation_queue_ids: [],
      num_spans: 7,
      metric_info: {
        toxicity: { status_type: "success", value: 0.25, metadata: { reason: "mild", model: "tox-1" } },
        duration_ns: { status_type: "success", value: 900, metadata: {} },
      },
    });
    expect(traces["other-trace"]!.num_spans).toBe(0);
    const [session] = await search("sessions", { include_counts: true, select_columns: { column_ids: ["name"] } });
    expect(session).toEqual({ id: SESSION, type: "session", name: "the-session", num_traces: 2 });
    const spans = await search("spans", { include_counts: true, select_columns: { column_ids: ["name"] } });
    expect(spans.every((s) => !("num_spans" in s) && !("num_traces" in s))).toBe(true);
  });

  it("cuts long strings, in messages too, when truncate_fields is set", async () => {
    const cut = SEARCH_LIMITS.truncatedFieldLength;
    const traces = byName(await search("traces", { truncate_fields: true }));
    expect(traces["the-trace"]!.input).toBe(LONG.slice(0, cut));
    expect(traces["the-trace"]!.dataset_input).toBe(LONG.slice(0, cut));
    expect(traces["other-trace"]!.input).toBe("short");
    const spans = byName(await search("spans", { truncate_fields: true }));
    expect(spans["llm-messages"]!.input[0].content).toBe(LONG.slice(0, cut));
    expect(spans["llm-messages"]!.output.content).toBe(LONG.slice(0, cut));
    expect((byName(await search("traces", {})))["the-trace"]!.input).toBe(LONG);
  });

  it("returns full records, with every metric and the feedback, from the search routes", async () => {
    const [trace] = await search("traces", { filters: [{ type: "id", column_id: "id", value: TRACE }], select_columns: { column_ids: ["name"] } }, "search");
    expect(Object.keys(trace!).sort()).toEqual([...COMMON, "feedback_rating_info"].sort());
    expect(trace).toMatchObject({ metrics: { toxicity: 0.25, duration_ns: 900 }, user_metadata: { env: "prod", team: "x" }, dataset_metadata: { split: "train" } });
    const spans = await search("spans", { include_counts: true }, "search");
    expect(spans).toHaveLength(7);
    const [session] = await search("sessions", { include_counts: true }, "search");
    expect(session).toMatchObject({ id: SESSION, num_traces: 2 });
  });
});

describe("search: documented in the OpenAPI document", () => {
  it("lists the six routes with their request, answer and filter tree schemas", async () => {
    const doc = await call("/openapi.json");
    expect(doc.status).toBe(200);
    for (const segment of ["traces", "spans", "sessions"]) {
      for (const operation of ["partial_search", "search"]) {
        const path = doc.body.paths[`/v2/projects/{project_id}/${segment}/${operation}`];
        expect(path?.post?.responses?.["200"], `${segment}/${operation}`).toBeDefined();
        expect(path.post.responses["422"]).toBeDefined();
      }
    }
    const schemas = doc.body.components.schemas;
    for (const name of ["LogRecordsPartialSearchRequest", "LogRecordsSearchRequest", "LogRecordsSearchResponse", "FilterExpression", "TextFilter", "NumberFilter", "CollectionFilter", "IdFilter", "DateFilter", "BooleanFilter"]) {
      expect(schemas[name], name).toBeDefined();
    }
    expect(schemas.LogRecordsPartialSearchRequest.properties.filter_tree.$ref).toBe("#/components/schemas/FilterExpression");
    expect(schemas.NumberFilter.properties.operator.enum).toEqual(["eq", "ne", "gt", "gte", "lt", "lte", "between"]);
  });
});

describe("search: selecting record fields that are not filter columns", () => {
  it("selects whole maps and other record fields by name; `metrics` selects every metric", async () => {
    const [trace] = await search("traces", {
      filters: [{ type: "id", column_id: "id", value: TRACE }],
      select_columns: { column_ids: ["name", "user_metadata", "dataset_metadata", "redacted_input", "feedback_rating_info", "metrics"] },
    });
    expect(trace).toEqual({
      id: TRACE,
      type: "trace",
      name: "the-trace",
      user_metadata: { env: "prod", team: "x" },
      dataset_metadata: { split: "train" },
      redacted_input: null,
      feedback_rating_info: { thumbs: { rating: 1 } },
      metrics: { toxicity: 0.25, duration_ns: 900 },
    });
    const spans = byName(await search("spans", { select_columns: { column_ids: ["name", "events", "previous_session_id"] } }));
    // A field of another kind is simply absent, as for catalogue columns.
    expect(spans["llm-string"]).toEqual({ id: expect.any(String), type: "llm", name: "llm-string", events: [{ type: "message" }] });
    expect(spans.tool).toEqual({ id: expect.any(String), type: "tool", name: "tool" });
  });

  it("a whole map is still not a filter or sort column", async () => {
    const res = await call(`/v2/projects/${fixture.projectId}/traces/partial_search`, {
      as: tenant,
      body: { log_stream_id: fixture.runId, filters: [{ type: "text", column_id: "user_metadata", operator: "eq", value: "x" }] },
    });
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc).toEqual(["body", "filters", 0, "column_id"]);
  });
});
