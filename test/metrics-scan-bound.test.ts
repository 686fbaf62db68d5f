/**
 * No metrics request scans without bound (issue 29, point 3; src/analytics/scan-bound.ts): with a
 * backlog of stale cells (hours marked while the upkeep is held off) larger than the bound,
 * metrics/search answers 503 with Retry-After and says the cells are being recomputed, and
 * custom_search over a window too large to scan says to narrow it; once the upkeep has caught up
 * the cells answer metrics/search exactly, and smaller windows answer all along. The backlog is
 * written by SQL (copies of one ingested trace), so the test's data costs seconds, not an ingest.
 */
import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { requestUpkeep } from "../src/upkeep/upkeep-request";
import { createRun, postTraces, type Run } from "./deletion-fixtures";
import { call } from "./support/client";
import { copyRecordBySql } from "./support/record-copies";
import { recordsOf } from "./support/record-dbs";
import { createTenant, type Tenant } from "./support/tenants";
import { withUpkeepPaused } from "./support/upkeep-paused";

const BOUND = Number(env.METRICS_SCAN_MAX_RECORDS);
const BACKLOG = BOUND + 1_000;
const T0 = Date.UTC(2026, 5, 1, 0, 0);
const HOURS = 4;

let tenant: Tenant;
let run: Run;
let db: D1Database;
let shard: string;
const SEED_ID = crypto.randomUUID();

beforeAll(async () => {
  tenant = await createTenant("admin");
  run = await createRun(tenant);
  await postTraces(tenant, run, [{ id: SEED_ID, name: "seed", input: "q", output: "a", created_at: new Date(T0).toISOString(), metrics: { duration_ns: 5 }, spans: [] }]);
  db = await recordsOf(run.projectId);
  shard = db === env.SHARD_0 ? "SHARD_0" : db === env.SHARD_1 ? "SHARD_1" : "DB";
});

/** Copies of the seed trace spread over HOURS hours, inserted by SQL in batches (their triggers mark the hours). */
async function writeBacklog(): Promise<void> {
  await copyRecordBySql(db, { projectId: run.projectId, sourceId: SEED_ID, copies: BACKLOG, spacingMs: Math.floor((HOURS * 3_600_000_000 - 1) / (BACKLOG + 1)) });
}

const window = { start_time: new Date(T0).toISOString(), end_time: new Date(T0 + HOURS * 3_600_000).toISOString(), interval: 60 };
const metrics = (body: Record<string, unknown>) => call(`/v2/projects/${run.projectId}/metrics/search`, { as: tenant, body: { log_stream_id: run.logStreamId, ...body } });
const custom = (body: Record<string, unknown>) =>
  call(`/v2/projects/${run.projectId}/metrics/custom_search`, {
    as: tenant,
    body: { log_stream_id: run.logStreamId, metric_details: [{ id: "d", metric_name: "duration_ns", aggregation: "P50" }], ...body },
  });

describe("the metrics scan bound", () => {
  it("answers 503 with Retry-After past the bound while cells are stale, and exactly once the upkeep caught up", async () => {
    // Cells computed for the seed's hour first, so that metrics/search reads cells where it can.
    await requestUpkeep(env, shard);
    for (let i = 0; i < 200 && (await db.prepare("SELECT count(*) AS n FROM metric_dirty_hours").first<{ n: number }>())!.n > 0; i += 1) await new Promise((r) => setTimeout(r, 100));
    await withUpkeepPaused(db, async () => {
      await writeBacklog();
      const marked = (await db.prepare("SELECT count(*) AS n FROM metric_dirty_hours").first<{ n: number }>())!.n;
      expect(marked).toBeGreaterThanOrEqual(HOURS);
      const refused = await metrics(window);
      expect(refused.status, JSON.stringify(refused.body)).toBe(503);
      expect(refused.headers.get("Retry-After")).toBe("30");
      expect(refused.body.detail).toMatch(/being recomputed/);
      expect(refused.body.detail).toContain(BOUND.toLocaleString("en-US"));
      // A window under the bound answers, from the scan, meanwhile.
      const hour = await metrics({ ...window, end_time: new Date(T0 + 3_600_000).toISOString() });
      expect(hour.status, JSON.stringify(hour.body)).toBe(200);
      expect(hour.body.aggregate_metrics.trace_count).toBeGreaterThan(0);
      expect(hour.body.aggregate_metrics.trace_count).toBeLessThanOrEqual(BOUND);
      // custom_search of a metric the cells hold waits for them as metrics/search does.
      const lagging = await custom({ start_time: window.start_time, end_time: window.end_time, interval_minutes: 60 });
      expect(lagging.status, JSON.stringify(lagging.body)).toBe(503);
      expect(lagging.headers.get("Retry-After")).toBe("30");
      expect(lagging.body.detail).toMatch(/being recomputed/);
      // One of a column (no cell holds it) would scan the window whatever the upkeep does: narrow it.
      const tooWide = await custom({ start_time: window.start_time, end_time: window.end_time, interval_minutes: 60, metric_details: [{ id: "s", metric_name: "status_code", aggregation: "Max" }] });
      expect(tooWide.status, JSON.stringify(tooWide.body)).toBe(503);
      expect(tooWide.headers.get("Retry-After")).toBe("300");
      expect(tooWide.body.detail).toMatch(/narrow the window/);
    });
    // The upkeep catches up (started as a write would start it): then the cells answer the whole window.
    await requestUpkeep(env, shard);
    let answer = await metrics(window);
    for (let i = 0; i < 300 && answer.status !== 200; i += 1) {
      await new Promise((r) => setTimeout(r, 100));
      answer = await metrics(window);
    }
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body.aggregate_metrics.trace_count).toBe(BACKLOG + 1);
    expect(answer.body.bucketed_metrics.trace_count.map((b: { value: number }) => b.value).reduce((a: number, b: number) => a + b, 0)).toBe(BACKLOG + 1);
    // custom_search of metrics is answered from the cells too (issue 29: it was always refused past the bound).
    const wide = await custom({
      start_time: window.start_time,
      end_time: window.end_time,
      interval_minutes: 60,
      metric_details: [
        { id: "n", metric_name: "duration_ns", aggregation: "Count" },
        { id: "p", metric_name: "metrics/duration_ns", aggregation: "P50" },
        { id: "max", metric_name: "duration_ns", aggregation: "Max" },
      ],
    });
    expect(wide.status, JSON.stringify(wide.body)).toBe(200);
    expect(wide.body.aggregate_metrics).toEqual({ n: BACKLOG + 1, p: 5, max: 5 });
    expect(wide.body.bucketed_metrics.n.map((b: { value: number }) => b.value).reduce((a: number, b: number) => a + b, 0)).toBe(BACKLOG + 1);
    // A column, or a filter, still scans: the wide window stays refused, a narrow one answers.
    expect((await custom({ start_time: window.start_time, end_time: window.end_time, interval_minutes: 60, metric_details: [{ id: "s", metric_name: "status_code", aggregation: "Max" }] })).status).toBe(503);
    const filtered = { filter_tree: { filter: { type: "text", column_id: "name", operator: "eq", value: "seed" } } };
    expect((await custom({ start_time: window.start_time, end_time: window.end_time, interval_minutes: 60, ...filtered })).status).toBe(503);
    const narrow = await custom({ start_time: window.start_time, end_time: new Date(T0 + 3_600_000).toISOString(), interval_minutes: 60, ...filtered });
    expect(narrow.status, JSON.stringify(narrow.body)).toBe(200);
  }, 120_000);
});
