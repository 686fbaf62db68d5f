/**
 * The OTLP intake through the worker's real entry point (auth, routing, D1): both paths at the
 * root and under /v2, both encodings, gzip, the answers OTLP specifies, order of arrival across
 * requests, retries, and what searches see at each step.
 */
import { fromBinary } from "@bufbuild/protobuf";
import { env } from "cloudflare:test";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { StatusSchema } from "../src/otlp/generated/google/rpc/status_pb";
import { ExportTraceServiceResponseSchema } from "../src/otlp/generated/opentelemetry/proto/collector/trace/v1/trace_service_pb";
import { bytesToHex as bytesHex, hexToUuid, spanUuid } from "../src/otlp/otel-ids";
import { OTLP_LIMITS } from "../src/otlp/otlp-limits";
import { call } from "./support/client";
import { exportRequest, gzip, jsonBody, otlpSpan, postOtlp, protobufBody, randomHex } from "./support/otlp-requests";
import { createTenant, type Tenant } from "./support/tenants";
import { allRecordDbs } from "./support/record-dbs";
import { textIndexDifferencesEverywhere } from "./support/text-index";

let tenant: Tenant;
let other: Tenant;

beforeAll(async () => {
  tenant = await createTenant();
  other = await createTenant();
});

const bearer = (t: Tenant) => ({ Authorization: `Bearer ${t.apiKey}` });

async function projectNamed(t: Tenant, name: string): Promise<{ id: string } | undefined> {
  const { body } = await call(`/v2/projects?project_name=${encodeURIComponent(name)}`, { as: t });
  return body[0];
}

async function logStreamOf(t: Tenant, projectId: string, name: string): Promise<{ id: string } | undefined> {
  const { body } = await call(`/v2/projects/${projectId}/log_streams?name=${encodeURIComponent(name)}`, { as: t });
  return body[0];
}

async function search(t: Tenant, projectId: string, runId: string, family: "traces" | "spans" | "sessions", filters: unknown[] = []) {
  const { status, body } = await call(`/v2/projects/${projectId}/${family}/search`, {
    as: t,
    body: { log_stream_id: runId, filters, limit: 1000 },
  });
  expect(status).toBe(200);
  return body.records as Record<string, any>[];
}

function decodeResponse(bytes: ArrayBuffer) {
  return fromBinary(ExportTraceServiceResponseSchema, new Uint8Array(bytes));
}

describe("authentication", () => {
  const body = () => protobufBody(exportRequest([otlpSpan({ trace: randomHex(16), span: randomHex(8) })]));

  it("accepts an API key as a bearer credential, and every scheme of the API", async () => {
    const project = `auth-${randomHex(4)}`;
    const schemes: Record<string, string>[] = [bearer(tenant), { "Service-API-Key": tenant.apiKey }, { "Alt-AO-API-Key": tenant.apiKey }, { Authorization: `Basic ${btoa(`${tenant.email}:${tenant.password}`)}` }];
    for (const headers of schemes) {
      const response = await postOtlp(body(), { headers: { ...headers, project } });
      expect(response.status).toBe(200);
    }
    const { body: login } = await call("/login/api_key", { body: { api_key: tenant.apiKey } });
    expect((await postOtlp(body(), { headers: { Authorization: `Bearer ${login.access_token}`, project } })).status).toBe(200);
  });

  it("answers 401 with an OTLP Status in the request's encoding, without or with wrong credentials", async () => {
    const none = await postOtlp(body());
    expect(none.status).toBe(401);
    expect(none.headers.get("content-type")).toBe("application/x-protobuf");
    expect(fromBinary(StatusSchema, new Uint8Array(await none.arrayBuffer()))).toMatchObject({ code: 16 });
    const wrong = await postOtlp(jsonBody(exportRequest([])), { contentType: "application/json", headers: { Authorization: "Bearer tsk_not-a-key" } });
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toMatchObject({ code: 16, message: "Invalid API key" });
  });

  it("keeps organizations apart: a project id of another organization is a 404 and nothing is written", async () => {
    const project = await call("/v2/projects", { as: other, body: { name: `theirs-${randomHex(4)}` } });
    const response = await postOtlp(body(), { headers: { ...bearer(tenant), project: project.body.id } });
    expect(response.status).toBe(404);
    const { body: runs } = await call(`/v2/projects/${project.body.id}/log_streams`, { as: other });
    expect(runs).toEqual([]);
  });
});

