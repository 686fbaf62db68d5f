/**
 * Every validation failure is FastAPI's 422 (contract, section 1): `{"detail": [{loc, msg, type,
 * input, ctx}]}` with Pydantic's codes, compared here item by item. And nothing a client sends
 * produces a 5xx: a fast-check fuzz throws random JSON at every POST route of the OpenAPI document.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { SELF } from "cloudflare:test";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { queryBoolean } from "../src/http/common-schemas";
import { createRouter } from "../src/http/create-router";
import { type CallResult, call } from "./support/client";
import { type Tenant, createTenant } from "./support/tenants";

let tenant: Tenant;
let projectId: string;
let logStreamId: string;
let experimentId: string;

beforeAll(async () => {
  tenant = await createTenant();
  projectId = (await call("/v2/projects", { as: tenant, body: { name: "validation" } })).body.id;
  logStreamId = (await call(`/v2/projects/${projectId}/log_streams`, { as: tenant, body: { name: "ls" } })).body.id;
  experimentId = (await call(`/v2/projects/${projectId}/experiments`, { as: tenant, body: { name: "exp" } })).body.id;
});

function expect422(response: CallResult, detail: unknown[]): void {
  expect(response.status, JSON.stringify(response.body)).toBe(422);
  expect(response.headers.get("content-type")).toMatch(/^application\/json/);
  expect(response.headers.get("x-request-id")).toBeTruthy();
  expect(response.body).toEqual({ detail });
}

const tracesPath = () => `/v2/projects/${projectId}/traces`;

describe("422 shapes", () => {
  it("malformed JSON is json_invalid at the offending position", async () => {
    const response = await call("/v2/projects", { as: tenant, rawBody: '{"name": "x",}', headers: { "content-type": "application/json" } });
    expect422(response, [{ loc: ["body", 13], msg: "JSON decode error", type: "json_invalid", input: {}, ctx: { error: expect.any(String) } }]);
  });

  it("truncated JSON is json_invalid at its end", async () => {
    const response = await call("/v2/projects", { as: tenant, rawBody: '{"name":', headers: { "content-type": "application/json" } });
    expect422(response, [{ loc: ["body", 8], msg: "JSON decode error", type: "json_invalid", input: {}, ctx: { error: expect.any(String) } }]);
  });

  it("a body sent without a content type is read as JSON, as FastAPI does", async () => {
    // A byte body, because fetch labels a string body text/plain.
    const send = (text: string) =>
      SELF.fetch("http://trace-store.test/v2/projects", {
        method: "POST",
        headers: { "Service-API-Key": tenant.apiKey },
        body: new TextEncoder().encode(text),
      });
    const malformed = await send("{not json");
    expect(malformed.status).toBe(422);
    expect(((await malformed.json()) as { detail: unknown[] }).detail).toEqual([
      { loc: ["body", 1], msg: "JSON decode error", type: "json_invalid", input: {}, ctx: { error: expect.any(String) } },
    ]);
    const valid = await send(JSON.stringify({ name: "validation" }));
    expect(valid.status).toBe(200);
    expect(((await valid.json()) as { id: string }).id).toBe(projectId);
  });

  it("a missing field is `missing`, echoing the object it is missing from", async () => {
    expect422(await call("/v2/projects", { as: tenant, body: { type: "gen_ai" } }), [
      { loc: ["body", "name"], msg: "Field required", type: "missing", input: { type: "gen_ai" } },
    ]);
  });

  it("an empty body reports the missing fields by name", async () => {
    expect422(await call("/v2/projects", { as: tenant, rawBody: "", headers: { "content-type": "application/json" } }), [
      { loc: ["body", "name"], msg: "Field required", type: "missing", input: {} },
    ]);
  });

  it("a body that is not an object is model_attributes_type", async () => {
    expect422(await call("/v2/projects", { as: tenant, body: ["name"] }), [
      { loc: ["body"], msg: "Input should be a valid dictionary or object to extract fields from", type: "model_attributes_type", input: ["name"] },
    ]);
    expect422(await call("/v2/projects", { as: tenant, rawBody: "null", headers: { "content-type": "application/json" } }), [
      { loc: ["body"], msg: "Input should be a valid dictionary or object to extract fields from", type: "model_attributes_type", input: null },
    ]);
  });

  it("a wrong content type is model_attributes_type with the raw body as input", async () => {
    const response = await call("/v2/projects", { as: tenant, rawBody: '{"name":"x"}', headers: { "content-type": "text/plain" } });
    expect422(response, [
      { loc: ["body"], msg: "Input should be a valid dictionary or object to extract fields from", type: "model_attributes_type", input: '{"name":"x"}' },
    ]);
  });

  it("wrong scalar types: string_type, int_type, int_from_float, int_parsing, float_parsing, bool_type, bool_parsing", async () => {
    const response = await call(tracesPath(), {
      as: tenant,
      body: {
        log_stream_id: logStreamId,
        is_complete: 7,
        traces: [
          {
            name: 42,
            status_code: true,
            step_number: 1.5,
            spans: [{ type: "llm", step_number: "three", temperature: "hot", is_complete: "perhaps" }],
          },
          { is_complete: [true] },
        ],
      },
    });
    // In the order of the schema's fields, as Pydantic reports them.
    expect422(response, [
      { loc: ["body", "traces", 0, "name"], msg: "Input should be a valid string", type: "string_type", input: 42 },
      { loc: ["body", "traces", 0, "status_code"], msg: "Input should be a valid integer", type: "int_type", input: true },
      {
        loc: ["body", "traces", 0, "step_number"],
        msg: "Input should be a valid integer, got a number with a fractional part",
        type: "int_from_float",
        input: 1.5,
      },
      {
        loc: ["body", "traces", 0, "spans", 0, "is_complete"],
        msg: "Input should be a valid boolean, unable to interpret input",
        type: "bool_parsing",
        input: "perhaps",
      },
      {
        loc: ["body", "traces", 0, "spans", 0, "step_number"],
        msg: "Input should be a valid integer, unable to parse string as an integer",
        type: "int_parsing",
        input: "three",
      },
      {
        loc: ["body", "traces", 0, "spans", 0, "temperature"],
        msg: "Input should be a valid number, unable to parse string as a number",
        type: "float_parsing",
        input: "hot",
      },
      { loc: ["body", "traces", 1, "is_complete"], msg: "Input should be a valid boolean", type: "bool_type", input: [true] },
      { loc: ["body", "is_complete"], msg: "Input should be a valid boolean, unable to interpret input", type: "bool_parsing", input: 7 },
    ]);
  });

  it("wrong container types: list_type and dict_type", async () => {
    const response = await call(tracesPath(), {
      as: tenant,
      body: { log_stream_id: logStreamId, traces: [{ tags: "a,b", user_metadata: ["k", "v"] }] },
    });
    expect422(response, [
      { loc: ["body", "traces", 0, "user_metadata"], msg: "Input should be a valid dictionary", type: "dict_type", input: ["k", "v"] },
      { loc: ["body", "traces", 0, "tags"], msg: "Input should be a valid list", type: "list_type", input: "a,b" },
    ]);
  });

  it("a malformed UUID in the path is uuid_parsing at path.project_id", async () => {
    const response = await call("/v2/projects/not-a-uuid/log_streams", { as: tenant });
    expect422(response, [
      { loc: ["path", "project_id"], msg: "Input should be a valid UUID", type: "uuid_parsing", input: "not-a-uuid", ctx: { error: "invalid UUID format" } },
    ]);
  });

  it("a malformed UUID in the body is uuid_parsing at its field", async () => {
    const response = await call(`/v2/projects/${projectId}/spans/available_columns`, { as: tenant, body: { log_stream_id: "1234" } });
    expect422(response, [
      { loc: ["body", "log_stream_id"], msg: "Input should be a valid UUID", type: "uuid_parsing", input: "1234", ctx: { error: "invalid UUID format" } },
    ]);
  });

  it("UUIDs are accepted in upper case and answered in lower case", async () => {
    const response = await call(`/v2/projects/${projectId.toUpperCase()}`, { as: tenant });
    expect(response.status).toBe(200);
    expect(response.body.id).toBe(projectId);
  });

  it("an unknown enum value is literal_error listing the expected values", async () => {
    const response = await call(tracesPath(), { as: tenant, body: { log_stream_id: logStreamId, traces: [{ spans: [{ type: "banana" }] }] } });
    const expected = "'agent', 'workflow', 'llm', 'tool', 'retriever' or 'control'";
    expect422(response, [
      { loc: ["body", "traces", 0, "spans", 0, "type"], msg: `Input should be ${expected}`, type: "literal_error", input: "banana", ctx: { expected } },
    ]);
  });

  it("a trace with another type is literal_error", async () => {
    const response = await call(tracesPath(), { as: tenant, body: { log_stream_id: logStreamId, traces: [{ type: "llm" }] } });
    expect422(response, [
      { loc: ["body", "traces", 0, "type"], msg: "Input should be 'trace'", type: "literal_error", input: "llm", ctx: { expected: "'trace'" } },
    ]);
  });

  it("too long and too short strings: string_too_long, string_too_short", async () => {
    expect422(await call("/v2/projects", { as: tenant, body: { name: "x".repeat(257) } }), [
      { loc: ["body", "name"], msg: "String should have at most 256 characters", type: "string_too_long", input: "x".repeat(257), ctx: { max_length: 256 } },
    ]);
    expect422(await call("/v2/projects", { as: tenant, body: { name: "" } }), [
      { loc: ["body", "name"], msg: "String should have at least 1 character", type: "string_too_short", input: "", ctx: { min_length: 1 } },
    ]);
  });

  it("an empty list where one item is needed: too_short", async () => {
    expect422(await call(tracesPath(), { as: tenant, body: { log_stream_id: logStreamId, traces: [] } }), [
      {
        loc: ["body", "traces"],
        msg: "List should have at least 1 item after validation, not 0",
        type: "too_short",
        input: [],
        ctx: { field_type: "List", min_length: 1, actual_length: 0 },
      },
    ]);
  });

  it("a bad timestamp is datetime_from_date_parsing", async () => {
    const response = await call(tracesPath(), { as: tenant, body: { log_stream_id: logStreamId, traces: [{ created_at: "yesterday" }] } });
    expect422(response, [
      {
        loc: ["body", "traces", 0, "created_at"],
        msg: "Input should be a valid datetime",
        type: "datetime_from_date_parsing",
        input: "yesterday",
        ctx: { error: "invalid datetime format" },
      },
    ]);
  });

  it("no run selector is a value_error on the body", async () => {
    const msg = "Value error, exactly one of log_stream_id, experiment_id or metrics_testing_id is required";
    expect422(await call(tracesPath(), { as: tenant, body: { traces: [{ name: "t" }] } }), [
      { loc: ["body"], msg, type: "value_error", input: { traces: [{ name: "t" }] }, ctx: { error: msg.slice("Value error, ".length) } },
    ]);
  });

  it("two run selectors is a value_error on the second one", async () => {
    const msg = "Value error, only one of log_stream_id, experiment_id or metrics_testing_id may be given, got log_stream_id, experiment_id";
    const response = await call(`/v2/projects/${projectId}/traces/available_columns`, {
      as: tenant,
      body: { log_stream_id: logStreamId, experiment_id: experimentId },
    });
    expect422(response, [{ loc: ["body", "experiment_id"], msg, type: "value_error", input: experimentId, ctx: { error: msg.slice("Value error, ".length) } }]);
  });

  it("an error deep in nested spans carries its full loc", async () => {
    const body = {
      log_stream_id: logStreamId,
      traces: [
        { name: "fine" },
        {
          name: "broken",
          spans: [
            { type: "workflow", spans: [{ type: "llm" }] },
            { type: "agent", spans: [{ type: "tool" }, { type: "retriever", spans: [{ type: "control", metrics: { toxicity: "high" } }] }] },
          ],
        },
      ],
    };
    expect422(await call(tracesPath(), { as: tenant, body }), [
      {
        loc: ["body", "traces", 1, "spans", 1, "spans", 1, "spans", 0, "metrics", "toxicity"],
        msg: "Input should be a valid number, unable to parse string as a number",
        type: "float_parsing",
        input: "high",
      },
    ]);
  });

  it("every fault of a request is reported, not only the first", async () => {
    const response = await call(tracesPath(), { as: tenant, body: { log_stream_id: "x", traces: [{ spans: [{}] }] } });
    expect(response.status).toBe(422);
    expect(response.body.detail.map((d: { loc: unknown[] }) => d.loc)).toEqual(
      expect.arrayContaining([["body", "log_stream_id"], ["body", "traces", 0, "spans", 0, "type"]]),
    );
  });

  it("faults in several parts of a request are all reported, path then query then body", async () => {
    const both = await call("/v2/org-jobs/delete-by-metadata?immediate=maybe", { as: tenant, body: { metadata_key: "" } });
    expect422(both, [
      { loc: ["query", "immediate"], msg: "Input should be a valid boolean, unable to interpret input", type: "bool_parsing", input: "maybe" },
      { loc: ["body", "metadata_key"], msg: "String should have at least 1 character", type: "string_too_short", input: "", ctx: { min_length: 1 } },
      { loc: ["body", "metadata_value"], msg: "Field required", type: "missing", input: { metadata_key: "" } },
    ]);
    const pathAndBody = await call("/v2/projects/not-a-uuid/traces", { as: tenant, body: { traces: [] } });
    expect(pathAndBody.status).toBe(422);
    const locs = pathAndBody.body.detail.map((d: { loc: unknown[] }) => d.loc);
    expect(locs[0]).toEqual(["path", "project_id"]);
    expect(locs.slice(1).every((loc: unknown[]) => loc[0] === "body")).toBe(true);
    expect(locs.length).toBeGreaterThan(1);
    // One bad part alone is reported alone.
    const queryOnly = await call("/v2/org-jobs/delete-by-metadata?dry_run=2", { as: tenant, body: { metadata_key: "k", metadata_value: "v" } });
    expect(queryOnly.body.detail.map((d: { loc: unknown[] }) => d.loc)).toEqual([["query", "dry_run"]]);
  });

  it("a bad boolean query parameter is bool_parsing", async () => {
    // No foundation route takes a boolean query yet; the shared helper is exercised through the
    // same router factory (and so the same validation hook) that every route uses.
    const router = createRouter();
    router.openapi(
      createRoute({
        method: "get",
        path: "/probe",
        request: { query: z.object({ immediate: queryBoolean(false) }) },
        responses: { 200: { description: "ok", content: { "application/json": { schema: z.object({ immediate: z.boolean() }) } } } },
      }),
      (c) => c.json({ immediate: c.req.valid("query").immediate }, 200),
    );
    const bad = await router.request("/probe?immediate=maybe");
    expect(bad.status).toBe(422);
    expect(await bad.json()).toEqual({
      detail: [{ loc: ["query", "immediate"], msg: "Input should be a valid boolean, unable to interpret input", type: "bool_parsing", input: "maybe" }],
    });
    for (const [raw, value] of [["true", true], ["1", true], ["yes", true], ["off", false], ["F", false]] as const) {
      const ok = await router.request(`/probe?immediate=${raw}`);
      expect(await ok.json()).toEqual({ immediate: value });
    }
    expect(await (await router.request("/probe")).json()).toEqual({ immediate: false });
  });

  it("unknown extra body keys and query parameters are ignored", async () => {
    const response = await call(`/v2/projects?project_id=${projectId}&unknown=1`, { as: tenant });
    expect(response.status).toBe(200);
    const created = await call("/v2/projects", { as: tenant, body: { name: "validation", extra: { nested: true } } });
    expect(created.status).toBe(200);
    expect(created.body.id).toBe(projectId);
  });
});

describe("no client input produces a 5xx", () => {
  function nestedSpans(levels: number): Record<string, unknown> {
    let span: Record<string, unknown> = { type: "llm" };
    for (let depth = 1; depth < levels; depth++) span = { type: "agent", spans: [span] };
    return span;
  }

  it("spans nested 200 deep are stored; a body nested beyond the JSON depth limit is json_invalid", async () => {
    const deep = await call(tracesPath(), { as: tenant, body: { log_stream_id: logStreamId, traces: [{ spans: [nestedSpans(200)] }] } });
    expect(deep.status, JSON.stringify(deep.body)).toBe(200);
    expect(deep.body.spans_count).toBe(200);
    // 3,000 levels used to overflow the validator's stack (a 500).
    const tooDeep = await call(tracesPath(), { as: tenant, body: { log_stream_id: logStreamId, traces: [{ spans: [nestedSpans(3000)] }] } });
    expect422(tooDeep, [
      {
        loc: ["body"],
        msg: "JSON decode error",
        type: "json_invalid",
        input: {},
        ctx: { error: "recursion limit exceeded: JSON nested deeper than 512 levels" },
      },
    ]);
  });

  it("fast-check: random JSON bodies at every POST route of the OpenAPI document", async () => {
    const document = (await call("/openapi.json")).body as { paths: Record<string, Record<string, unknown>> };
    const postPaths = Object.entries(document.paths)
      .filter(([, operations]) => "post" in operations)
      .map(([path]) => path);
    expect(postPaths.length).toBeGreaterThanOrEqual(8);
    const concrete = (path: string) =>
      path.replace("{project_id}", projectId).replace(/\{[^}]+\}/g, () => crypto.randomUUID());
    const selector = fc.constantFrom<Record<string, unknown>>(
      { log_stream_id: logStreamId },
      { experiment_id: experimentId },
      { log_stream_id: logStreamId, experiment_id: experimentId },
      {},
    );
    const leaf = fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.constantFrom("trace", "llm", "agent", "tool", "retriever", "control", "workflow"));
    const record: fc.Arbitrary<Record<string, unknown>> = fc.letrec<{ node: Record<string, unknown> }>((tie) => ({
      node: fc.record(
        {
          type: leaf,
          id: fc.oneof(fc.uuid(), leaf),
          name: leaf,
          input: leaf,
          output: leaf,
          created_at: fc.oneof(fc.date({ noInvalidDate: true }).map((d) => d.toISOString()), leaf),
          user_metadata: fc.oneof(fc.dictionary(fc.string(), fc.oneof(fc.string(), fc.integer(), fc.boolean())), leaf),
          tags: fc.oneof(fc.array(fc.string()), leaf),
          metrics: fc.oneof(fc.dictionary(fc.string(), fc.double()), leaf),
          spans: fc.oneof({ depthSize: "small" }, fc.array(tie("node"), { maxLength: 3 }), leaf),
        },
        { requiredKeys: [] },
      ),
    })).node;
    const body = fc.oneof(
      fc.jsonValue().map((v) => JSON.stringify(v)),
      fc.string(),
      fc.tuple(selector, fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 2 }))).map(([s, extra]) => JSON.stringify({ ...extra, ...s })),
      fc.tuple(selector, fc.array(record, { maxLength: 3 }), leaf).map(([s, traces, name]) =>
        JSON.stringify({ ...s, traces, name, api_key: name, username: name, password: name }),
      ),
    );
    const failures: string[] = [];
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...postPaths), body, fc.constantFrom("application/json", "application/x-www-form-urlencoded", "text/plain"), async (path, raw, contentType) => {
        const response = await call(concrete(path), { as: tenant, rawBody: raw, headers: { "content-type": contentType } });
        if (response.status >= 500) failures.push(`${path} ${contentType} ${raw.slice(0, 300)} -> ${response.status} ${JSON.stringify(response.body)}`);
        return response.status < 500;
      }),
      { numRuns: 400 },
    );
    expect(failures).toEqual([]);
  }, 60_000);
});
