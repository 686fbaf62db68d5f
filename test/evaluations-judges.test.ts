/**
 * Judges that behave (contract section 15), without a model: integrations (secrets never
 * returned nor stored in clear, address rules, roles), and the checks made before any call: a
 * scorer past its daily budget and a judge past its integration's requests per minute leave
 * their records `pending` with the reason, a missing integration leaves `error`. The calls
 * themselves are tested over real HTTP in test/node/evaluations-judge.test.ts.
 */
import { createMessageBatch, env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import type { EvaluationMessage } from "../src/env";
import { handleEvaluationQueue } from "../src/evaluations/evaluation-consumer";
import { takePace } from "../src/evaluations/judge-calls";
import { call } from "./support/client";
import { recordsOf } from "./support/record-dbs";
import { addUser, createTenant, type Tenant } from "./support/tenants";

let admin: Tenant;
let member: Tenant;
let projectId: string;

beforeAll(async () => {
  admin = await createTenant();
  member = await addUser(admin, "member");
  projectId = (await call("/v2/projects", { as: admin, body: { name: "judges" } })).body.id;
});

async function judgeOn(name: string, scorer: Record<string, unknown>) {
  const id = (await call("/v2/scorers", { as: admin, body: { name, scorer_type: "llm", scoreable_node_types: ["trace"], ...scorer } })).body.id;
  expect((await call(`/v2/scorers/${id}/version/llm`, { as: admin, body: { user_prompt: "{output}", model_name: "judge-model" } })).status).toBe(200);
  const run = (await call(`/v2/projects/${projectId}/log_streams`, { as: admin, body: { name } })).body.id;
  expect((await call(`/v2/projects/${projectId}/log_streams/${run}/metric_settings`, { as: admin, method: "PATCH", body: { scorers: [{ id }] } })).status).toBe(200);
  return { id, run };
}

/** Writes traces and runs the consumer on them now (the queue's own delivery may come too: results are written once). */
async function writeAndScore(run: string, count: number) {
  const ids = Array.from({ length: count }, () => crypto.randomUUID());
  expect((await call(`/v2/projects/${projectId}/traces`, { as: admin, body: { log_stream_id: run, traces: ids.map((id) => ({ id, input: "q", output: "a" })) } })).status).toBe(200);
  const body: EvaluationMessage = { kind: "score", organizationId: admin.organizationId, projectId, runId: run, recordIds: ids };
  await handleEvaluationQueue(createMessageBatch<EvaluationMessage>("trace-store-evaluations", [{ id: crypto.randomUUID(), timestamp: new Date(), attempts: 1, body }]), env);
  const db = await recordsOf(projectId);
  const rows = await db.prepare("SELECT id, metric_info FROM records WHERE project_id = ?1 AND id IN (SELECT value FROM json_each(?2))").bind(projectId, JSON.stringify(ids)).all<{ id: string; metric_info: string | null }>();
  return rows.results.map((r) => (r.metric_info ? JSON.parse(r.metric_info) : {}));
}

describe("judge integrations", () => {
  it("never returns nor stores the key in clear, and refuses members and unsafe addresses", async () => {
    const put = await call("/v2/integrations/custom", { as: admin, method: "PUT", body: { endpoint: "http://127.0.0.1:9/v1/", api_key_value: "sk-very-secret-key", models: ["judge-model"], requests_per_minute: 1 } });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body).toMatchObject({ name: "custom", endpoint: "http://127.0.0.1:9/v1", api_key_header: "Authorization", models: ["judge-model"], default_model: "judge-model", max_concurrency: 4, requests_per_minute: 1 });
    const listed = await call("/v2/integrations", { as: member });
    expect(listed.body).toHaveLength(1);
    for (const text of [JSON.stringify(put.body), JSON.stringify(listed.body), JSON.stringify(await env.DB.prepare("SELECT * FROM judge_integrations").all())]) expect(text).not.toContain("sk-very-secret-key");
    expect((await call("/v2/integrations/custom", { as: member, method: "PUT", body: { endpoint: "http://127.0.0.1:9/v1", api_key_value: "k", models: ["m"] } })).status).toBe(403);
    expect((await call("/v2/integrations/custom", { as: admin, method: "PUT", body: { endpoint: "ftp://example.com", api_key_value: "k", models: ["m"] } })).status).toBe(422);
    expect((await call("/v2/integrations/openai", { as: member, method: "DELETE" })).status).toBe(403);
    expect((await call("/v2/integrations/openai", { as: admin, method: "DELETE" })).status).toBe(404);
  });
});

