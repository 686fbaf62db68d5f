/**
 * The metrics routes' contract (section 9) beyond the figures the property test compares: every
 * bucket present (empty ones with counts 0 and other values null), the last one ending at
 * end_time, records hidden by the retention not counted, 422s in FastAPI's shape, and tenancy.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { call } from "./support/client";
import { type Tenant, createTenant } from "./support/tenants";

let tenant: Tenant;
let projectId: string;
let stream: string;

const search = (body: Record<string, unknown>, as: Tenant = tenant, project = projectId) =>
  call(`/v2/projects/${project}/metrics/search`, { as, body: { log_stream_id: stream, ...body } });
const custom = (body: Record<string, unknown>) => call(`/v2/projects/${projectId}/metrics/custom_search`, { as: tenant, body: { log_stream_id: stream, ...body } });

beforeAll(async () => {
  tenant = await createTenant();
  projectId = (await call("/v2/projects", { as: tenant, body: { name: "metrics" } })).body.id;
  stream = (await call(`/v2/projects/${projectId}/log_streams`, { as: tenant, body: { name: "default" } })).body.id;
  const at = (minute: number) => new Date(Date.UTC(2026, 9, 1, 0, minute)).toISOString();
  const answer = await call(`/v2/projects/${projectId}/traces`, {
    as: tenant,
    body: {
      log_stream_id: stream,
      traces: [
        { name: "a", created_at: at(1), metrics: { duration_ns: 10 }, spans: [{ type: "llm", name: "l", model: "gpt-4o", metrics: { num_input_tokens: 1_000_000, num_output_tokens: 0 } }] },
        { name: "a", created_at: at(2), status_code: 500, metrics: { duration_ns: 30 } },
        { name: "b", created_at: at(12), metrics: { duration_ns: 20 } },
      ],
    },
  });
  expect(answer.status).toBe(200);
});

describe("metrics/search", () => {
  it("answers every bucket, the empty ones with counts 0 and other values null, the last ending at end_time", async () => {
    const answer = await search({ start_time: "2026-10-01T00:00:00Z", end_time: "2026-10-01T00:25:00Z", interval: 10 });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body.group_by_columns).toEqual([]);
    expect(answer.body.aggregate_metrics).toMatchObject({ trace_count: 3, span_count: 1, error_count: 1, error_rate: 1 / 3, p50_latency_ns: 20, total_input_tokens: 1_000_000, total_cost: 2.5 });
    expect(answer.body.bucketed_metrics.trace_count).toEqual([
      { start_bucket_time: "2026-10-01T00:00:00.000000Z", end_bucket_time: "2026-10-01T00:10:00.000000Z", value: 2 },
      { start_bucket_time: "2026-10-01T00:10:00.000000Z", end_bucket_time: "2026-10-01T00:20:00.000000Z", value: 1 },
      { start_bucket_time: "2026-10-01T00:20:00.000000Z", end_bucket_time: "2026-10-01T00:25:00.000000Z", value: 0 },
    ]);
    expect(answer.body.bucketed_metrics.average_latency_ns.map((b: { value: unknown }) => b.value)).toEqual([20, 20, null]);
    expect(answer.body.bucketed_metrics.total_cost.map((b: { value: unknown }) => b.value)).toEqual([2.5, null, null]);
  });

  it("gzips a long answer for a client that accepts it, and only for such a client", async () => {
    // 1-minute buckets over 12 hours: 720 buckets, an answer of several hundred KB.
    const body = { start_time: "2026-10-01T00:00:00Z", end_time: "2026-10-01T12:00:00Z", interval: 1 };
    const plain = await search(body);
    expect(plain.status).toBe(200);
    expect(plain.headers.get("Content-Encoding")).toBeNull();
    const gzipped = await call(`/v2/projects/${projectId}/metrics/search`, { as: tenant, headers: { "Accept-Encoding": "gzip" }, body: { log_stream_id: stream, ...body } });
    expect(gzipped.headers.get("Content-Encoding")).toBe("gzip");
    expect(gzipped.body).toEqual(plain.body);
    expect(plain.body.bucketed_metrics.trace_count).toHaveLength(720);
    // A short answer goes out as it is.
    const short = await call(`/v2/projects/${projectId}/metrics/search`, { as: tenant, headers: { "Accept-Encoding": "gzip" }, body: { log_stream_id: stream, start_time: "2026-10-01T00:00:00Z", end_time: "2026-10-01T00:25:00Z", interval: 10 } });
    expect(short.headers.get("Content-Encoding")).toBeNull();
  });

  it("groups by name: one property per group in each bucket", async () => {
    const answer = await search({ start_time: "2026-10-01T00:00:00Z", end_time: "2026-10-01T00:20:00Z", interval: 10, group_by: "name" });
    expect(answer.body.group_by_columns).toEqual(["a", "b"]);
    expect(answer.body.bucketed_metrics.trace_count.map(({ a, b }: Record<string, unknown>) => [a, b])).toEqual([[2, 0], [0, 1]]);
  });

  it("refuses a bad window, interval or group with FastAPI-shaped 422s", async () => {
    const cases: [Record<string, unknown>, (string | number)[]][] = [
      [{ start_time: "2026-10-01T01:00:00Z", end_time: "2026-10-01T01:00:00Z" }, ["body", "end_time"]],
      [{ start_time: "2026-10-01T00:00:00Z", end_time: "2026-10-02T00:00:00Z", interval: 1 }, ["body", "interval"]],
      [{ start_time: "2026-10-01T00:00:00Z", end_time: "2026-10-02T00:00:00Z", interval: 0 }, ["body", "interval"]],
      [{ start_time: "yesterday-ish", end_time: "2026-10-02T00:00:00Z" }, ["body", "start_time"]],
      [{ start_time: "2026-10-01T00:00:00Z", end_time: "2026-10-01T02:00:00Z", group_by: "colour" }, ["body", "group_by"]],
      [{ start_time: "2026-10-01T00:00:00Z", end_time: "2026-10-01T02:00:00Z", filters: [{ type: "text", column_id: "nope", value: "x" }] }, ["body", "filters", 0, "column_id"]],
    ];
    for (const [body, loc] of cases) {
      const answer = await search(body);
      expect(answer.status, JSON.stringify(body)).toBe(422);
      expect(answer.body.detail.map((d: { loc: unknown }) => d.loc), JSON.stringify(answer.body)).toContainEqual(loc);
    }
  });

  it("is a 404 for another organization's project", async () => {
    const other = await createTenant();
    expect((await search({ start_time: "2026-10-01T00:00:00Z", end_time: "2026-10-01T01:00:00Z" }, other)).status).toBe(404);
  });

  it("does not count records hidden by the project's retention", async () => {
    const own = await createTenant();
    const project = (await call("/v2/projects", { as: own, body: { name: "kept-a-day" } })).body.id;
    const run = (await call(`/v2/projects/${project}/log_streams`, { as: own, body: { name: "default" } })).body.id;
    const now = Date.now();
    const old = new Date(now - 3 * 86_400_000).toISOString();
    const recent = new Date(now - 3_600_000).toISOString();
    expect((await call(`/v2/projects/${project}/traces`, { as: own, body: { log_stream_id: run, traces: [{ name: "old", created_at: old }, { name: "new", created_at: recent }] } })).status).toBe(200);
    const body = { log_stream_id: run, start_time: new Date(now - 4 * 86_400_000).toISOString(), end_time: new Date(now).toISOString(), interval: 60 * 24 };
    expect((await call(`/v2/projects/${project}/metrics/search`, { as: own, body })).body.aggregate_metrics.trace_count).toBe(2);
    expect((await call(`/v2/projects/${project}`, { as: own, method: "PATCH", body: { retention_days: 1 } })).status).toBe(200);
    expect((await call(`/v2/projects/${project}/metrics/search`, { as: own, body })).body.aggregate_metrics.trace_count).toBe(1);
  });
});

describe("metrics/custom_search", () => {
  it("aggregates a column and a metric, and refuses an unknown metric or a group that does not apply", async () => {
    const answer = await custom({
      start_time: "2026-10-01T00:00:00Z",
      end_time: "2026-10-01T01:00:00Z",
      interval_minutes: 60,
      record_type: "span",
      metric_details: [{ id: "cost", metric_name: "cost", aggregation: "Sum" }, { id: "complete", metric_name: "is_complete", aggregation: "PercentageTrue" }],
      group_by: "model",
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body.group_by_columns).toEqual(["gpt-4o"]);
    expect(answer.body.aggregate_metrics).toEqual({ cost: 2.5, complete: 100 });
    const unknown = await custom({ start_time: "2026-10-01T00:00:00Z", end_time: "2026-10-01T01:00:00Z", metric_details: [{ id: "x", metric_name: "no_such_metric", aggregation: "Sum" }] });
    expect(unknown.status).toBe(422);
    expect(unknown.body.detail[0].loc).toEqual(["body", "metric_details", 0, "metric_name"]);
    const group = await custom({ start_time: "2026-10-01T00:00:00Z", end_time: "2026-10-01T01:00:00Z", metric_details: [{ id: "x", metric_name: "cost", aggregation: "Sum" }], group_by: "model" });
    expect(group.status).toBe(422);
    expect(group.body.detail[0].loc).toEqual(["body", "group_by"]);
    const aggregation = await custom({ start_time: "2026-10-01T00:00:00Z", end_time: "2026-10-01T01:00:00Z", metric_details: [{ id: "x", metric_name: "cost", aggregation: "Median" }] });
    expect(aggregation.status).toBe(422);
    expect(aggregation.body.detail[0]).toMatchObject({ loc: ["body", "metric_details", 0, "aggregation"], type: "literal_error" });
  });
});
