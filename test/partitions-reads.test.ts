/**
 * metrics/search, custom_search and export (streamed and queued) across partitions on several
 * shards (contract section 13, "Reads are exact"; docs/partitions.md, "Metrics", "Export"): the
 * same records in a project with one
 * partition and in one whose three partitions sit on SHARD_0, SHARD_1 and SHARD_0 again must give
 * the same figures, counts, sums, sessions, groups (with "other") and exact percentiles, on the
 * scan's path and on the pre-aggregates' path. A project on one shard makes the round trips it made before.
 */
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Env } from "../src/env";
import worker from "../src/index";
import { refreshMetricCells } from "../src/analytics/metric-cells";
import { nearestRank } from "../src/analytics/nearest-rank";
import { pivotStatement, settle, windowStatements } from "../src/analytics/percentiles-across-shards";
import { type Statement, topGroupsStatement } from "../src/analytics/aggregate-records";
import { metricValue } from "../src/analytics/metric-values";
import { clearPartitionCache, readPartitions } from "../src/partitions/partition-catalog";
import { rollPartition } from "../src/partitions/roll-partition";
import { clearProjectRoutes } from "../src/shards/project-routing";
import { forgetShardSizes } from "../src/shards/shard-sizes";
import { recordDatabases } from "./support/record-dbs";
import { type Tenant, createTenant } from "./support/tenants";

const uuid = () => crypto.randomUUID();
const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 2, 1, 0, 0, 0);

let tenant: Tenant;