describe("judges that say why they wait", () => {
  it("leaves records past the daily budget pending with the reason", async () => {
    const { id, run } = await judgeOn("budgeted", { daily_budget: 0 });
    const infos = await writeAndScore(run, 2);
    for (const info of infos) expect(info.budgeted).toMatchObject({ status_type: "pending", message: expect.stringContaining("daily budget of 0 judge calls is spent") });
    // Due after midnight UTC: the delayed message's time, and the cron's sweep's if it is lost (src/evaluations/due-results.ts).
    const midnightUs = (Math.floor(Date.now() / 86_400_000) + 1) * 86_400_000_000;
    const due = await (await recordsOf(projectId)).prepare("SELECT due_at FROM evaluation_results WHERE scorer_id = ?1").bind(id).all<{ due_at: number }>();
    expect(due.results).toHaveLength(2);
    for (const row of due.results) expect(Math.abs(row.due_at - midnightUs - 5_000_000)).toBeLessThan(2_000_000);
    const scorer = await call(`/v2/scorers/${id}`, { as: member });
    expect(scorer.body.counts).toEqual({ pending: 2, success: 0, error: 0 });
  });

  it("makes no more calls than the integration's requests per minute, and says so", async () => {
    const { run } = await judgeOn("paced", {});
    const infos = await writeAndScore(run, 3);
    const messages = infos.map((i) => String(i.paced?.message));
    // At most one call a minute was made (it failed: nothing listens; retried later); the others wait for the pace.
    // (The queue's own delivery of the write may run beside this one: the bound holds across both.)
    for (const m of messages) expect(m).toMatch(/requests per minute|could not be reached/);
    expect(messages.filter((m) => m.includes("requests per minute")).length).toBeGreaterThanOrEqual(2);
    const perMinute = await env.DB.prepare("SELECT max(calls) AS n FROM judge_minute_calls WHERE organization_id = ?1").bind(admin.organizationId).first<{ n: number }>();
    expect(perMinute!.n).toBe(1);
  });

  it("keeps the pace over any 60 s, across the turn of a UTC minute", async () => {
    // 4 requests per minute: 4 calls in the last second of a minute, then none in the first
    // seconds of the next (per UTC minute they fitted: 8 calls in 2 s), the next only once the
    // first ones are 70 s old.
    const org = crypto.randomUUID();
    const minuteEnd = (Math.floor(Date.now() / 60_000) + 10) * 60_000;
    for (let i = 0; i < 4; i++) expect(await takePace(env.DB, org, "custom", minuteEnd - 500, 1, 4)).toBe(true);
    expect(await takePace(env.DB, org, "custom", minuteEnd - 400, 1, 4)).toBe(false);
    expect(await takePace(env.DB, org, "custom", minuteEnd + 500, 1, 4)).toBe(false);
    expect(await takePace(env.DB, org, "custom", minuteEnd + 55_000, 1, 4)).toBe(false);
    expect(await takePace(env.DB, org, "custom", minuteEnd + 70_000, 2, 4)).toBe(true);
    expect(await takePace(env.DB, org, "custom", minuteEnd + 71_000, 3, 4)).toBe(false);
    expect(await takePace(env.DB, org, "custom", minuteEnd + 71_000, 2, 4)).toBe(true);
    // Another integration or organization has its own pace.
    expect(await takePace(env.DB, org, "openai", minuteEnd + 71_000, 4, 4)).toBe(true);
    expect(await takePace(env.DB, crypto.randomUUID(), "custom", minuteEnd + 71_000, 4, 4)).toBe(true);
  });

  it("leaves an error naming what is missing when no integration serves the judge", async () => {
    expect((await call("/v2/integrations/custom", { as: admin, method: "DELETE" })).status).toBe(200);
    const { id, run } = await judgeOn("orphan", {});
    const [info] = await writeAndScore(run, 1);
    expect(info!.orphan).toMatchObject({ status_type: "error", message: expect.stringContaining("PUT /v2/integrations/custom") });
    const scorer = await call(`/v2/scorers/${id}`, { as: member });
    expect(scorer.body.last_error.message).toContain("no \"custom\" judge integration");
  });
});
