/**
 * Tenancy and size safety of search: another organization's project or run is a 404 exactly like
 * a missing one and its records never appear (not even in counts); a 5,000-element `one_of`
 * works (D1 refuses statements with more than 100 bound parameters); every search is one D1
 * round trip.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { call } from "./support/client";
import { createTenant, type Tenant } from "./support/tenants";
import { createRun, type SearchFixture } from "./search-dataset";

interface Org {
  tenant: Tenant;
  fixture: SearchFixture;
  traceIds: string[];
  spanIds: string[];
}

async function seed(prefix: string, count: number): Promise<Org> {
  const tenant = await createTenant("member");
  const fixture = await createRun(tenant);
  const traceIds: string[] = [];
  const spanIds: string[] = [];
  const traces = Array.from({ length: count }, (_, i) => {
    const id = crypto.randomUUID();
    const spanId = crypto.randomUUID();
    traceIds.push(id);
    spanIds.push(spanId);
    return {
      id,
      name: `${prefix}-trace-${i}`,
      created_at: `2026-03-01T00:00:${String(i % 60).padStart(2, "0")}Z`,
      user_metadata: { env: "prod" },
      tags: ["shared"],
      metrics: { toxicity: i / count },
      spans: [{ id: spanId, type: "llm", name: `${prefix}-span-${i}`, model: "gpt-4o", input: [{ role: "user", content: "hi" }] }],
    };
  });
  const res = await call(`/v2/projects/${fixture.projectId}/traces`, { as: tenant, body: { log_stream_id: fixture.runId, traces } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return { tenant, fixture, traceIds, spanIds };
}

function search(as: Tenant, projectId: string, route: string, body: Record<string, unknown>) {
  return call(`/v2/projects/${projectId}/${route}/partial_search`, { as, body });
}

let a: Org;
let b: Org;

beforeAll(async () => {
  a = await seed("a", 40);
  b = await seed("b", 40);
});

describe("search tenancy", () => {
  it("answers 404 for another organization's project, with its own run id too, like a missing project", async () => {
    const foreign = await search(a.tenant, b.fixture.projectId, "traces", { log_stream_id: b.fixture.runId });
    const missing = await search(a.tenant, crypto.randomUUID(), "traces", { log_stream_id: b.fixture.runId });
    expect(foreign.status).toBe(404);
    expect(missing.status).toBe(404);
    expect(foreign.body).toEqual(missing.body);
  });

  it("answers 404 for another organization's run named under the caller's own project", async () => {
    for (const route of ["traces", "spans", "sessions"]) {
      const res = await search(a.tenant, a.fixture.projectId, route, { log_stream_id: b.fixture.runId });
      expect(res.status).toBe(404);
    }
    const full = await call(`/v2/projects/${a.fixture.projectId}/spans/search`, { as: a.tenant, body: { log_stream_id: b.fixture.runId } });
    expect(full.status).toBe(404);
  });

  it("answers 404 for a run of another project, and for a run named as the wrong kind", async () => {
    const other = await createRun(a.tenant);
    expect((await search(a.tenant, a.fixture.projectId, "traces", { log_stream_id: other.runId })).status).toBe(404);
    const experiment = await call(`/v2/projects/${a.fixture.projectId}/experiments`, { as: a.tenant, body: { name: `e-${crypto.randomUUID()}`, task_type: 16 } });
    expect(experiment.status, JSON.stringify(experiment.body)).toBe(200);
    expect((await search(a.tenant, a.fixture.projectId, "traces", { log_stream_id: experiment.body.id })).status).toBe(404);
    const own = await search(a.tenant, a.fixture.projectId, "traces", { experiment_id: experiment.body.id });
    expect(own.status).toBe(200);
    expect(own.body.records).toEqual([]);
  });

  it("never returns another organization's records, whatever the filter", async () => {
    const everything = await search(a.tenant, a.fixture.projectId, "spans", { log_stream_id: a.fixture.runId, limit: 1000 });
    expect(everything.body.records.map((r: { id: string }) => r.id).sort()).toEqual([...a.spanIds].sort());
    for (const filter of [
      { type: "id", column_id: "id", operator: "one_of", value: b.spanIds },
      { type: "id", column_id: "trace_id", operator: "one_of", value: b.traceIds },
      { type: "id", column_id: "run_id", operator: "eq", value: b.fixture.runId },
      { type: "text", column_id: "name", operator: "contains", value: "b-span" },
    ]) {
      const res = await search(a.tenant, a.fixture.projectId, "spans", { log_stream_id: a.fixture.runId, filters: [filter] });
      expect(res.status).toBe(200);
      expect(res.body.records).toEqual([]);
    }
    // The side-table and metric plans stay inside the run too.
    for (const body of [
      { filters: [{ type: "text", column_id: "user_metadata.env", operator: "eq", value: "prod" }] },
      { filters: [{ type: "collection", column_id: "tags", operator: "contains", value: "shared" }] },
      { sort: { column_id: "metrics/toxicity", ascending: false } },
    ]) {
      const res = await search(a.tenant, a.fixture.projectId, "traces", { log_stream_id: a.fixture.runId, limit: 1000, ...body });
      expect(res.body.records.map((r: { id: string }) => r.id).sort()).toEqual([...a.traceIds].sort());
    }
  });

  it("does not count spans another organization filed under the caller's trace id", async () => {
    const intruder = await call(`/v2/projects/${b.fixture.projectId}/spans`, {
      as: b.tenant,
      body: { log_stream_id: b.fixture.runId, trace_id: a.traceIds[0], parent_id: a.traceIds[0], spans: [{ type: "tool", name: "intruder", input: "x" }] },
    });
    expect(intruder.status, JSON.stringify(intruder.body)).toBe(200);
    const res = await search(a.tenant, a.fixture.projectId, "traces", {
      log_stream_id: a.fixture.runId,
      include_counts: true,
      filters: [{ type: "id", column_id: "id", value: a.traceIds[0] }],
    });
    expect(res.body.records).toHaveLength(1);
    expect(res.body.records[0].num_spans).toBe(1);
    const spans = await search(a.tenant, a.fixture.projectId, "spans", { log_stream_id: a.fixture.runId, filters: [{ type: "id", column_id: "trace_id", value: a.traceIds[0] }] });
    expect(spans.body.records.map((r: { name: string }) => r.name)).toEqual(["a-span-0"]);
  });
});

describe("search size safety", () => {
  const randomIds = (n: number) => Array.from({ length: n }, () => crypto.randomUUID());

  it("answers a one_of of 5,000 ids (far beyond D1's 100 bound parameters)", async () => {
    const value = [...randomIds(2500), ...a.traceIds, ...randomIds(2500 - a.traceIds.length)];
    expect(value).toHaveLength(5000);
    const res = await search(a.tenant, a.fixture.projectId, "traces", { log_stream_id: a.fixture.runId, limit: 1000, filters: [{ type: "id", column_id: "id", operator: "one_of", value }] });
    expect(res.status, JSON.stringify(res.body).slice(0, 500)).toBe(200);
    expect(res.body.records.map((r: { id: string }) => r.id).sort()).toEqual([...a.traceIds].sort());
  });

  it("answers not_in, text one_of and tag one_of lists of 5,000 under a metric sort", async () => {
    const res = await search(a.tenant, a.fixture.projectId, "traces", {
      log_stream_id: a.fixture.runId,
      limit: 1000,
      sort: { column_id: "metrics/toxicity", ascending: false },
      filters: [
        { type: "id", column_id: "id", operator: "not_in", value: [...randomIds(4999), a.traceIds[0]] },
        { type: "text", column_id: "name", operator: "one_of", value: [...Array.from({ length: 4999 }, (_, i) => `x${i}`), "a-trace-1"], case_sensitive: false },
        { type: "collection", column_id: "tags", operator: "one_of", value: [...Array.from({ length: 4999 }, (_, i) => `t${i}`), "shared"] },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.body.records.map((r: { name: string }) => r.name)).toEqual(["a-trace-1"]);
  });

  it("makes one D1 round trip per search", async () => {
    // The first call resolves the API key (then cached); the search itself is one batch.
    await search(a.tenant, a.fixture.projectId, "traces", { log_stream_id: a.fixture.runId });
    for (const body of [
      { include_counts: true, include_code_metric_metadata: true },
      { sort: { column_id: "metrics/toxicity" } },
      { filters: [{ type: "text", column_id: "user_metadata.env", operator: "eq", value: "prod" }] },
    ]) {
      const res = await search(a.tenant, a.fixture.projectId, "traces", { log_stream_id: a.fixture.runId, ...body });
      expect(res.status).toBe(200);
      expect(res.headers.get("server-timing")).toContain('d1;desc="round trips";dur=1');
    }
  });
});