async function send(path: string, body?: unknown) {
  const ctx = createExecutionContext();
  const response = await worker.fetch(
    new Request(`http://trace-store.test${path}`, {
      method: body === undefined ? "GET" : "POST",
      headers: { "content-type": "application/json", "Service-API-Key": tenant.apiKey },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
    env as unknown as Env,
    ctx,
  );
  await waitOnExecutionContext(ctx);
  const roundTrips = Number(/d1;desc="round trips";dur=(\d+)/.exec(response.headers.get("Server-Timing") ?? "")?.[1]);
  const text = await response.text();
  let parsed: any = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // JSONL or CSV: kept as text.
  }
  return { status: response.status, body: parsed, roundTrips };
}

interface Project {
  projectId: string;
  logStreamId: string;
}

async function newProject(shard: string): Promise<Project> {
  const ctx = createExecutionContext();
  const response = await worker.fetch(
    new Request("http://trace-store.test/v2/projects", { method: "POST", headers: { "content-type": "application/json", "Service-API-Key": tenant.apiKey }, body: JSON.stringify({ name: `pm-${uuid()}`, type: "gen_ai" }) }),
    { ...env, DATA_SHARDS: shard } as unknown as Env,
    ctx,
  );
  await waitOnExecutionContext(ctx);
  const project = (await response.json()) as { id: string };
  const stream = await send(`/v2/projects/${project.id}/log_streams`, { name: "default" });
  expect(stream.status).toBe(200);
  return { projectId: project.id, logStreamId: stream.body.id };
}

/** 3 parts of traces (each with spans; some in a session of the part), over 7 hours, 27 names (so "other" exists). */
function dataset() {
  const parts: { sessions: string[]; traces: Record<string, unknown>[] }[] = [0, 1, 2].map(() => ({ sessions: [uuid(), uuid()], traces: [] }));
  for (let i = 0; i < 330; i += 1) {
    const part = parts[i % 3]!;
    const at = new Date(T0 + (i % 7) * HOUR + i * 1000).toISOString();
    part.traces.push({
      id: uuid(),
      name: `n${String(i % 27).padStart(2, "0")}`,
      input: "in",
      output: "out",
      created_at: at,
      tags: [`t${i % 3}`, ...(i % 5 === 0 ? ["five"] : [])],
      user_metadata: { env: `e${i % 4}` },
      status_code: i % 11 === 0 ? 500 : 200,
      // Integers and dyadic fractions: sums are exact in any order, so figures compare exactly.
      metrics: { duration_ns: ((i * 7919) % 4999) + 1 + (i % 4 === 0 ? 5000 : 0), cost: (i % 13) / 1024, score: i % 5, num_input_tokens: i % 50 },
      session_id: i % 4 === 1 ? part.sessions[(i >> 2) % 2] : undefined,
      spans: Array.from({ length: i % 3 }, (_, k) => ({ id: uuid(), type: "llm", name: `s${k}`, input: "q", output: "a", created_at: at, metrics: { duration_ns: (i * 31 + k * 17) % 977 } })),
    });
  }
  return parts;
}

async function ingestPart(p: Project, part: { sessions: string[]; traces: Record<string, unknown>[] }) {
  for (const [i, session] of part.sessions.entries()) {
    const created = new Date(T0 + i * 60_000 + (part.traces.length % 7) * 1000).toISOString();
    expect((await send(`/v2/projects/${p.projectId}/sessions`, { log_stream_id: p.logStreamId, id: session, name: "s", created_at: created })).status).toBe(200);
  }
  for (const session of [...part.sessions, undefined]) {
    const traces = part.traces.filter((t) => t.session_id === session).map(({ session_id: _, ...t }) => t);
    for (let from = 0; from < traces.length; from += 60) {
      const answer = await send(`/v2/projects/${p.projectId}/traces`, { log_stream_id: p.logStreamId, traces: traces.slice(from, from + 60), ...(session ? { session_id: session } : {}) });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    }
  }
}

let single: Project;
let spread: Project;

beforeAll(async () => {
  tenant = await createTenant("admin");
  const parts = dataset();
  single = await newProject("SHARD_1");
  for (const part of parts) await ingestPart(single, part);
  spread = await newProject("SHARD_0");
  await ingestPart(spread, parts[0]!);
  for (const [i, to] of ["SHARD_1", "SHARD_0"].entries()) {
    const open = (await readPartitions(env as unknown as Env, spread.projectId)).find((x) => x.state === "open");
    await rollPartition({ ...env, DATA_SHARDS: to } as unknown as Env, tenant.organizationId, spread.projectId, { expectOpen: open!.id, reason: "operator" });
    clearPartitionCache();
    await ingestPart(spread, parts[i + 1]!);
  }
  const partitions = await readPartitions(env as unknown as Env, spread.projectId);
  expect(partitions.map((p) => p.shard)).toEqual(["SHARD_0", "SHARD_1", "SHARD_0"]);
}, 120_000);

beforeEach(() => {
  clearPartitionCache();
  clearProjectRoutes();
  forgetShardSizes();
});

const window = { start_time: new Date(T0 - HOUR).toISOString(), end_time: new Date(T0 + 8 * HOUR).toISOString() };

async function both(route: "metrics/search" | "metrics/custom_search", body: Record<string, unknown>) {
  const answers = [];
  for (const p of [single, spread]) {
    const answer = await send(`/v2/projects/${p.projectId}/${route}`, { log_stream_id: p.logStreamId, ...window, ...body });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    answers.push(answer.body);
  }
  return answers as [any, any];
}

const metricsShapes: Record<string, unknown>[] = [
  { interval: 60 },
  { interval: 540 },
  { interval: 60, group_by: "name" },
  { interval: 120, group_by: "tags" },
  { interval: 540, group_by: "user_metadata.env" },
  { interval: 60, group_by: "status_code" },
];
const filters = [{ type: "text", column_id: "name", operator: "ne", value: "n03" }];

describe("metrics across partitions on several shards", () => {
  it("metrics/search, scanned (a filter): every figure, group and exact percentile as one partition", async () => {
    for (const shape of metricsShapes) {
      const [expected, got] = await both("metrics/search", { ...shape, filters });
      expect(got, JSON.stringify(shape)).toEqual(expected);
      expect(got.aggregate_metrics.trace_count, JSON.stringify(shape)).toBe(317);
      expect(got.aggregate_metrics.session_count).toBe(6);
    }
    // "other" exists: 27 names, 20 shown.
    const [, byName] = await both("metrics/search", { interval: 540, group_by: "name", filters });
    expect(Object.keys(byName.bucketed_metrics.trace_count[0])).toContain("other");
  });

  it("metrics/search from the pre-aggregates: the same figures as one partition's cells", async () => {
    for (const db of recordDatabases()) while (!(await refreshMetricCells(db, 5, 24)).complete);
    for (const shape of metricsShapes.filter((s) => s.group_by !== "status_code")) {
      const [expected, got] = await both("metrics/search", shape);
      expect(got, JSON.stringify(shape)).toEqual(expected);
      expect(got.aggregate_metrics.trace_count).toBe(330);
    }
  });

  it("custom_search of traces, spans and sessions: counts, sums, extremes, percentages and exact percentiles", async () => {
    const details = (names: string[]) =>
      names.flatMap((name) => ["Count", "Sum", "Average", "Min", "Max", "P50", "P90", "P95", "P99", "PercentageTrue"].map((aggregation) => ({ id: `${name}-${aggregation}`, metric_name: name, aggregation })));
    const cases: Record<string, unknown>[] = [
      { record_type: "trace", interval_minutes: 60, metric_details: details(["duration_ns", "cost", "score", "status_code"]) },
      { record_type: "trace", interval_minutes: 540, group_by: "name", metric_details: details(["duration_ns", "num_input_tokens"]) },
      { record_type: "trace", interval_minutes: 540, filter_tree: { filter: { type: "text", column_id: "name", operator: "ne", value: "n01" } }, metric_details: details(["duration_ns"]) },
      { record_type: "span", interval_minutes: 120, group_by: "name", metric_details: details(["duration_ns"]) },
      { record_type: "session", interval_minutes: 540, metric_details: details(["duration_ns"]) },
    ];
    for (const body of cases) {
      const [expected, got] = await both("metrics/custom_search", body);
      expect(got, JSON.stringify(body).slice(0, 200)).toEqual(expected);
    }
  });

  it("a project on one shard makes the round trips it made before partitions", async () => {
    // Counted on main before this change: catalog (ownership, route, partitions: cached or read
    // beside), the shard's names-and-states batch, the scan bound, the figures' batch.
    const one = async (body: Record<string, unknown>) => (await send(`/v2/projects/${single.projectId}/metrics/search`, { log_stream_id: single.logStreamId, ...window, ...body })).roundTrips;
    await one({ interval: 60, filters });
    expect(await one({ interval: 60, filters })).toBe(ROUND_TRIPS_SCAN);
    expect(await one({ interval: 60, group_by: "name", filters })).toBe(ROUND_TRIPS_SCAN + 1);
  });
});

/** metrics/search with a filter on a one-shard project, warm caches: measured on main (f3e44ce). */
const ROUND_TRIPS_SCAN = 3;

/** A body as text (a JSON body comes back parsed: put it back). */
const asText = (body: unknown) => (typeof body === "string" ? body : `${JSON.stringify(body)}\n`);

describe("export across partitions on several shards", () => {
  const shapes: Record<string, unknown>[] = [
    { root_type: "trace", export_format: "jsonl" },
    { root_type: "trace", export_format: "jsonl_flat", sort: { column_id: "name", ascending: true } },
    { root_type: "trace", export_format: "csv", column_ids: ["id", "name", "created_at"], sort: { column_id: "metrics/score", ascending: false } },
    { root_type: "span", export_format: "jsonl_flat", filters },
    { root_type: "session", export_format: "jsonl" },
  ];

  it("streams the same bytes as one partition: every format, root type, sort and filter, over pages of 100 roots", async () => {
    for (const shape of shapes) {
      const answers: string[] = [];
      for (const p of [single, spread]) {
        const answer = await send(`/v2/projects/${p.projectId}/export_records`, { log_stream_id: p.logStreamId, ...shape });
        expect(answer.status, JSON.stringify(shape)).toBe(200);
        answers.push(asText(answer.body).replaceAll(p.projectId, "P").replaceAll(p.logStreamId, "R"));
      }
      expect(answers[1]!.length, JSON.stringify(shape)).toBeGreaterThan(1000);
      expect(answers[1], JSON.stringify(shape)).toBe(answers[0]);
    }
    // Every trace once, with its spans nested.
    const lines = asText((await send(`/v2/projects/${spread.projectId}/export_records`, { log_stream_id: spread.logStreamId, root_type: "trace", export_format: "jsonl" })).body).trim().split("\n").map((line) => JSON.parse(line));
    expect(new Set(lines.map((t) => t.id)).size).toBe(330);
    expect(lines.reduce((n, t) => n + t.spans.length, 0)).toBe(330);
  });

  it("the queued export (one page of roots per message, continued by its cursor) writes the streamed bytes", async () => {
    const body = { root_type: "trace", export_format: "jsonl_flat", sort: { column_id: "name", ascending: false } };
    const files: string[] = [];
    for (const p of [single, spread]) {
      const queued = await send(`/v2/projects/${p.projectId}/export_records/url`, { log_stream_id: p.logStreamId, ...body });
      expect(queued.status, JSON.stringify(queued.body)).toBe(200);
      const deadline = Date.now() + 60_000;
      for (;;) {
        const job = await send(`/v2/org-jobs/${queued.body.job_id}`);
        if (job.body.status === "completed") break;
        expect(job.body.status, job.body.error_message).not.toBe("failed");
        expect(Date.now()).toBeLessThan(deadline);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      const url = new URL(queued.body.url);
      const download = await send(`${url.pathname}${url.search}`);
      expect(download.status).toBe(200);
      files.push(asText(download.body).replaceAll(p.projectId, "P").replaceAll(p.logStreamId, "R"));
    }
    expect(files[1]).toBe(files[0]);
    expect(files[1]!.trim().split("\n").length).toBe(660);
  }, 120_000);
});

describe("exact percentiles from the shards' pivots", () => {
  it("settles or windows every percentile of random values split over shards, as one sorted list gives", () => {
    let seed = 7;
    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    for (let round = 0; round < 300; round += 1) {
      const shards = 1 + Math.floor(rand() * 3);
      const lists = Array.from({ length: shards }, () => Array.from({ length: Math.floor(rand() * 400) }, () => Math.floor(rand() * (rand() < 0.5 ? 10 : 1000))).sort((a, b) => a - b));
      const all = lists.flat().sort((a, b) => a - b);
      const parts = lists.map((values) => {
        const step = Math.ceil(values.length / 100);
        return { count: values.length, pivots: values.map((v, i) => [i + 1, v] as [number, number]).filter(([rank]) => rank % step === 0 || rank === values.length) };
      });
      for (const p of [1, 50, 90, 95, 99]) {
        const settled = settle(parts, p);
        if (all.length === 0) {
          expect(settled).toBeNull();
          continue;
        }
        const expected = all[nearestRank(p, all.length) - 1]!;
        if (settled && "value" in settled) expect(settled.value).toBe(expected);
        else {
          const { lo, hi, rank } = settled!.window;
          expect(expected).toBeGreaterThanOrEqual(lo ?? -Infinity);
          expect(expected).toBeLessThanOrEqual(hi);
          const below = lo === null ? 0 : all.filter((v) => v < lo).length;
          expect(all.filter((v) => (lo === null || v >= lo) && v <= hi)[rank - below - 1]).toBe(expected);
        }
      }
    }
  });
});

describe("query plans of the statements the merge adds", () => {
  const scope = { family: "trace" as const, runId: "run", fromMicros: T0 * 1000, toMicros: (T0 + 8 * HOUR) * 1000, filter: { kind: "and" as const, children: [] } };
  const bucketing = { startMicros: T0 * 1000, intervalMicros: HOUR * 1000 };
  const duration = metricValue("duration_ns");
  const windows = [{ b: 0, g: null, window: { rank: 3, lo: 1, hi: 9 } }, { b: 1, g: null, window: { rank: 2, lo: null, hi: 5 } }];
  const statements: [string, Statement][] = [
    ["pivots", pivotStatement(scope, bucketing, { kind: "none" }, null, duration)],
    ["every group's count", topGroupsStatement(scope, { kind: "column", storage: "name" }, -1)],
    ["window: count below", windowStatements(scope, bucketing, { kind: "none" }, null, duration, windows)[0]],
    ["window: values inside", windowStatements(scope, bucketing, { kind: "none" }, null, duration, windows)[1]],
  ];
  for (const [name, statement] of statements) {
    it(`${name}: the run's records by one range of records_family_order, the windows probed by an index`, async () => {
      const { results } = await env.SHARD_0.prepare(`EXPLAIN QUERY PLAN ${statement.sql}`).bind(...statement.params).all<{ detail: string }>();
      const text = results.map((row) => row.detail).join("\n");
      expect(text).toMatch(/SEARCH r USING (COVERING )?INDEX records_family_order \(family_key=\? AND created_at>\? AND created_at<\?\)/);
      expect(results.filter((row) => /^SCAN (r|records)\b/.test(row.detail)), text).toEqual([]);
      // The windows (a few rows) are looked up per record through an automatic index, never scanned per record.
      if (name.startsWith("window")) expect(text).toMatch(/SEARCH w USING AUTOMATIC|SCAN w/);
    });
  }
});
