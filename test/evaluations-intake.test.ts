/**
 * No record left unscored without a trace (issue 34: "no evaluator is ever stuck without saying
 * why"; docs/evaluations.md "Deferred results"). The evaluations bench once lost a whole
 * request's records: its scoring message, sent after the answer, never arrived, and nothing said
 * so. A write to a run with scorers now stores intake markers with its records; the consumer
 * deletes a marker once its message is handled, and the cron sends again those past due.
 */
import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import type { Env } from "../src/env";
import { sweepDueResults } from "../src/evaluations/due-results";
import { hexToUuid } from "../src/otlp/otel-ids";
import { type PartitionedProject, fetchAs, projectOn } from "./support/partitioned-project";
import { type Tenant, createTenant } from "./support/tenants";
import { exportRequest, otlpSpan, postOtlpWith, protobufBody, randomHex } from "./support/otlp-requests";
import { until } from "./support/until";

let tenant: Tenant;
let p: PartitionedProject;
let scorer: string;
let name: string;
const shard = () => (env as unknown as Record<string, D1Database>).SHARD_0!;

/** A queue whose sends fail, as a send after the write's answer may (or never run at all). */
const lostQueue = {
  send: async () => {
    throw new Error("queue unavailable");
  },
  sendBatch: async () => {
    throw new Error("queue unavailable");
  },
};

async function results(ids: string[]) {
  const { results } = await shard()
    .prepare("SELECT record_id, status, value FROM evaluation_results WHERE project_id = ?1 AND scorer_id = ?2 AND record_id IN (SELECT value FROM json_each(?3))")
    .bind(p.projectId, scorer, JSON.stringify(ids))
    .all<{ record_id: string; status: string; value: number }>();
  return results;
}

const markers = async () => (await shard().prepare("SELECT count(*) AS n FROM evaluation_intake WHERE project_id = ?1").bind(p.projectId).first<{ n: number }>())!.n;

beforeAll(async () => {
  tenant = await createTenant();
  p = await projectOn(tenant, "SHARD_0");
  name = `intake_${crypto.randomUUID().slice(0, 8)}`;
  const made = await fetchAs(tenant, {}, "/v2/scorers", { name, scorer_type: "preset", scoreable_node_types: ["trace", "llm"] });
  scorer = made.body.id;
  expect((await fetchAs(tenant, {}, `/v2/scorers/${scorer}/version/preset`, { preset: "is_json", params: {} })).status).toBe(200);
  expect((await fetchAs(tenant, {}, `/v2/projects/${p.projectId}/log_streams/${p.logStreamId}/metric_settings`, { scorers: [{ id: scorer }] }, "PATCH")).status).toBe(200);
});

