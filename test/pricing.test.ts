/**
 * Cost at ingestion and the model price routes (contract, section 9): an llm span with a model
 * and both token counts and no cost gets one on every intake path (batch, streaming, OTLP); a
 * cost the client sent is never overwritten, and a client's cost replaces a computed one;
 * organization overrides apply to spans written after them; the routes' answers, rights and 422s.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { call } from "./support/client";
import { type Tenant, addUser, createTenant } from "./support/tenants";
import { allRecordDbs } from "./support/record-dbs";
import { exportRequest, otlpSpan, postOtlp, protobufBody, randomHex } from "./support/otlp-requests";

const uuid = () => crypto.randomUUID();

let tenant: Tenant;
let projectId: string;
let logStreamId: string;

beforeAll(async () => {
  tenant = await createTenant();
  projectId = (await call("/v2/projects", { as: tenant, body: { name: "pricing" } })).body.id;
  logStreamId = (await call(`/v2/projects/${projectId}/log_streams`, { as: tenant, body: { name: "default" } })).body.id;
});

async function storedMetrics(where: string, value: string): Promise<{ metrics: Record<string, number>; derived: number }> {
  const { results } = await allRecordDbs.prepare(`SELECT metrics, derived_metrics FROM records WHERE ${where} = ?1`).bind(value).all<{ metrics: string; derived_metrics: number }>();
  expect(results).toHaveLength(1);
  return { metrics: JSON.parse(results[0]!.metrics), derived: results[0]!.derived_metrics };
}

function llmSpan(id: string, metrics: Record<string, number>, model: string | null = "gpt-4o-mini-2024-07-18", extra: Record<string, unknown> = {}) {
  return { id, type: "llm", name: "chat", model, input: [{ role: "user", content: "hi" }], output: { role: "assistant", content: "hello" }, metrics, ...extra };
}

async function ingestTrace(spans: unknown[], as: Tenant = tenant, project = projectId, stream = logStreamId, traceId = uuid()) {
  const response = await call(`/v2/projects/${project}/traces`, { as, body: { log_stream_id: stream, traces: [{ id: traceId, name: "t", spans }] } });
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return traceId;
}

const MINI = { input: 0.15, output: 0.6 };

describe("cost at ingestion", () => {
  it("is computed for an llm span with a model and both token counts (batch)", async () => {
    const id = uuid();
    await ingestTrace([llmSpan(id, { num_input_tokens: 1000, num_output_tokens: 200 })]);
    const { metrics, derived } = await storedMetrics("id", id);
    expect(metrics.cost).toBeCloseTo((1000 * MINI.input + 200 * MINI.output) / 1e6, 15);
    expect(derived & 1).toBe(1);
  });

  it("is not computed without a model, a token count, a known price, or for other kinds", async () => {
    const ids = [uuid(), uuid(), uuid(), uuid()];
    await ingestTrace([
      llmSpan(ids[0]!, { num_input_tokens: 10, num_output_tokens: 2 }, null),
      llmSpan(ids[1]!, { num_input_tokens: 10 }),
      llmSpan(ids[2]!, { num_input_tokens: 10, num_output_tokens: 2 }, "my-own-finetune"),
      { id: ids[3], type: "agent", name: "a", model: "gpt-4o", metrics: { num_input_tokens: 10, num_output_tokens: 2 } },
    ]);
    for (const id of ids) expect((await storedMetrics("id", id)).metrics.cost, id).toBeUndefined();
  });

  it("never overwrites a cost the client sent, and a client's cost replaces a computed one", async () => {
    const sent = uuid();
    const traceId = await ingestTrace([llmSpan(sent, { num_input_tokens: 1000, num_output_tokens: 200, cost: 42 })]);
    expect(await storedMetrics("id", sent)).toEqual({ metrics: { num_input_tokens: 1000, num_output_tokens: 200, cost: 42 }, derived: 0 });
    // The same span again without its cost (newer): the computed cost must not replace the client's.
    await ingestTrace([llmSpan(sent, { num_input_tokens: 1000, num_output_tokens: 200 }, undefined, { updated_at: new Date().toISOString() })], tenant, projectId, logStreamId, traceId);
    expect((await storedMetrics("id", sent)).metrics.cost).toBe(42);

    const computed = uuid();
    const other = await ingestTrace([llmSpan(computed, { num_input_tokens: 1000, num_output_tokens: 200 }, undefined, { updated_at: new Date().toISOString() })]);
    // An older write (no updated_at) that carries the client's cost: it still wins over the computed one.
    await ingestTrace([llmSpan(computed, { num_input_tokens: 1000, num_output_tokens: 200, cost: 7 })], tenant, projectId, logStreamId, other);
    expect(await storedMetrics("id", computed)).toEqual({ metrics: { num_input_tokens: 1000, num_output_tokens: 200, cost: 7 }, derived: 0 });
  });

  it("is computed for spans posted on their own (streaming)", async () => {
    const id = uuid();
    const traceId = uuid();
    const response = await call(`/v2/projects/${projectId}/spans`, {
      as: tenant,
      body: { log_stream_id: logStreamId, trace_id: traceId, parent_id: traceId, spans: [llmSpan(id, { num_input_tokens: 2000, num_output_tokens: 100 }, "claude-3-5-sonnet-20241022")] },
    });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    expect((await storedMetrics("id", id)).metrics.cost).toBeCloseTo((2000 * 3 + 100 * 15) / 1e6, 15);
  });

  it("is computed for OTLP spans", async () => {
    const name = `otlp-llm-${randomHex(4)}`;
    const trace = randomHex(16);
    const response = await postOtlp(
      protobufBody(
        exportRequest([
          otlpSpan({
            trace,
            span: randomHex(8),
            name,
            attributes: { "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 4000, "gen_ai.usage.output_tokens": 300 },
          }),
        ]),
      ),
      { headers: { "Service-API-Key": tenant.apiKey, project: "pricing-otlp" } },
    );
    expect(response.status).toBe(200);
    expect((await storedMetrics("record_type = 'span' AND name", name)).metrics.cost).toBeCloseTo((4000 * 2.5 + 300 * 10) / 1e6, 15);
  });
});

describe("price overrides", () => {
  it("apply to the organization's spans written after them, by exact name or family, and to no other organization", async () => {
    const own = await createTenant();
    const project = (await call("/v2/projects", { as: own, body: { name: "overrides" } })).body.id;
    const stream = (await call(`/v2/projects/${project}/log_streams`, { as: own, body: { name: "default" } })).body.id;
    const before = uuid();
    await ingestTrace([llmSpan(before, { num_input_tokens: 1_000_000, num_output_tokens: 1_000_000 }, "gpt-4o-2024-08-06")], own, project, stream);
    const put = await call("/v2/models/gpt-4o/price_overrides", { as: own, method: "PUT", body: { input_price: 1, output_price: 2 } });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body).toEqual({ name: "gpt-4o", price_overrides: { input_price: 1, output_price: 2 } });
    const after = uuid();
    await ingestTrace([llmSpan(after, { num_input_tokens: 1_000_000, num_output_tokens: 1_000_000 }, "gpt-4o-2024-08-06")], own, project, stream);
    expect((await storedMetrics("id", before)).metrics.cost).toBeCloseTo(12.5, 12); // the price when it was written
    expect((await storedMetrics("id", after)).metrics.cost).toBeCloseTo(3, 12);
    // Another organization keeps the built-in price.
    const elsewhere = uuid();
    await ingestTrace([llmSpan(elsewhere, { num_input_tokens: 1_000_000, num_output_tokens: 1_000_000 }, "gpt-4o")]);
    expect((await storedMetrics("id", elsewhere)).metrics.cost).toBeCloseTo(12.5, 12);

    const removed = await call("/v2/models/gpt-4o/price_overrides", { as: own, method: "DELETE" });
    expect(removed.body).toEqual({ name: "gpt-4o", price_overrides: null });
    const later = uuid();
    await ingestTrace([llmSpan(later, { num_input_tokens: 1_000_000, num_output_tokens: 1_000_000 }, "gpt-4o")], own, project, stream);
    expect((await storedMetrics("id", later)).metrics.cost).toBeCloseTo(12.5, 12);
  });
});

describe("the price routes", () => {
  it("answer the override and the built-in price of a path-encoded name", async () => {
    const own = await createTenant();
    const name = encodeURIComponent("openai/GPT-4o-mini-2024-07-18");
    expect((await call(`/v2/models/${name}/prices`, { as: own })).body).toEqual({ override: null, default: { input_price: 0.15, output_price: 0.6 } });
    expect((await call(`/v2/models/${name}/price_overrides`, { as: own, method: "PUT", body: { input_price: 0.5, output_price: 0.25 } })).status).toBe(200);
    expect((await call(`/v2/models/${name}/prices`, { as: own })).body).toEqual({
      override: { input_price: 0.5, output_price: 0.25 },
      default: { input_price: 0.15, output_price: 0.6 },
    });
    expect((await call("/v2/models/unknown-model/prices", { as: own })).body).toEqual({ override: null, default: null });
    const list = await call("/v2/models/price_overrides", { as: own });
    expect(list.body).toEqual([{ name: "openai/gpt-4o-mini-2024-07-18", price_overrides: { input_price: 0.5, output_price: 0.25 } }]);
    // Deleting twice is harmless.
    for (let i = 0; i < 2; i += 1) expect((await call(`/v2/models/${name}/price_overrides`, { as: own, method: "DELETE" })).status).toBe(200);
    expect((await call("/v2/models/price_overrides", { as: own })).body).toEqual([]);
  });

  it("let members read prices but not change them", async () => {
    const own = await createTenant();
    const member = await addUser(own, "member");
    expect((await call("/v2/models/gpt-4o/prices", { as: member })).status).toBe(200);
    expect((await call("/v2/models/gpt-4o/price_overrides", { as: member, method: "PUT", body: { input_price: 1, output_price: 1 } })).status).toBe(403);
    expect((await call("/v2/models/gpt-4o/price_overrides", { as: member, method: "DELETE" })).status).toBe(403);
  });

  it("refuse a negative or missing price with a 422 in FastAPI's shape", async () => {
    const bad = await call("/v2/models/gpt-4o/price_overrides", { as: tenant, method: "PUT", body: { input_price: -1 } });
    expect(bad.status).toBe(422);
    const locs = bad.body.detail.map((d: { loc: unknown[] }) => d.loc);
    expect(locs).toContainEqual(["body", "input_price"]);
    expect(locs).toContainEqual(["body", "output_price"]);
  });
});
