/**
 * The requests the pinned `galileo` SDK sends outside streaming (bodies captured on the wire),
 * and the answers it reads, parsed with the SDK's generated schemas where it has them.
 */
import { env } from "cloudflare:test";
import {
  LogRecordsPartialQueryResponse$inboundSchema,
  LogRecordsQueryResponse$inboundSchema,
  LogTracesIngestResponse$inboundSchema,
  SessionCreateResponse$inboundSchema,
  Token$inboundSchema,
} from "galileo-generated/models";
import { beforeAll, describe, expect, it } from "vitest";
import { call } from "./support/client";
import { createTenant, type Tenant } from "./support/tenants";
import { allRecordDbs } from "./support/record-dbs";

let tenant: Tenant;
let projectId: string;
let logStreamId: string;

beforeAll(async () => {
  tenant = await createTenant();
});

describe("init: project and log stream", () => {
  it("finds nothing by name, creates the project with the SDK's extra field, then finds it", async () => {
    const name = `sdk-${crypto.randomUUID()}`;
    const missing = await call(`/v2/projects?project_name=${name}&type=gen_ai`, { as: tenant });
    expect(missing).toMatchObject({ status: 200, body: [] });
    const created = await call("/v2/projects", { as: tenant, body: { name, type: "gen_ai", create_example_templates: false } });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ name, type: "gen_ai" });
    projectId = created.body.id;
    const found = await call(`/v2/projects?project_name=${name}&type=gen_ai`, { as: tenant });
    expect(found.body.map((p: { id: string }) => p.id)).toEqual([projectId]);
    const all = await call("/v2/projects/all?project_type=gen_ai", { as: tenant });
    expect(all.status).toBe(200);
    expect(all.body.map((p: { id: string }) => p.id)).toContain(projectId);
    const none = await call("/v2/projects/all?project_type=no-such-type", { as: tenant });
    expect(none.body).toEqual([]);
  });

  it("lists log streams with the project id repeated in the query, creates one, and gets it by id", async () => {
    const before = await call(`/v2/projects/${projectId}/log_streams?project_id=${projectId}`, { as: tenant });
    expect(before).toMatchObject({ status: 200, body: [] });
    const created = await call(`/v2/projects/${projectId}/log_streams?project_id=${projectId}`, { as: tenant, body: { name: "default" } });
    expect(created.status).toBe(200);
    logStreamId = created.body.id;
    const byId = await call(`/v2/projects/${projectId}/log_streams/${logStreamId}?project_id=${projectId}&log_stream_id=${logStreamId}`, { as: tenant });
    expect(byId).toMatchObject({ status: 200, body: { id: logStreamId, name: "default", project_id: projectId } });
    const unknown = await call(`/v2/projects/${projectId}/log_streams/${crypto.randomUUID()}`, { as: tenant });
    expect(unknown.status).toBe(404);
    // An experiment id is not a log stream.
    const experiment = await call(`/v2/projects/${projectId}/experiments`, { as: tenant, body: { name: "exp", task_type: 16 } });
    expect((await call(`/v2/projects/${projectId}/log_streams/${experiment.body.id}`, { as: tenant })).status).toBe(404);
  });

  it("creates an experiment as createExperiment does (task_type 16) and gets it by id", async () => {
    const created = await call(`/v2/projects/${projectId}/experiments?project_id=${projectId}`, { as: tenant, body: { name: "prompt-v2", task_type: 16 } });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ name: "prompt-v2", project_id: projectId, task_type: 16 });
    const byId = await call(`/v2/projects/${projectId}/experiments/${created.body.id}?project_id=${projectId}&experiment_id=${created.body.id}`, { as: tenant });
    expect(byId).toMatchObject({ status: 200, body: { id: created.body.id, task_type: 16 } });
  });

  it("hides another organization's runs behind a 404", async () => {
    const other = await createTenant();
    expect((await call(`/v2/projects/${projectId}/log_streams/${logStreamId}`, { as: other })).status).toBe(404);
  });
});