describe("records whose scoring message is lost", () => {
  it("are scored by the cron's sweep when the send after the write failed (batch traces and streamed spans)", async () => {
    const traces = Array.from({ length: 3 }, () => crypto.randomUUID());
    const spans = [crypto.randomUUID(), crypto.randomUUID()];
    const written = await fetchAs(tenant, { EVALUATION_QUEUE: lostQueue } as unknown as Record<string, string>, `/v2/projects/${p.projectId}/traces`, {
      log_stream_id: p.logStreamId,
      traces: traces.map((id, i) => ({ id, input: "q", output: i === 0 ? "plain" : '{"ok": 1}', spans: i === 0 ? [{ id: spans[0], type: "llm", input: "q", output: "[1]" }] : [] })),
    });
    expect(written.status, JSON.stringify(written.body)).toBe(200);
    const streamed = await fetchAs(tenant, { EVALUATION_QUEUE: lostQueue } as unknown as Record<string, string>, `/v2/projects/${p.projectId}/spans`, {
      log_stream_id: p.logStreamId,
      trace_id: traces[1],
      parent_id: traces[1],
      spans: [{ id: spans[1], type: "llm", name: "late", input: "q", output: "no" }],
    });
    expect(streamed.status, JSON.stringify(streamed.body)).toBe(200);
    const all = [...traces, ...spans];
    // Nothing scored, and nothing said: until the cron, past the markers' grace.
    await new Promise((r) => setTimeout(r, 500));
    expect(await results(all)).toEqual([]);
    expect(await markers()).toBe(2);
    // Not yet due: the messages' own time is left to them.
    await sweepDueResults(env, Date.now());
    await new Promise((r) => setTimeout(r, 500));
    expect(await results(all)).toEqual([]);

    await sweepDueResults(env, Date.now() + 3 * 60_000);
    const scored = await until("the lost records scored", async () => {
      const r = await results(all);
      return r.length === all.length ? r : null;
    });
    const value = new Map(scored.map((r) => [r.record_id, r.value]));
    expect(all.map((id) => value.get(id))).toEqual([0, 1, 1, 1, 0]);
    expect(scored.every((r) => r.status === "success")).toBe(true);
    // Handled: the markers are gone, and a later sweep sends nothing again.
    await until("the markers settled", async () => (await markers()) === 0);
  });

  it("are scored by the cron's sweep when the send after a trace's PATCH failed", async () => {
    // No output yet: not scored (not final); the PATCH that brings it asks for the scoring.
    const id = crypto.randomUUID();
    expect((await fetchAs(tenant, {}, `/v2/projects/${p.projectId}/traces`, { log_stream_id: p.logStreamId, traces: [{ id, input: "q" }] })).status).toBe(200);
    await until("the first write's marker settled", async () => (await markers()) === 0);
    expect((await results([id])).map((r) => r.status)).toEqual(["not_applicable"]);
    const patched = await fetchAs(tenant, { EVALUATION_QUEUE: lostQueue } as unknown as Record<string, string>, `/v2/projects/${p.projectId}/traces/${id}`, { log_stream_id: p.logStreamId, output: '{"ok": true}' }, "PATCH");
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(await markers()).toBe(1);
    await sweepDueResults(env, Date.now() + 3 * 60_000);
    await until("the patched record scored", async () => (await results([id]))[0]?.status === "success");
    expect((await results([id]))[0]!.value).toBe(1);
    await until("the PATCH's marker settled", async () => (await markers()) === 0);
  });

  it("are scored by the cron's sweep when the send after an OTLP export failed", async () => {
    const trace = randomHex(16);
    const [root, child] = [randomHex(8), randomHex(8)];
    const spans = [otlpSpan({ trace, span: root, name: "root", durationMs: 20 }), otlpSpan({ trace, span: child, parent: root, name: "child", durationMs: 5 })];
    const answer = await postOtlpWith({ ...env, EVALUATION_QUEUE: lostQueue } as unknown as Env, protobufBody(exportRequest(spans)), {
      // projectOn's log stream is named "default".
      headers: { "Service-API-Key": tenant.apiKey, project: p.projectId, logstream: "default" },
    });
    expect(answer.status, await answer.text()).toBe(200);
    // The scorer scores traces and llm spans: of this export, the trace.
    const ids = [hexToUuid(trace)];
    expect(await markers()).toBe(1);
    await sweepDueResults(env, Date.now() + 3 * 60_000);
    const scored = await until("the exported records scored", async () => {
      const r = await results(ids);
      return r.length === ids.length ? r : null;
    });
    // is_json on the trace's output: scored, or not applicable with its reason; never left silent.
    expect(["success", "not_applicable"]).toContain(scored[0]!.status);
    await until("the export's marker settled", async () => (await markers()) === 0);
  });

  it("delivered messages settle their markers; a run without scorers stores none", async () => {
    const id = crypto.randomUUID();
    expect((await fetchAs(tenant, {}, `/v2/projects/${p.projectId}/traces`, { log_stream_id: p.logStreamId, traces: [{ id, input: "q", output: "{}" }] })).status).toBe(200);
    await until("scored", async () => (await results([id])).length === 1);
    await until("its marker settled", async () => (await markers()) === 0);

    const other = await fetchAs(tenant, {}, `/v2/projects/${p.projectId}/log_streams`, { name: "unscored" });
    expect((await fetchAs(tenant, {}, `/v2/projects/${p.projectId}/traces`, { log_stream_id: other.body.id, traces: [{ id: crypto.randomUUID(), input: "q", output: "{}" }] })).status).toBe(200);
    expect(await markers()).toBe(0);
  });
});