describe("where spans go", () => {
  it("creates the named project and log stream once, also under concurrent requests; defaults to default/default", async () => {
    const project = `dest-${randomHex(4)}`;
    const responses = await Promise.all(
      Array.from({ length: 5 }, () => postOtlp(protobufBody(exportRequest([otlpSpan({ trace: randomHex(16), span: randomHex(8) })])), { headers: { ...bearer(tenant), project, logstream: "prod" } })),
    );
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    const created = await projectNamed(tenant, project);
    const stream = await logStreamOf(tenant, created!.id, "prod");
    expect((await search(tenant, created!.id, stream!.id, "traces")).length).toBe(5);

    const fresh = await createTenant();
    expect((await postOtlp(protobufBody(exportRequest([otlpSpan({ trace: randomHex(16), span: randomHex(8) })])), { headers: bearer(fresh) })).status).toBe(200);
    const defaultProject = await projectNamed(fresh, "default");
    expect(await logStreamOf(fresh, defaultProject!.id, "default")).toBeDefined();
  });

  it("writes into an experiment named by id; an unknown experiment is a 404; both headers a 400", async () => {
    const project = await call("/v2/projects", { as: tenant, body: { name: `exp-${randomHex(4)}` } });
    const experiment = await call(`/v2/projects/${project.body.id}/experiments`, { as: tenant, body: { name: "e1" } });
    const span = () => protobufBody(exportRequest([otlpSpan({ trace: randomHex(16), span: randomHex(8) })]));
    expect((await postOtlp(span(), { headers: { ...bearer(tenant), project: project.body.id, experimentid: experiment.body.id } })).status).toBe(200);
    const { body } = await call(`/v2/projects/${project.body.id}/traces/search`, { as: tenant, body: { experiment_id: experiment.body.id } });
    expect(body.records).toHaveLength(1);
    expect((await postOtlp(span(), { headers: { ...bearer(tenant), project: project.body.id, experimentid: crypto.randomUUID() } })).status).toBe(404);
    expect((await postOtlp(span(), { headers: { ...bearer(tenant), logstream: "a", experimentid: experiment.body.id } })).status).toBe(400);
  });
});