describe("login", () => {
  it("answers /v2/login/api_key and /v2/login (password form) with tokens the generated client parses", async () => {
    const byKey = await call("/v2/login/api_key", { body: { api_key: tenant.apiKey } });
    expect(byKey.status).toBe(200);
    expect(Token$inboundSchema.parse(byKey.body).tokenType).toBe("bearer");
    const byPassword = await call("/v2/login", {
      rawBody: new URLSearchParams({ username: tenant.email, password: tenant.password }).toString(),
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(byPassword.status).toBe(200);
    expect(Token$inboundSchema.parse(byPassword.body).accessToken).toBeTruthy();
  });
});

describe("batch ingestion as flush() sends it", () => {
  it("accepts the SDK's body and answers what its generated client parses", async () => {
    const session = await call(`/v2/projects/${projectId}/sessions?project_id=${projectId}`, {
      as: tenant,
      body: { log_stream_id: logStreamId, name: "s1", external_id: "ext-1", user_metadata: { a: "b" } },
    });
    expect(session.status).toBe(200);
    expect(SessionCreateResponse$inboundSchema.parse(session.body)).toMatchObject({ name: "s1", externalId: "ext-1", projectId });

    const traceId = crypto.randomUUID();
    const llmId = crypto.randomUUID();
    const body = {
      log_stream_id: logStreamId,
      experiment_id: null,
      reliable: true,
      session_id: session.body.id,
      traces: [
        {
          type: "trace",
          input: "hello",
          output: "final",
          name: "trace1",
          created_at: "2026-11-22T05:35:02.426Z",
          user_metadata: { env: "test", camelKey: "v" },
          tags: ["t1"],
          metrics: { duration_ns: 999 },
          dataset_metadata: {},
          id: traceId,
          spans: [
            {
              type: "llm",
              input: [{ content: "hi", role: "user" }],
              output: { content: "yo", role: "assistant" },
              name: "llm",
              created_at: "2026-11-22T05:35:02.429Z",
              user_metadata: { k: "v" },
              tags: ["llm"],
              metrics: { duration_ns: 100, num_input_tokens: 3, num_output_tokens: 4, num_total_tokens: 7 },
              dataset_metadata: {},
              id: llmId,
              model: "gpt-x",
              temperature: 0.3,
            },
          ],
        },
      ],
      is_complete: true,
      include_trace_ids: false,
    };
    const ingested = await call(`/v2/projects/${projectId}/traces`, { as: tenant, body });
    expect(ingested.status, JSON.stringify(ingested.body)).toBe(200);
    const parsed = LogTracesIngestResponse$inboundSchema.parse(ingested.body);
    expect(parsed).toMatchObject({ projectId, logStreamId, sessionId: session.body.id, recordsCount: 2, tracesCount: 1 });
    expect(parsed.traceIds).toBeUndefined();
    const row = await allRecordDbs.prepare("SELECT session_id, parent_id, metrics FROM records WHERE id = ?").bind(llmId).first<Record<string, string>>();
    expect(row).toMatchObject({ session_id: session.body.id, parent_id: traceId });

    const withIds = await call(`/v2/projects/${projectId}/traces`, { as: tenant, body: { ...body, include_trace_ids: true } });
    expect(LogTracesIngestResponse$inboundSchema.parse(withIds.body).traceIds).toEqual([traceId]);
  });
});

describe("search answers the generated client can parse", () => {
  const GENERATED = { "X-Galileo-SDK": "galileo-generated/0.2.14" };
  const KINDS = ["trace", "session", "workflow", "agent", "llm", "retriever", "tool"];

  function kindsParsed(schema: { parse(x: unknown): { records?: unknown[] } }, body: unknown): string[] {
    return (schema.parse(body).records ?? []).map((r) => String((r as { type: string }).type));
  }

  it("fills, per kind, exactly the fields the generated schemas insist on", async () => {
    const { withGeneratedClientFields } = await import("../src/compat/generated-client-records");
    const bare = KINDS.map((type) => ({ id: crypto.randomUUID(), type }));
    // Without the fields, the generated client degrades every record to UNKNOWN.
    expect(kindsParsed(LogRecordsPartialQueryResponse$inboundSchema, { records: bare })).toEqual(KINDS.map(() => "UNKNOWN"));
    expect(kindsParsed(LogRecordsPartialQueryResponse$inboundSchema, { records: bare.map(withGeneratedClientFields) })).toEqual(KINDS);
    const control = { id: crypto.randomUUID(), type: "control" };
    expect(withGeneratedClientFields(control)).toEqual(control);
  });

  it("answers the generated client's partial and full searches with records of every kind it knows", async () => {
    const runBody = { log_stream_id: logStreamId };
    const session = await call(`/v2/projects/${projectId}/sessions`, { as: tenant, body: { ...runBody, name: "s" } });
    const traceId = crypto.randomUUID();
    const ingest = await call(`/v2/projects/${projectId}/traces`, {
      as: tenant,
      body: {
        ...runBody,
        session_id: session.body.id,
        traces: [
          {
            id: traceId,
            name: "every kind",
            input: "q",
            spans: [
              {
                type: "workflow",
                name: "w",
                input: "w",
                spans: [
                  { type: "agent", name: "a", input: "a", agent_type: "router" },
                  { type: "llm", name: "l", input: [{ role: "user", content: "hi" }], output: { role: "assistant", content: "yo" } },
                  { type: "retriever", name: "r", input: "q", output: [{ content: "doc", metadata: {} }] },
                  { type: "tool", name: "t", input: "x", output: "y" },
                ],
              },
            ],
          },
        ],
      },
    });
    expect(ingest.status).toBe(200);

    const searches: [string, string[]][] = [
      ["traces", ["trace"]],
      ["spans", ["workflow", "agent", "llm", "retriever", "tool"]],
      ["sessions", ["session"]],
    ];
    for (const [segment, kinds] of searches) {
      const filters = segment === "spans" ? [{ column_id: "trace_id", operator: "eq", value: traceId, type: "id" }] : [];
      const body = { ...runBody, filters, select_columns: { column_ids: ["id"] }, limit: 100 };
      const partial = await call(`/v2/projects/${projectId}/${segment}/partial_search`, { as: tenant, body, headers: GENERATED });
      expect(partial.status, JSON.stringify(partial.body)).toBe(200);
      expect(new Set(kindsParsed(LogRecordsPartialQueryResponse$inboundSchema, partial.body))).toEqual(new Set(kinds));
      // Other clients keep the contract's exact projection.
      const plain = await call(`/v2/projects/${projectId}/${segment}/partial_search`, { as: tenant, body });
      for (const record of plain.body.records) expect(Object.keys(record).sort()).toEqual(["id", "type"]);

      const full = await call(`/v2/projects/${projectId}/${segment}/search`, { as: tenant, body: { ...runBody, filters, limit: 100 }, headers: GENERATED });
      expect(full.status, JSON.stringify(full.body)).toBe(200);
      expect(new Set(kindsParsed(LogRecordsQueryResponse$inboundSchema, full.body))).toEqual(new Set(kinds));
    }
  });
});

describe("one record by id (continuing a distributed trace)", () => {
  it("answers a trace, a span and a session as a full search does, and nothing across tenants or families", async () => {
    const session = await call(`/v2/projects/${projectId}/sessions`, { as: tenant, body: { log_stream_id: logStreamId, name: "lookup", external_id: "ext-lookup" } });
    const traceId = crypto.randomUUID();
    const agentId = crypto.randomUUID();
    await call(`/v2/projects/${projectId}/traces`, {
      as: tenant,
      body: {
        log_stream_id: logStreamId,
        session_id: session.body.id,
        traces: [{ id: traceId, name: "t", input: "q", output: "a", user_metadata: { k: "v" }, metrics: { duration_ns: 7 }, spans: [{ id: agentId, type: "agent", name: "a", input: "in", agent_type: "planner" }] }],
      },
    });

    const trace = await call(`/v2/projects/${projectId}/traces/${traceId}?project_id=${projectId}&trace_id=${traceId}`, { as: tenant });
    expect(trace.status).toBe(200);
    expect(trace.body).toMatchObject({ id: traceId, type: "trace", input: "q", output: "a", user_metadata: { k: "v" }, metrics: { duration_ns: 7 }, session_id: session.body.id, has_children: true });
    const span = await call(`/v2/projects/${projectId}/spans/${agentId}`, { as: tenant });
    expect(span.body).toMatchObject({ id: agentId, type: "agent", agent_type: "planner", trace_id: traceId, parent_id: traceId });
    const found = await call(`/v2/projects/${projectId}/sessions/${session.body.id}`, { as: tenant });
    expect(found.body).toMatchObject({ id: session.body.id, type: "session", external_id: "ext-lookup" });

    // Same answer as a full search for the record.
    const searched = await call(`/v2/projects/${projectId}/traces/search`, {
      as: tenant,
      body: { log_stream_id: logStreamId, filters: [{ column_id: "id", operator: "eq", value: traceId, type: "id" }] },
    });
    expect(trace.body).toEqual(searched.body.records[0]);

    expect((await call(`/v2/projects/${projectId}/spans/${traceId}`, { as: tenant })).status).toBe(404);
    expect((await call(`/v2/projects/${projectId}/traces/${crypto.randomUUID()}`, { as: tenant })).status).toBe(404);
    const other = await createTenant();
    expect((await call(`/v2/projects/${projectId}/traces/${traceId}`, { as: other })).status).toBe(404);
    const bad = await call(`/v2/projects/${projectId}/traces/not-an-id`, { as: tenant });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0]).toMatchObject({ loc: ["path", "trace_id"], type: "uuid_parsing" });
  });
});
