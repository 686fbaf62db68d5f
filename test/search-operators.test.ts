/**
 * Every operator of every leaf type, on columns it applies to, through the real routes, against
 * a small hand-built run whose expected answers are written out by hand. Records are named so
 * that a failure reads as "expected [t-one, t-two]".
 */
import { beforeAll, describe, expect, it } from "vitest";
import { call } from "./support/client";
import { createTenant, type Tenant } from "./support/tenants";
import { createRun, type SearchFixture } from "./search-dataset";

const S1 = crypto.randomUUID();
const S2 = crypto.randomUUID();
const T1 = crypto.randomUUID();
const T2 = crypto.randomUUID();
const T3 = crypto.randomUUID();
const A1 = crypto.randomUUID();
const at = (time: string) => `2026-02-01T${time}Z`;

let tenant: Tenant;
let fixture: SearchFixture;

async function names(route: string, filter: unknown): Promise<string[]> {
  const res = await call(`/v2/projects/${fixture.projectId}/${route}/partial_search`, {
    as: tenant,
    body: { log_stream_id: fixture.runId, filters: [filter], limit: 1000 },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.records.map((r: { name: string }) => r.name).sort();
}

beforeAll(async () => {
  tenant = await createTenant();
  fixture = await createRun(tenant);
  const base = `/v2/projects/${fixture.projectId}`;
  for (const session of [
    { id: S1, name: "sess-one", created_at: at("09:00:00"), external_id: "ext-s1", user_metadata: { env: "prod" } },
    { id: S2, name: "sess-two", created_at: at("09:30:00") },
  ]) {
    expect((await call(`${base}/sessions`, { as: tenant, body: { log_stream_id: fixture.runId, ...session } })).status).toBe(200);
  }
  const traces = [
    {
      id: T1, name: "t-one", session_id: S1, created_at: at("10:00:01.000001"), updated_at: at("10:05:00"), input: "Find the Needle", output: "done",
      tags: ["red", "blue"], user_metadata: { env: "prod", customer: "c1" }, metrics: { toxicity: 0.1, duration_ns: 100 }, status_code: 200,
      dataset_input: "q1", dataset_metadata: { split: "train" }, is_complete: true, external_id: "ext-1",
      spans: [
        { type: "llm", name: "llm-one", created_at: at("10:00:01.5"), model: "gpt-4o", temperature: 0.7, input: [{ role: "user", content: "hello" }], output: { role: "assistant", content: "hi" }, metrics: { toxicity: 0.9 }, step_number: 1, status_code: 200 },
        { type: "tool", name: "tool-one", created_at: at("10:00:01.6"), tool_call_id: "call-1", input: "q", output: "r", step_number: 2, status_code: 500, error_message: "boom" },
      ],
    },
    {
      id: T2, name: "t-two", created_at: at("10:00:02"), input: "haystack", tags: ["Red"], user_metadata: { env: "Prod" }, metrics: { toxicity: 0.5 }, status_code: 500, is_complete: false,
      spans: [
        {
          id: A1, type: "agent", name: "agent-one", created_at: at("10:00:02.1"), agent_type: "router",
          spans: [
            { type: "retriever", name: "ret-one", created_at: at("10:00:02.2"), input: "query", output: [{ content: "doc a", metadata: {} }] },
            { type: "control", name: "ctl-one", created_at: at("10:00:02.3"), control_id: 7, agent_name: "guard" },
          ],
        },
      ],
    },
    { id: T3, name: "t-three", session_id: S2, created_at: at("10:00:03"), input: "nothing" },
  ];
  expect((await call(`${base}/traces`, { as: tenant, body: { log_stream_id: fixture.runId, traces } })).status).toBe(200);
});

type Case = [string, unknown, string[]];
const ALL_TRACES = ["t-one", "t-three", "t-two"];
const text = (column: string, operator: string, value: unknown, caseSensitive = true) => ({ type: "text", column_id: column, operator, value, case_sensitive: caseSensitive });
const num = (column: string, operator: string, value: unknown) => ({ type: "number", column_id: column, operator, value });
const date = (column: string, operator: string, value: string) => ({ type: "date", column_id: column, operator, value });
const tags = (operator: string, value: unknown, caseSensitive = true) => ({ type: "collection", column_id: "tags", operator, value, case_sensitive: caseSensitive });
const id = (column: string, operator: string | undefined, value: unknown) => ({ type: "id", column_id: column, ...(operator ? { operator } : {}), value });

const traceCases = (): Case[] => [
  ["id eq", id("id", "eq", T1), ["t-one"]],
  ["id eq (default operator, upper case)", id("id", undefined, T1.toUpperCase()), ["t-one"]],
  ["id ne", id("id", "ne", T1), ["t-three", "t-two"]],
  ["id one_of", id("id", "one_of", [T1, T3]), ["t-one", "t-three"]],
  ["id not_in", id("id", "not_in", [T1]), ["t-three", "t-two"]],
  ["id contains", id("id", "contains", T2.slice(0, 8).toUpperCase()), ["t-two"]],
  ["session_id eq", id("session_id", "eq", S1), ["t-one"]],
  ["session_id ne: a trace without a session is not 'not S1'", id("session_id", "ne", S1), ["t-three"]],
  ["session_id one_of", id("session_id", "one_of", [S1, S2]), ["t-one", "t-three"]],
  ["session_id not_in", id("session_id", "not_in", [S1]), ["t-three"]],
  ["project_id eq", id("project_id", "eq", fixture.projectId), ALL_TRACES],
  ["run_id ne", id("run_id", "ne", fixture.runId), []],
  ["created_at eq (microseconds)", date("created_at", "eq", at("10:00:01.000001")), ["t-one"]],
  ["created_at ne", date("created_at", "ne", at("10:00:02")), ["t-one", "t-three"]],
  ["created_at gt (microseconds)", date("created_at", "gt", at("10:00:01.000001")), ["t-three", "t-two"]],
  ["created_at gt (one microsecond earlier)", date("created_at", "gt", at("10:00:01.000000")), ALL_TRACES],
  ["created_at gte", date("created_at", "gte", at("10:00:02")), ["t-three", "t-two"]],
  ["created_at lt", date("created_at", "lt", at("10:00:02")), ["t-one"]],
  ["created_at lte (offset zone)", date("created_at", "lte", "2026-02-01T11:00:02+01:00"), ["t-one", "t-two"]],
  ["updated_at gt", date("updated_at", "gt", at("10:00:00")), ["t-one"]],
  ["not updated_at gt: missing values make the leaf false", { not: date("updated_at", "gt", at("10:00:00")) }, ["t-three", "t-two"]],
  ["status_code eq", num("status_code", "eq", 200), ["t-one"]],
  ["status_code ne: no value is not 'not 200'", num("status_code", "ne", 200), ["t-two"]],
  ["status_code gt", num("status_code", "gt", 200), ["t-two"]],
  ["status_code gte", num("status_code", "gte", 200), ["t-one", "t-two"]],
  ["status_code lt", num("status_code", "lt", 500), ["t-one"]],
  ["status_code lte", num("status_code", "lte", 500), ["t-one", "t-two"]],
  ["status_code between", num("status_code", "between", [100, 300]), ["t-one"]],
  ["status_code between (inclusive bounds)", num("status_code", "between", [200, 500]), ["t-one", "t-two"]],
  ["metric eq", num("metrics/toxicity", "eq", 0.5), ["t-two"]],
  ["metric ne", num("metrics/toxicity", "ne", 0.5), ["t-one"]],
  ["metric gt", num("metrics/toxicity", "gt", 0.1), ["t-two"]],
  ["metric gte", num("metrics/toxicity", "gte", 0.1), ["t-one", "t-two"]],
  ["metric lt", num("metrics/toxicity", "lt", 0.5), ["t-one"]],
  ["metric lte", num("metrics/toxicity", "lte", 0.5), ["t-one", "t-two"]],
  ["metric between", num("metrics/toxicity", "between", [0.2, 0.6]), ["t-two"]],
  ["metric as a numeric string", num("metrics/duration_ns", "eq", "100"), ["t-one"]],
  ["is_complete eq", { type: "boolean", column_id: "is_complete", operator: "eq", value: false }, ["t-two"]],
  ["is_complete ne", { type: "boolean", column_id: "is_complete", operator: "ne", value: false }, ["t-one", "t-three"]],
  ["is_complete (default operator)", { type: "boolean", column_id: "is_complete", value: true }, ["t-one", "t-three"]],
  ["has_children eq true", { type: "boolean", column_id: "has_children", value: true }, ["t-one", "t-two"]],
  ["has_children eq false", { type: "boolean", column_id: "has_children", value: false }, ["t-three"]],
  ["tags eq", tags("eq", ["blue", "red"]), ["t-one"]],
  ["tags eq (case-insensitive)", tags("eq", ["RED", "Blue"], false), ["t-one"]],
  ["tags eq one of two tags", tags("eq", ["red"]), []],
  ["tags eq (string value, case-insensitive)", tags("eq", "red", false), ["t-two"]],
  ["tags eq []", tags("eq", []), ["t-three"]],
  ["tags contains", tags("contains", "red"), ["t-one"]],
  ["tags contains (case-insensitive)", tags("contains", "RED", false), ["t-one", "t-two"]],
  ["tags one_of", tags("one_of", ["blue", "Red"]), ["t-one", "t-two"]],
  ["tags not_in", tags("not_in", ["red"]), ["t-three", "t-two"]],
  ["tags not_in (case-insensitive)", tags("not_in", ["red"], false), ["t-three"]],
  ["name eq", text("name", "eq", "t-one"), ["t-one"]],
  ["name eq (case-insensitive)", text("name", "eq", "T-ONE", false), ["t-one"]],
  ["name ne", text("name", "ne", "t-one"), ["t-three", "t-two"]],
  ["name contains", text("name", "contains", "t-t"), ["t-three", "t-two"]],
  ["name contains (case-sensitive miss)", text("name", "contains", "T-T"), []],
  ["name one_of", text("name", "one_of", ["t-one", "t-three", "nope"]), ["t-one", "t-three"]],
  ["name not_in", text("name", "not_in", ["t-one"]), ["t-three", "t-two"]],
  ["name not_in (case-insensitive)", text("name", "not_in", ["T-ONE", "T-TWO"], false), ["t-three"]],
  ["input contains (case-sensitive)", text("input", "contains", "needle"), []],
  ["input contains (case-insensitive)", text("input", "contains", "needle", false), ["t-one"]],
  ["input contains a LIKE wildcard literally", text("input", "contains", "%"), []],
  ["output eq", text("output", "eq", "done"), ["t-one"]],
  ["output ne: no output is not 'not done'", text("output", "ne", "done"), []],
  ["user_metadata eq", text("user_metadata.env", "eq", "prod"), ["t-one"]],
  ["user_metadata eq (case-insensitive)", text("user_metadata.env", "eq", "PROD", false), ["t-one", "t-two"]],
  ["user_metadata ne: a missing key is not 'not prod'", text("user_metadata.env", "ne", "prod"), ["t-two"]],
  ["user_metadata contains", text("user_metadata.env", "contains", "ro"), ["t-one", "t-two"]],
  ["user_metadata one_of", text("user_metadata.env", "one_of", ["prod", "x"]), ["t-one"]],
  ["user_metadata not_in", text("user_metadata.env", "not_in", ["prod"]), ["t-two"]],
  ["user_metadata not_in (case-insensitive)", text("user_metadata.env", "not_in", ["prod"], false), []],
  ["not user_metadata eq: a missing key makes the leaf false", { not: text("user_metadata.customer", "eq", "c1") }, ["t-three", "t-two"]],
  ["dataset_metadata eq", text("dataset_metadata.split", "eq", "train"), ["t-one"]],
  ["dataset_metadata ne", text("dataset_metadata.split", "ne", "train"), []],
  ["dataset_metadata contains", text("dataset_metadata.split", "contains", "rai"), ["t-one"]],
  ["dataset_metadata one_of", text("dataset_metadata.split", "one_of", ["train"]), ["t-one"]],
  ["dataset_metadata not_in", text("dataset_metadata.split", "not_in", ["test"]), ["t-one"]],
  ["dataset_input eq", text("dataset_input", "eq", "q1"), ["t-one"]],
  ["external_id eq", text("external_id", "eq", "ext-1"), ["t-one"]],
  ["error_message contains '' (no value anywhere)", text("error_message", "contains", ""), []],
  ["fully_annotated", { type: "fully_annotated", user_ids: [] }, []],
  ["not fully_annotated", { not: { type: "fully_annotated" } }, ALL_TRACES],
  ["leaf without type (SDK filter_tree style)", { filter: { name: "name", operator: "eq", value: "t-two" } }, ["t-two"]],
  ["and", { and: [text("name", "contains", "t-"), num("status_code", "eq", 500)] }, ["t-two"]],
  ["or", { or: [text("name", "eq", "t-one"), num("status_code", "eq", 500)] }, ["t-one", "t-two"]],
  ["not or", { not: { or: [text("name", "eq", "t-one"), num("status_code", "eq", 500)] } }, ["t-three"]],
  ["empty and", { and: [] }, ALL_TRACES],
  ["empty or", { or: [] }, []],
];

const spanCases = (): Case[] => [
  ["type eq", text("type", "eq", "llm"), ["llm-one"]],
  ["type ne", text("type", "ne", "llm"), ["agent-one", "ctl-one", "ret-one", "tool-one"]],
  ["type one_of", text("type", "one_of", ["agent", "retriever"]), ["agent-one", "ret-one"]],
  ["type not_in", text("type", "not_in", ["llm", "tool"]), ["agent-one", "ctl-one", "ret-one"]],
  ["type contains", text("type", "contains", "o"), ["ctl-one", "tool-one"]],
  ["model eq", text("model", "eq", "gpt-4o"), ["llm-one"]],
  ["model ne: spans without a model are not 'not gpt-4o'", text("model", "ne", "gpt-4o"), []],
  ["model contains (case-insensitive)", text("model", "contains", "GPT", false), ["llm-one"]],
  ["temperature gt", num("temperature", "gt", 0.5), ["llm-one"]],
  ["trace_id eq", id("trace_id", "eq", T2), ["agent-one", "ctl-one", "ret-one"]],
  ["parent_id eq (a span)", id("parent_id", "eq", A1), ["ctl-one", "ret-one"]],
  ["parent_id eq (the trace)", id("parent_id", "eq", T1), ["llm-one", "tool-one"]],
  ["session_id eq (inherited from the trace)", id("session_id", "eq", S1), ["llm-one", "tool-one"]],
  ["step_number between", num("step_number", "between", [1, 2]), ["llm-one", "tool-one"]],
  ["step_number gt", num("step_number", "gt", 1), ["tool-one"]],
  ["tool_call_id eq", text("tool_call_id", "eq", "call-1"), ["tool-one"]],
  ["agent_type eq", text("agent_type", "eq", "router"), ["agent-one"]],
  ["control_id eq", num("control_id", "eq", 7), ["ctl-one"]],
  ["agent_name eq", text("agent_name", "eq", "guard"), ["ctl-one"]],
  ["error_message eq", text("error_message", "eq", "boom"), ["tool-one"]],
  ["error_message ne", text("error_message", "ne", "boom"), []],
  ["metric gt", num("metrics/toxicity", "gt", 0.5), ["llm-one"]],
  ["input contains (stored JSON of messages)", text("input", "contains", "hello"), ["llm-one"]],
  ["output contains (stored JSON of documents)", text("output", "contains", "doc a"), ["ret-one"]],
  ["has_children", { type: "boolean", column_id: "has_children", value: true }, ["agent-one"]],
];

const sessionCases = (): Case[] => [
  ["name eq", text("name", "eq", "sess-one"), ["sess-one"]],
  ["id eq", id("id", "eq", S2), ["sess-two"]],
  ["external_id eq", text("external_id", "eq", "ext-s1"), ["sess-one"]],
  ["external_id ne", text("external_id", "ne", "ext-s1"), []],
  ["created_at lt", date("created_at", "lt", at("09:15:00")), ["sess-one"]],
  ["user_metadata eq", text("user_metadata.env", "eq", "prod"), ["sess-one"]],
  ["not user_metadata eq", { not: text("user_metadata.env", "eq", "prod") }, ["sess-two"]],
];

describe("search operators, traces", () => {
  it("answers every case", async () => {
    for (const [what, filter, expected] of traceCases()) expect(await names("traces", filter), what).toEqual(expected);
  });
});

describe("search operators, spans", () => {
  it("answers every case", async () => {
    for (const [what, filter, expected] of spanCases()) expect(await names("spans", filter), what).toEqual(expected);
  });
});

describe("search operators, sessions", () => {
  it("answers every case", async () => {
    for (const [what, filter, expected] of sessionCases()) expect(await names("sessions", filter), what).toEqual(expected);
  });
});
