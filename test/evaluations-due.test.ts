/**
 * The safety net of deferred scorer results (issue 34; docs/evaluations.md "Deferred results"):
 * pending results past due whose delayed message never came are claimed by the cron's sweep,
 * bounded per database, scored once by the queue's consumer, and never swept twice; a pending
 * result whose scorer no longer applies is settled with the reason instead of waiting forever.
 */
import { createExecutionContext, createScheduledController, env, waitOnExecutionContext } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { claimDueResults, DUE_GRACE_MS, sweepDueResults } from "../src/evaluations/due-results";
import worker from "../src/index";
import { call } from "./support/client";
import { recordsOf } from "./support/record-dbs";
import { createTenant, type Tenant } from "./support/tenants";
import { until } from "./support/until";

let admin: Tenant;
let projectId: string;

beforeAll(async () => {
  admin = await createTenant();
  projectId = (await call("/v2/projects", { as: admin, body: { name: "deferred" } })).body.id;
});

async function presetScorer(name: string) {
  const id = (await call("/v2/scorers", { as: admin, body: { name, scorer_type: "preset", scoreable_node_types: ["trace"] } })).body.id as string;
  expect((await call(`/v2/scorers/${id}/version/preset`, { as: admin, body: { preset: "is_json", params: {} } })).status).toBe(200);
  const row = await env.DB.prepare("SELECT version_id FROM scorers WHERE id = ?1").bind(id).first<{ version_id: string }>();
  return { id, versionId: row!.version_id };
}

