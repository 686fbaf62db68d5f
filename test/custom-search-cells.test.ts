/**
 * custom_search from the pre-aggregated cells (issue 29; src/analytics/custom-search.ts,
 * customCellPlan; docs/analytics.md): over traces without a filter, ungrouped or grouped by name
 * or tags, details that name metrics are answered from the cells, and their figures are the
 * scan's: Count, Sum, Average, Min, Max, PercentageTrue and PercentageFalse exactly, percentiles
 * of duration_ns within 1% (the cells' histogram). The scan's answer is the same request with a
 * filter that keeps every trace (a filter is never pre-aggregated).
 */
import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { requestUpkeep } from "../src/upkeep/upkeep-request";
import { createRun, postTraces, type Run } from "./deletion-fixtures";
import { call } from "./support/client";
import { recordsOf } from "./support/record-dbs";
import { createTenant, type Tenant } from "./support/tenants";

const T0 = Date.UTC(2026, 7, 3, 0, 0);
const HOURS = 3;
const TRACES = 60;

let tenant: Tenant;
let run: Run;

/** A small deterministic generator, so a failure reproduces. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648;
  };
}

beforeAll(async () => {
  tenant = await createTenant();
  run = await createRun(tenant);
  const next = random(29);
  const traces = Array.from({ length: TRACES }, (_, i) => ({
    id: crypto.randomUUID(),
    name: ["checkout", "search", "refund"][i % 3],
    input: `question ${i}`,
    output: `answer ${i}`,
    tags: i % 4 === 0 ? ["vip", "eu"] : i % 4 === 1 ? ["eu"] : [],
    created_at: new Date(T0 + Math.floor(next() * HOURS * 3_600_000)).toISOString(),
    // Some traces without a cost, some flags 0: Count, Sum and the percentages see each.
    metrics: { duration_ns: 1_000_000 + Math.floor(next() * 90_000_000), ...(i % 5 === 0 ? {} : { cost: Math.round(next() * 1e6) / 1e6 }), flagged: i % 3 === 0 ? 1 : 0 },
    spans: [],
  }));
  await postTraces(tenant, run, traces);
  const db = await recordsOf(run.projectId);
  const shard = db === env.SHARD_0 ? "SHARD_0" : db === env.SHARD_1 ? "SHARD_1" : "DB";
  await requestUpkeep(env, shard);
  for (let i = 0; i < 300 && (await db.prepare("SELECT count(*) AS n FROM metric_dirty_hours").first<{ n: number }>())!.n > 0; i += 1) await new Promise((r) => setTimeout(r, 100));
  expect((await db.prepare("SELECT count(*) AS n FROM metric_dirty_hours").first<{ n: number }>())!.n).toBe(0);
});

const DETAILS = [
  { id: "count", metric_name: "duration_ns", aggregation: "Count" },
  { id: "sum", metric_name: "cost", aggregation: "Sum" },
  { id: "avg", metric_name: "metrics/cost", aggregation: "Average" },
  { id: "min", metric_name: "duration_ns", aggregation: "Min" },
  { id: "max", metric_name: "duration_ns", aggregation: "Max" },
  { id: "p50", metric_name: "duration_ns", aggregation: "P50" },
  { id: "p95", metric_name: "duration_ns", aggregation: "P95" },
  { id: "true", metric_name: "flagged", aggregation: "PercentageTrue" },
  { id: "false", metric_name: "flagged", aggregation: "PercentageFalse" },
  { id: "costs", metric_name: "cost", aggregation: "Count" },
];

const custom = (body: Record<string, unknown>) =>
  call(`/v2/projects/${run.projectId}/metrics/custom_search`, {
    as: tenant,
    body: { log_stream_id: run.logStreamId, start_time: new Date(T0).toISOString(), end_time: new Date(T0 + HOURS * 3_600_000).toISOString(), metric_details: DETAILS, ...body },
  });
/** A filter every trace of the window passes: the same question, answered by the scan. */
const KEEP_ALL = { filter_tree: { filter: { type: "date", column_id: "created_at", operator: "gte", value: new Date(T0 - 1).toISOString() } } };

function expectSame(id: string, cells: number | null, scan: number | null, where: string): boolean {
  if (scan === null || cells === null) {
    expect(cells, `${id} ${where}`).toBe(scan);
    return false;
  }
  const tolerance = id.startsWith("p") ? 0.01 : 1e-9;
  expect(Math.abs(cells - scan), `${id} ${where}: ${cells} vs ${scan}`).toBeLessThanOrEqual(tolerance * Math.max(1, Math.abs(scan)));
  return id.startsWith("p") && cells !== scan;
}

describe("custom_search from the pre-aggregated cells", () => {
  for (const [label, body] of [
    ["ungrouped, 1-hour buckets", { interval_minutes: 60 }],
    ["ungrouped, one bucket over the window", { interval_minutes: HOURS * 60 }],
    ["by name, 1-hour buckets", { interval_minutes: 60, group_by: "name" }],
    ["by tags, 90-minute buckets (the middle hour cut: scanned, merged with cells)", { interval_minutes: 90, group_by: "tags" }],
  ] as const) {
    it(`answers as the scan: ${label}`, async () => {
      const [cells, scan] = await Promise.all([custom(body), custom({ ...body, ...KEEP_ALL })]);
      expect(cells.status, JSON.stringify(cells.body)).toBe(200);
      expect(scan.status, JSON.stringify(scan.body)).toBe(200);
      expect(cells.body.group_by_columns).toEqual(scan.body.group_by_columns);
      let approximated = false;
      for (const { id } of DETAILS) {
        approximated = expectSame(id, cells.body.aggregate_metrics[id], scan.body.aggregate_metrics[id], "aggregate") || approximated;
        const cellBuckets = cells.body.bucketed_metrics[id] as Record<string, number | string | null>[];
        const scanBuckets = scan.body.bucketed_metrics[id] as Record<string, number | string | null>[];
        expect(cellBuckets.length).toBe(scanBuckets.length);
        cellBuckets.forEach((bucket, b) => {
          expect(Object.keys(bucket).sort()).toEqual(Object.keys(scanBuckets[b]!).sort());
          for (const key of Object.keys(bucket)) {
            if (key === "start_bucket_time" || key === "end_bucket_time") expect(bucket[key]).toBe(scanBuckets[b]![key]);
            else approximated = expectSame(id, bucket[key] as number | null, scanBuckets[b]![key] as number | null, `bucket ${b} ${key}`) || approximated;
          }
        });
      }
      // The percentiles came from the cells' histogram (some differ from the exact ones, within 1%):
      // the answer really was pre-aggregated, not scanned.
      expect(approximated).toBe(true);
    });
  }
});
