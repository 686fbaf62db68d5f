/**
 * `created_at` and `updated_at` more than 24 hours ahead of the server's clock are refused
 * (contract section 12, issue 19 point 8): a record dated in 9999 would escape every retention,
 * and a far-future `updated_at` would make every later update "older" and lose it.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { type Run, createRun, postTraces } from "./deletion-fixtures";
import { call } from "./support/client";
import { exportRequest, otlpSpan, postOtlp, protobufBody, randomHex } from "./support/otlp-requests";
import { recordsOf } from "./support/record-dbs";
import { type Tenant, createTenant } from "./support/tenants";

const uuid = () => crypto.randomUUID();
const HOUR_MS = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();

let tenant: Tenant;

beforeAll(async () => {
  tenant = await createTenant();
});

async function stored(run: Run, id: string) {
  const db = await recordsOf(run.projectId);
  return db.prepare("SELECT name, created_at FROM records WHERE project_id = ? AND id = ?").bind(run.projectId, id).first<{ name: string; created_at: number }>();
}

describe("dates in the future", () => {
  it("refuses a trace or a nested span created in 9999 (422 naming the field) and writes nothing of the request", async () => {
    const run = await createRun(tenant);
    const [traceId, spanId] = [uuid(), uuid()];
    const trace = await call(`/v2/projects/${run.projectId}/traces`, {
      as: tenant,
      body: { log_stream_id: run.logStreamId, traces: [{ id: traceId, created_at: "9999-01-01T00:00:00Z" }] },
    });
    expect(trace.status, JSON.stringify(trace.body)).toBe(422);
    expect(trace.body.detail[0].loc).toEqual(["body", "traces", 0, "created_at"]);
    const span = await call(`/v2/projects/${run.projectId}/traces`, {
      as: tenant,
      body: { log_stream_id: run.logStreamId, traces: [{ id: traceId, spans: [{ id: spanId, type: "llm", created_at: iso(Date.now() + 25 * HOUR_MS) }] }] },
    });
    expect(span.status, JSON.stringify(span.body)).toBe(422);
    expect(span.body.detail[0].loc).toEqual(["body", "traces", 0, "spans", 0, "created_at"]);
    expect(await stored(run, traceId)).toBeNull();
  });

  it("refuses a far-future updated_at on a streamed span, so a later update still wins", async () => {
    const run = await createRun(tenant);
    const [traceId, spanId] = [uuid(), uuid()];
    await postTraces(tenant, run, [{ id: traceId, name: "t" }]);
    const post = (name: string, updatedAt?: string) =>
      call(`/v2/projects/${run.projectId}/spans`, {
        as: tenant,
        body: { log_stream_id: run.logStreamId, trace_id: traceId, parent_id: traceId, spans: [{ id: spanId, type: "llm", name, ...(updatedAt ? { updated_at: updatedAt } : {}) }] },
      });
    const frozen = await post("frozen", "9999-12-31T00:00:00Z");
    expect(frozen.status, JSON.stringify(frozen.body)).toBe(422);
    expect(frozen.body.detail[0].loc).toEqual(["body", "spans", 0, "updated_at"]);
    expect((await post("first", iso(Date.now()))).status).toBe(200);
    expect((await post("later", iso(Date.now() + HOUR_MS))).status).toBe(200);
    expect((await stored(run, spanId))?.name).toBe("later");
  });

  it("takes a clock a few hours ahead (drift within a day)", async () => {
    const run = await createRun(tenant);
    const traceId = uuid();
    await postTraces(tenant, run, [{ id: traceId, name: "ahead", created_at: iso(Date.now() + 23 * HOUR_MS) }]);
    expect((await stored(run, traceId))?.name).toBe("ahead");
  });

  it("OTLP: a span starting more than a day ahead is rejected alone in partial_success; the request's other spans are stored", async () => {
    const project = `future-${randomHex(4)}`;
    const traceHex = randomHex(16);
    const [rootHex, futureHex] = [randomHex(8), randomHex(8)];
    const spans = [
      otlpSpan({ trace: traceHex, span: rootHex, name: "now" }),
      otlpSpan({ trace: traceHex, span: futureHex, parent: rootHex, name: "future", startMs: Date.UTC(2500, 0, 1) }),
    ];
    const response = await postOtlp(protobufBody(exportRequest(spans)), { headers: { Authorization: `Bearer ${tenant.apiKey}`, project } });
    expect(response.status).toBe(200);
    expect(new TextDecoder().decode(new Uint8Array(await response.arrayBuffer()))).toContain("24 hours ahead");
    const { body: projects } = await call(`/v2/projects?project_name=${project}`, { as: tenant });
    const projectId = projects[0].id as string;
    const db = await recordsOf(projectId);
    const names = await db.prepare("SELECT name FROM records WHERE project_id = ? AND record_type = 'span'").bind(projectId).all<{ name: string }>();
    expect(names.results.map((r) => r.name)).toEqual(["now"]);
  });
});