describe("order of arrival and retries", () => {
  it("children first, root last, across requests, each request retried: one consistent trace at every step", async () => {
    const project = `order-${randomHex(4)}`;
    const headers = { ...bearer(tenant), project, logstream: "s" };
    const traceHex = randomHex(16);
    const ids = { root: randomHex(8), agent: randomHex(8), llm: randomHex(8), tool: randomHex(8) };
    const t0 = Date.UTC(2026, 10, 2, 10);
    const spans = {
      llm: otlpSpan({ trace: traceHex, span: ids.llm, parent: ids.agent, name: "chat", startMs: t0 + 20, attributes: { "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 3, "session.id": "conv-1" } }),
      tool: otlpSpan({ trace: traceHex, span: ids.tool, parent: ids.agent, name: "tool", startMs: t0 + 30, attributes: { "gen_ai.operation.name": "execute_tool" } }),
      agent: otlpSpan({ trace: traceHex, span: ids.agent, parent: ids.root, name: "agent", startMs: t0 + 10, attributes: { "gen_ai.operation.name": "invoke_agent" } }),
      root: otlpSpan({ trace: traceHex, span: ids.root, name: "request", startMs: t0, durationMs: 100, attributes: { "input.value": "hi", "output.value": "bye", "session.id": "conv-1", "metadata.customer": "acme" } }),
    };
    const send = async (list: (keyof typeof spans)[], encoding: "protobuf" | "json") => {
      const request = exportRequest(list.map((k) => spans[k]));
      const response = await postOtlp(encoding === "json" ? jsonBody(request) : protobufBody(request), { contentType: encoding === "json" ? "application/json" : "application/x-protobuf", headers });
      expect(response.status).toBe(200);
      return response;
    };

    await send(["llm", "tool"], "protobuf");
    await send(["llm", "tool"], "protobuf"); // the exporter's retry
    const projectId = (await projectNamed(tenant, project))!.id;
    const runId = (await logStreamOf(tenant, projectId, "s"))!.id;
    let traces = await search(tenant, projectId, runId, "traces");
    expect(traces).toHaveLength(1);
    // The trace's spans hang from its root span, still to come: no child of the trace itself yet.
    expect(traces[0]).toMatchObject({ id: hexToUuid(traceHex), name: "", is_complete: false, has_children: false, created_at: "2026-11-02T10:00:00.020000Z" });
    let spansFound = await search(tenant, projectId, runId, "spans");
    expect(spansFound.map((s) => s.name).sort()).toEqual(["chat", "tool"]);
    expect(spansFound.every((s) => s.trace_id === hexToUuid(traceHex) && s.is_complete === false)).toBe(true);
    const sessions = await search(tenant, projectId, runId, "sessions");
    expect(sessions).toHaveLength(1);
    expect(sessions[0]).toMatchObject({ name: "conv-1", external_id: "conv-1" });
    expect(spansFound.every((s) => s.session_id === sessions[0]!.id)).toBe(true);

    await send(["agent"], "json");
    spansFound = await search(tenant, projectId, runId, "spans");
    const agent = spansFound.find((s) => s.name === "agent")!;
    expect(agent).toMatchObject({ type: "agent", id: await spanUuid(traceHex, ids.agent), parent_id: await spanUuid(traceHex, ids.root), has_children: true });
    expect(spansFound.find((s) => s.name === "chat")!.parent_id).toBe(agent.id);

    await send(["root"], "protobuf");
    await send(["root"], "json"); // a retry in the other encoding changes nothing
    traces = await search(tenant, projectId, runId, "traces");
    expect(traces).toHaveLength(1);
    expect(traces[0]).toMatchObject({ name: "request", input: "hi", output: "bye", is_complete: true, session_id: sessions[0]!.id, created_at: "2026-11-02T10:00:00.000000Z" });
    expect(traces[0]!.user_metadata).toMatchObject({ customer: "acme", "service.name": "test-app" });
    expect(traces[0]!.metrics).toMatchObject({ duration_ns: 100_000_000 });
    spansFound = await search(tenant, projectId, runId, "spans");
    expect(spansFound).toHaveLength(4);
    expect(spansFound.every((s) => s.is_complete === true && s.session_id === sessions[0]!.id)).toBe(true);
    const root = spansFound.find((s) => s.name === "request")!;
    expect(root.parent_id).toBe(hexToUuid(traceHex));

    // A late child after the root: stored, linked, the trace untouched.
    const late = otlpSpan({ trace: traceHex, span: randomHex(8), parent: ids.root, name: "late", startMs: t0 + 90 });
    expect((await postOtlp(protobufBody(exportRequest([late])), { headers })).status).toBe(200);
    traces = await search(tenant, projectId, runId, "traces");
    expect(traces[0]).toMatchObject({ name: "request", is_complete: true });
    spansFound = await search(tenant, projectId, runId, "spans", [{ type: "text", name: "name", operator: "eq", value: "late" }]);
    expect(spansFound[0]).toMatchObject({ is_complete: true, session_id: sessions[0]!.id, parent_id: root.id });
    const counted = await call(`/v2/projects/${projectId}/traces/partial_search`, { as: tenant, body: { log_stream_id: runId, include_counts: true, select_columns: { column_ids: ["name"] } } });
    expect(counted.body.records[0].num_spans).toBe(5);
    // The text index follows every write and removal (migration 0012).
    expect(await textIndexDifferencesEverywhere()).toEqual([]);
  });
});

describe("query plans", () => {
  it("moves a trace's start by primary key, never by walking the project's records", async () => {
    const { earlierTraceStartStatements } = await import("../src/ingest/trace-start");
    const prepared: { sql: string; params: unknown[] }[] = [];
    const db = { prepare: (sql: string) => ({ bind: (...params: unknown[]) => (prepared.push({ sql, params }), {}) }) } as unknown as D1Database;
    earlierTraceStartStatements(db, [{ id: crypto.randomUUID(), createdAt: 1 }], { organizationId: tenant.organizationId, projectId: crypto.randomUUID(), runId: crypto.randomUUID() });
    expect(prepared).toHaveLength(1);
    const plan = await env.DB.prepare(`EXPLAIN QUERY PLAN ${prepared[0]!.sql}`).bind(...prepared[0]!.params).all<{ detail: string }>();
    const details = plan.results.map((r) => r.detail).join("\n");
    expect(details).toMatch(/SEARCH records USING INDEX \w+ \(project_id=\? AND id=\?\)/);
    expect(details).not.toMatch(/SCAN records|records_(run|family)_/);
  });
});

describe("erasure", () => {
  it("a span arriving after its trace was erased is not stored, nor is a placeholder for it", async () => {
    const project = `erased-${randomHex(4)}`;
    const headers = { ...bearer(tenant), project };
    const traceHex = randomHex(16);
    const rootHex = randomHex(8);
    const marker = `gone-${randomHex(6)}`;
    const root = otlpSpan({ trace: traceHex, span: rootHex, name: "root", attributes: { "metadata.erase_me": marker } });
    expect((await postOtlp(protobufBody(exportRequest([root])), { headers })).status).toBe(200);
    const deleted = await call("/v2/org-jobs/delete-by-metadata?immediate=true", { as: tenant, body: { metadata_key: "erase_me", metadata_value: marker } });
    expect(deleted.status).toBe(200);
    const late = otlpSpan({ trace: traceHex, span: randomHex(8), parent: rootHex, name: "late" });
    expect((await postOtlp(protobufBody(exportRequest([late])), { headers })).status).toBe(200);
    const projectId = (await projectNamed(tenant, project))!.id;
    const row = await allRecordDbs.prepare("SELECT count(*) AS n FROM records WHERE project_id = ?").bind(projectId).first<{ n: number }>();
    expect(row!.n).toBe(0);
  });
});

describe("answers", () => {
  const headers = () => ({ ...bearer(tenant), project: "answers" });

  it("answers in the request's encoding on all four paths, gzip accepted", async () => {
    for (const path of ["/otel/v1/traces", "/otel/traces", "/v2/otel/v1/traces", "/v2/otel/traces"]) {
      const request = exportRequest([otlpSpan({ trace: randomHex(16), span: randomHex(8) })]);
      const proto = await postOtlp(protobufBody(request), { path, headers: headers() });
      expect(proto.status).toBe(200);
      expect(proto.headers.get("content-type")).toBe("application/x-protobuf");
      expect(decodeResponse(await proto.arrayBuffer()).partialSuccess).toBeUndefined();
      const json = await postOtlp(await gzip(jsonBody(request)), { path, contentType: "application/json", headers: { ...headers(), "Content-Encoding": "gzip" } });
      expect(json.status).toBe(200);
      expect(await json.json()).toEqual({});
      const gzipped = await postOtlp(await gzip(protobufBody(request)), { path, headers: { ...headers(), "Content-Encoding": "gzip" } });
      expect(gzipped.status).toBe(200);
    }
  });

  it("reports spans it cannot store as partial_success, and stores the others", async () => {
    const good = otlpSpan({ trace: randomHex(16), span: randomHex(8) });
    const bad = otlpSpan({ trace: randomHex(16), span: "0000000000000000" });
    const response = await postOtlp(jsonBody(exportRequest([good, bad])), { contentType: "application/json", headers: headers() });
    expect(response.status).toBe(200);
    const body = (await response.json()) as any;
    expect(body.partialSuccess.rejectedSpans).toBe("1");
    expect(body.partialSuccess.errorMessage).toMatch(/invalid span_id/);
  });

  it("keeps organizations apart when they send the same trace id, and rejects a trace id used by another log stream of the project", async () => {
    const traceHex = randomHex(16);
    const spanHex = randomHex(8);
    const theirs = otlpSpan({ trace: traceHex, span: spanHex, name: "theirs", attributes: { "input.value": "their secret" } });
    expect((await postOtlp(protobufBody(exportRequest([theirs])), { headers: { ...bearer(other), project: "shared-name" } })).status).toBe(200);
    const mine = otlpSpan({ trace: traceHex, span: spanHex, name: "mine" });
    expect((await postOtlp(protobufBody(exportRequest([mine])), { headers: { ...bearer(tenant), project: "shared-name" } })).status).toBe(200);
    const rows = await allRecordDbs.prepare("SELECT organization_id, name FROM records WHERE id = ? ORDER BY name").bind(await spanUuid(traceHex, spanHex)).all<{ organization_id: string; name: string }>();
    expect(rows.results).toEqual([
      { organization_id: tenant.organizationId, name: "mine" },
      { organization_id: other.organizationId, name: "theirs" },
    ]);

    const project = `clash-${randomHex(4)}`;
    const clashHex = randomHex(16);
    expect((await postOtlp(protobufBody(exportRequest([otlpSpan({ trace: clashHex, span: randomHex(8) })])), { headers: { ...bearer(tenant), project, logstream: "a" } })).status).toBe(200);
    const kept = otlpSpan({ trace: randomHex(16), span: randomHex(8) });
    const clash = otlpSpan({ trace: clashHex, span: randomHex(8), parent: randomHex(8) });
    const response = await postOtlp(protobufBody(exportRequest([kept, clash])), { headers: { ...bearer(tenant), project, logstream: "b" } });
    expect(response.status).toBe(200);
    const decoded = decodeResponse(await response.arrayBuffer());
    expect(decoded.partialSuccess?.rejectedSpans).toBe(1n);
    expect(decoded.partialSuccess?.errorMessage).toMatch(/already used in another log stream/);
    const projectId = (await projectNamed(tenant, project))!.id;
    const streamB = (await logStreamOf(tenant, projectId, "b"))!.id;
    expect((await search(tenant, projectId, streamB, "traces")).map((t) => t.id)).toEqual([hexToUuid(bytesHex(kept.traceId))]);
  });

  it("400 for bodies that are not export requests, 415 for other media types and encodings", async () => {
    expect((await postOtlp("not protobuf at all \u0000\u00ff", { headers: headers() })).status).toBe(400);
    const badJson = await postOtlp('{"resourceSpans": [', { contentType: "application/json", headers: headers() });
    expect(badJson.status).toBe(400);
    expect(await badJson.json()).toMatchObject({ code: 3 });
    expect((await postOtlp("{}", { contentType: "text/plain", headers: headers() })).status).toBe(415);
    expect((await postOtlp("{}", { contentType: "application/json", headers: { ...headers(), "Content-Encoding": "br" } })).status).toBe(415);
    expect((await postOtlp("definitely not gzip", { headers: { ...headers(), "Content-Encoding": "gzip" } })).status).toBe(400);
  });

  it("413 over the size cap, a zip bomb included, before anything is decoded", async () => {
    const bomb = await gzip(new Uint8Array(OTLP_LIMITS.maxBodyBytes * 4));
    expect(bomb.length).toBeLessThan(200_000);
    const response = await postOtlp(bomb, { headers: { ...headers(), "Content-Encoding": "gzip" } });
    expect(response.status).toBe(413);
    expect(fromBinary(StatusSchema, new Uint8Array(await response.arrayBuffer())).code).toBe(8);
    expect((await postOtlp(new Uint8Array(OTLP_LIMITS.maxBodyBytes + 1), { headers: headers() })).status).toBe(413);
  });

  it("stores the most spans a request may carry in one go, children without their roots included; one more is a 413", async () => {
    const spans = Array.from({ length: OTLP_LIMITS.maxSpansPerRequest }, (_, i) =>
      otlpSpan({ trace: randomHex(16), span: randomHex(8), parent: randomHex(8), attributes: { "session.id": `s-${i % 50}`, "gen_ai.operation.name": "chat" } }),
    );
    const project = `many-${randomHex(4)}`;
    const response = await postOtlp(protobufBody(exportRequest(spans)), { headers: { ...bearer(tenant), project } });
    expect(response.status).toBe(200);
    expect(decodeResponse(await response.arrayBuffer()).partialSuccess).toBeUndefined();
    const projectId = (await projectNamed(tenant, project))!.id;
    const row = await allRecordDbs.prepare("SELECT count(*) AS n FROM records WHERE project_id = ? AND record_type = 'span'").bind(projectId).first<{ n: number }>();
    expect(row!.n).toBe(OTLP_LIMITS.maxSpansPerRequest);
    spans.push(otlpSpan({ trace: randomHex(16), span: randomHex(8) }));
    expect((await postOtlp(protobufBody(exportRequest(spans)), { headers: { ...bearer(tenant), project } })).status).toBe(413);
  }, 60_000);

  it("never answers 5xx to fuzzed protobuf or JSON bodies", async () => {
    const validSpan = protobufBody(exportRequest([otlpSpan({ trace: randomHex(16), span: randomHex(8) })]));
    const statuses = new Set<number>();
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.uint8Array({ maxLength: 300 }),
          // Valid requests with bytes flipped: decodable more often than random bytes.
          fc.array(fc.tuple(fc.nat(validSpan.length - 1), fc.integer({ min: 0, max: 255 })), { maxLength: 6 }).map((flips) => {
            const copy = validSpan.slice();
            for (const [i, v] of flips) copy[i] = v;
            return copy;
          }),
        ),
        async (bytes) => {
          const response = await postOtlp(bytes, { headers: headers() });
          statuses.add(response.status);
          return response.status < 500;
        },
      ),
      { numRuns: 60 },
    );
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.json({ maxDepth: 6 }), fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: [v] }] }] }))), async (text) => {
        const response = await postOtlp(text, { contentType: "application/json", headers: headers() });
        statuses.add(response.status);
        return response.status < 500;
      }),
      { numRuns: 60 },
    );
    expect(statuses.has(200) || statuses.has(400)).toBe(true);
  });
});