describe("the cron's sweep of deferred results", () => {
  it("scores pending results past due once, bounded per run, settles those no scorer reaches, and leaves the others", async () => {
    const run = (await call(`/v2/projects/${projectId}/log_streams`, { as: admin, body: { name: "deferred" } })).body.id;
    const ids = Array.from({ length: 5 }, () => crypto.randomUUID());
    const [a, b, c, notDue, orphan] = ids as [string, string, string, string, string];
    // Written before any scorer is on the run: nothing scores them on the write.
    expect((await call(`/v2/projects/${projectId}/traces`, { as: admin, body: { log_stream_id: run, traces: ids.map((id) => ({ id, input: "q", output: '{"ok": true}' })) } })).status).toBe(200);
    const json = await presetScorer("deferred_json");
    const elsewhere = await presetScorer("not_on_this_run");
    expect((await call(`/v2/projects/${projectId}/log_streams/${run}/metric_settings`, { as: admin, method: "PATCH", body: { scorers: [{ id: json.id }] } })).status).toBe(200);

    // Pending results as a spent budget leaves them, their delayed messages lost.
    const db = await recordsOf(projectId);
    const nowUs = Date.now() * 1000;
    const pendingRow = (record: string, scorer: { id: string; versionId: string }, dueAt: number) =>
      db
        .prepare("INSERT INTO evaluation_results (project_id, record_id, scorer_id, version_id, run_id, status, info, reason, attempts, updated_at, due_at) VALUES (?1, ?2, ?3, ?4, ?5, 'pending', ?6, 'budget spent', 0, ?7, ?8)")
        .bind(projectId, record, scorer.id, scorer.versionId, run, JSON.stringify({ status_type: "pending", message: "budget spent", scorer_id: scorer.id, scorer_version: 1 }), nowUs - 7_200_000_000, dueAt);
    await db.batch([
      pendingRow(a, json, nowUs - 3_600_000_000),
      pendingRow(b, json, nowUs - 3_000_000_000),
      pendingRow(c, json, nowUs - 2_400_000_000),
      pendingRow(notDue, json, nowUs + 3_600_000_000),
      pendingRow(orphan, elsewhere, nowUs - 1_800_000_000),
    ]);
    const plan = await db.prepare(`EXPLAIN QUERY PLAN SELECT project_id, record_id, scorer_id FROM evaluation_results WHERE status = 'pending' AND due_at <= ?1 ORDER BY due_at LIMIT 200`).bind(nowUs).all<{ detail: string }>();
    expect(plan.results.map((r) => r.detail).join("\n")).toMatch(/USING (COVERING )?INDEX evaluation_results_due/);

    const result = async (record: string, scorer: string) =>
      db.prepare("SELECT status, reason, attempts, due_at FROM evaluation_results WHERE project_id = ?1 AND record_id = ?2 AND scorer_id = ?3").bind(projectId, record, scorer).first<{ status: string; reason: string | null; attempts: number; due_at: number | null }>();
    const metricInfo = async (record: string) => JSON.parse((await db.prepare("SELECT metric_info FROM records WHERE project_id = ?1 AND id = ?2").bind(projectId, record).first<{ metric_info: string | null }>())!.metric_info ?? "{}");

    // Bounded: a run of the sweep claims at most its limit, oldest due first.
    expect(await sweepDueResults(env, Date.now(), 2)).toBe(2);
    await until("the first two scored", async () => (await result(a, json.id))?.status === "success" && (await result(b, json.id))?.status === "success");
    expect((await result(c, json.id))!.status).toBe("pending");
    // The next run takes the rest that is due: c, and the orphan (its scorer is not on the run).
    expect(await sweepDueResults(env)).toBe(2);
    await until("c scored and the orphan settled", async () => (await result(c, json.id))?.status === "success" && (await result(orphan, elsewhere.id))?.status === "not_applicable");
    for (const record of [a, b, c]) {
      expect((await metricInfo(record)).deferred_json).toMatchObject({ status_type: "success", value: 1, scorer_id: json.id });
      expect((await result(record, json.id))!.due_at).toBeNull();
    }
    expect((await result(orphan, elsewhere.id))!.reason).toContain("no longer applies");
    expect((await metricInfo(orphan)).not_on_this_run).toMatchObject({ status_type: "not_applicable", message: expect.stringContaining("no longer applies") });
    // Nothing left that is due: a sweep claims nothing, and what is not due yet stays pending.
    expect(await sweepDueResults(env)).toBe(0);
    expect((await result(notDue, json.id))!.status).toBe("pending");
    // One result per record and scorer: the five claimed, and the orphan's record scored by the
    // run's own scorer on the way (a record the sweep scores gets every scorer of its run).
    const rows = await db.prepare("SELECT record_id, scorer_id, status FROM evaluation_results WHERE project_id = ?1").bind(projectId).all<{ record_id: string; scorer_id: string; status: string }>();
    expect(rows.results).toHaveLength(6);
    expect(rows.results.find((r) => r.record_id === orphan && r.scorer_id === json.id)?.status).toBe("success");

    // Its time comes (past the grace left to its own message): the sweep takes it, once.
    const later = Date.now() + 3_600_000 + DUE_GRACE_MS + 1000;
    const claimed = await claimDueResults(db, later);
    expect(claimed.map((r) => r.record_id)).toEqual([notDue]);
    expect(await claimDueResults(db, later)).toEqual([]);
  });

  it("runs on the minutely cron of the worker's entry point", async () => {
    const run = (await call(`/v2/projects/${projectId}/log_streams`, { as: admin, body: { name: "cron" } })).body.id;
    const record = crypto.randomUUID();
    expect((await call(`/v2/projects/${projectId}/traces`, { as: admin, body: { log_stream_id: run, traces: [{ id: record, input: "q", output: "not json" }] } })).status).toBe(200);
    const scorer = await presetScorer("cron_json");
    expect((await call(`/v2/projects/${projectId}/log_streams/${run}/metric_settings`, { as: admin, method: "PATCH", body: { scorers: [{ id: scorer.id }] } })).status).toBe(200);
    const db = await recordsOf(projectId);
    const nowUs = Date.now() * 1000;
    await db
      .prepare("INSERT INTO evaluation_results (project_id, record_id, scorer_id, version_id, run_id, status, info, reason, attempts, updated_at, due_at) VALUES (?1, ?2, ?3, ?4, ?5, 'pending', '{}', 'retry', 1, ?6, ?6)")
      .bind(projectId, record, scorer.id, scorer.versionId, run, nowUs - 600_000_000)
      .run();
    const ctx = createExecutionContext();
    await worker.scheduled(createScheduledController({ scheduledTime: new Date(), cron: "* * * * *" }), env, ctx);
    await waitOnExecutionContext(ctx);
    const scored = await until("the cron's pick-up scored", async () => {
      const row = await db.prepare("SELECT status, value FROM evaluation_results WHERE project_id = ?1 AND record_id = ?2").bind(projectId, record).first<{ status: string; value: number }>();
      return row?.status === "success" ? row : null;
    });
    expect(scored.value).toBe(0);
  });
});