describe("storage failures", () => {
  /** The real database, except that every batch fails the way D1 fails when it is overloaded or unreachable. */
  function failingBatches(message: string): D1Database {
    const db = env.DB;
    return new Proxy(db, {
      get(target, key) {
        if (key === "batch") return async () => Promise.reject(new Error(message));
        const value = Reflect.get(target, key);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  }

  it("answers 503 with Retry-After when D1 is overloaded or unreachable, so exporters retry", async () => {
    const { createApp } = await import("../src/app");
    const app = createApp();
    for (const message of ["D1_ERROR: Network connection lost.", "D1 DB is overloaded. Too many requests queued."]) {
      const request = new Request("http://trace-store.test/otel/v1/traces", {
        method: "POST",
        headers: { "content-type": "application/x-protobuf", ...bearer(tenant), project: `unavailable-${randomHex(4)}` },
        body: protobufBody(exportRequest([otlpSpan({ trace: randomHex(16), span: randomHex(8) })])),
      });
      const response = await app.fetch(request, { ...env, DB: failingBatches(message) }, { waitUntil: () => undefined, passThroughOnException: () => undefined } as unknown as ExecutionContext);
      expect(response.status).toBe(503);
      expect(response.headers.get("retry-after")).toBe("5");
      expect(fromBinary(StatusSchema, new Uint8Array(await response.arrayBuffer())).code).toBe(14);
    }
  });
});
