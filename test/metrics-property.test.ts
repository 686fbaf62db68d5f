/**
 * metrics/search and metrics/custom_search against an independent computation (issue 21, point
 * 6): random traces and spans are ingested, patched and partly deleted; then, for random
 * windows, intervals, filters and groups, every figure of both routes is compared with what plain
 * JavaScript computes from the raw records as the search API returns them.
 */
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { refreshMetricCells } from "../src/analytics/metric-cells";
import { call } from "./support/client";
import { recordDatabases, recordsOf } from "./support/record-dbs";
import { type Tenant, createTenant } from "./support/tenants";

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 9, 1, 0, 0, 0);
const NAMES = Array.from({ length: 24 }, (_, i) => `n${String(i).padStart(2, "0")}`);
const TAGS = ["a", "b", "c"];
const CUSTOMERS = ["acme", "globex"];

interface Raw {
  id: string;
  created_at: string;
  name: string;
  tags: string[];
  user_metadata: Record<string, string>;
  metrics: Record<string, number>;
  status_code: number | null;
  error_message: string | null;
  session_id: string | null;
  trace_id: string | null;
  type: string;
  is_complete: boolean;
}

let tenant: Tenant;
let projectId: string;
let stream: string;
let traces: Raw[] = [];
let spans: Raw[] = [];

function randomData(seed: number) {
  let s = seed;
  const rand = () => ((s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const int = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));
  const pickOne = <T,>(values: readonly T[]) => values[int(0, values.length - 1)]!;
  const sessions = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
  const batches: unknown[][] = [[], [], []];
  for (let i = 0; i < 90; i += 1) {
    const at = new Date(T0 - HOUR + int(0, 8 * HOUR)).toISOString();
    const spanList = Array.from({ length: int(0, 3) }, () => {
      const llm = rand() < 0.6;
      const metrics: Record<string, number> = { duration_ns: int(1, 5000) };
      if (llm) Object.assign(metrics, { num_input_tokens: int(1, 900), num_output_tokens: int(1, 300) }, rand() < 0.5 ? { cost: int(1, 1000) / 1024 } : {});
      if (rand() < 0.5) metrics.toxicity = int(0, 100) / 100;
      return {
        id: crypto.randomUUID(),
        type: llm ? "llm" : pickOne(["tool", "retriever"]),
        name: pickOne(NAMES.slice(0, 4)),
        model: llm ? pickOne(["gpt-4o", "claude-3-5-sonnet", "private"]) : undefined,
        created_at: at,
        status_code: rand() < 0.2 ? pickOne([200, 429, 500]) : undefined,
        metrics,
        user_metadata: { erase: pickOne(["keep", "span-gone"]) },
      };
    });
    const metrics: Record<string, number> = {};
    if (rand() < 0.8) metrics.duration_ns = int(1, 10_000);
    if (rand() < 0.5) metrics.toxicity = int(0, 100) / 100;
    if (rand() < 0.2) metrics.cost = int(1, 1000) / 512;
    batches[int(0, 2)]!.push({
      id: crypto.randomUUID(),
      name: pickOne(NAMES),
      created_at: at,
      session_id: rand() < 0.7 ? pickOne(sessions) : undefined,
      tags: TAGS.filter(() => rand() < 0.4),
      user_metadata: { ...(rand() < 0.7 ? { customer: pickOne(CUSTOMERS) } : {}), erase: pickOne(["keep", "keep", "keep", "trace-gone"]) },
      status_code: rand() < 0.3 ? pickOne([200, 400, 404, 500]) : undefined,
      error_message: rand() < 0.1 ? "boom" : undefined,
      metrics,
      spans: spanList,
    });
  }
  return { sessions, batches, int };
}

async function everything(family: "traces" | "spans"): Promise<Raw[]> {
  const out: Raw[] = [];
  for (let offset = 0; ; offset += 1000) {
    const page = await call(`/v2/projects/${projectId}/${family}/search`, { as: tenant, body: { log_stream_id: stream, limit: 1000, starting_token: offset } });
    expect(page.status).toBe(200);
    out.push(...page.body.records);
    if (!page.body.paginated) return out;
  }
}

beforeAll(async () => {
  tenant = await createTenant();
  projectId = (await call("/v2/projects", { as: tenant, body: { name: "metrics-property" } })).body.id;
  stream = (await call(`/v2/projects/${projectId}/log_streams`, { as: tenant, body: { name: "default" } })).body.id;
  const { sessions, batches, int } = randomData(21);
  for (const id of sessions) await call(`/v2/projects/${projectId}/sessions`, { as: tenant, body: { log_stream_id: stream, id } });
  for (const batch of batches) {
    const answer = await call(`/v2/projects/${projectId}/traces`, { as: tenant, body: { log_stream_id: stream, traces: batch } });
    expect(answer.status, JSON.stringify(answer.body).slice(0, 300)).toBe(200);
  }
  // Patches: new status codes and durations on some traces.
  for (const trace of batches.flat().slice(0, 15) as { id: string }[]) {
    const answer = await call(`/v2/projects/${projectId}/traces/${trace.id}`, { as: tenant, method: "PATCH", body: { log_stream_id: stream, status_code: int(0, 1) ? 503 : 201, duration_ns: int(1, 20_000) } });
    expect(answer.status).toBe(200);
  }
  // Deletions: some traces with their spans, and some spans alone (their traces' roll-ups follow).
  for (const value of ["trace-gone", "span-gone"]) {
    const answer = await call("/v2/org-jobs/delete-by-metadata?immediate=true", { as: tenant, body: { metadata_key: "erase", metadata_value: value } });
    expect(answer.status).toBe(200);
  }
  traces = await everything("traces");
  spans = await everything("spans");
  expect(traces.length).toBeGreaterThan(40);
}, 120_000);

// ---- the independent computation ------------------------------------------------------------

type Filter = { column: "name" | "tags" | "toxicity" | "customer"; value: string | number } | null;

function passes(record: Raw, filter: Filter): boolean {
  if (!filter) return true;
  switch (filter.column) {
    case "name":
      return record.name === filter.value;
    case "tags":
      return record.tags.includes(String(filter.value));
    case "toxicity":
      return record.metrics.toxicity !== undefined && record.metrics.toxicity > Number(filter.value);
    case "customer":
      return record.user_metadata.customer === filter.value;
  }
}

function filterBody(filter: Filter): Record<string, unknown> | null {
  if (!filter) return null;
  switch (filter.column) {
    case "name":
      return { type: "text", column_id: "name", operator: "eq", value: filter.value };
    case "tags":
      return { type: "collection", column_id: "tags", operator: "contains", value: filter.value };
    case "toxicity":
      return { type: "number", column_id: "metrics/toxicity", operator: "gt", value: filter.value };
    case "customer":
      return { type: "text", column_id: "user_metadata.customer", operator: "eq", value: filter.value };
  }
}

type Group = "name" | "tags" | "status_code" | "user_metadata.customer" | "type" | "model" | null;

function groupsOf(record: Raw & { model?: string | null }, group: Group): string[] {
  switch (group) {
    case null:
      return [""];
    case "tags":
      return [...new Set(record.tags)];
    case "status_code":
      return record.status_code === null || record.status_code === undefined ? [] : [String(record.status_code)];
    case "user_metadata.customer":
      return record.user_metadata.customer === undefined ? [] : [record.user_metadata.customer];
    case "model":
      return record.model ? [record.model] : [];
    default:
      return [String(record[group])];
  }
}

const micros = (iso: string) => Date.parse(iso) * 1000 + Number(iso.match(/\.\d{3}(\d{3})/)?.[1] ?? 0);

interface Query {
  startMs: number;
  endMs: number;
  interval: number;
  filter: Filter;
  group: Group;
}

/** The cells of the reference: bucket -> shown group -> records; and the shown groups. */
function reference(records: Raw[], q: Query) {
  const start = q.startMs * 1000;
  const end = q.endMs * 1000;
  const inWindow = records.filter((r) => micros(r.created_at) >= start && micros(r.created_at) < end && passes(r, q.filter));
  const counts = new Map<string, number>();
  for (const r of inWindow) for (const g of groupsOf(r, q.group)) counts.set(g, (counts.get(g) ?? 0) + 1);
  const ranked = [...counts.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([g]) => g);
  const shown = q.group === null ? [""] : ranked.length > 20 ? [...ranked.slice(0, 20), "other"] : ranked;
  const buckets = Math.ceil((end - start) / (q.interval * 60_000_000));
  const cells: Map<string, Raw[]>[] = Array.from({ length: buckets }, () => new Map());
  for (const r of inWindow) {
    const b = Math.floor((micros(r.created_at) - start) / (q.interval * 60_000_000));
    for (const raw of groupsOf(r, q.group)) {
      const g = shown.includes(raw) ? raw : "other";
      const cell = cells[b]!;
      cell.set(g, [...(cell.get(g) ?? []), r]);
    }
  }
  return { whole: inWindow, cells, shown: q.group === null ? [] : shown, buckets };
}

const nearestRank = (values: number[], p: number) => {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.ceil((p * sorted.length) / 100) - 1]!;
};
const sum = (values: number[]) => (values.length === 0 ? null : values.reduce((a, b) => a + b, 0));
const mean = (values: number[]) => (values.length === 0 ? null : sum(values)! / values.length);
const valuesOf = (records: Raw[], f: (r: Raw) => number | undefined | null) => records.map(f).filter((v): v is number => typeof v === "number");

function traceFigures(records: Raw[], averaged: string[]): Record<string, number | null> {
  const errors = records.filter((r) => (r.status_code ?? 0) >= 400 || (r.error_message ?? "") !== "").length;
  const ids = new Set(records.map((r) => r.id));
  const durations = valuesOf(records, (r) => r.metrics.duration_ns);
  const total = valuesOf(records, (r) =>
    r.metrics.num_total_tokens ?? (r.metrics.num_input_tokens !== undefined || r.metrics.num_output_tokens !== undefined ? (r.metrics.num_input_tokens ?? 0) + (r.metrics.num_output_tokens ?? 0) : undefined),
  );
  return {
    trace_count: records.length,
    session_count: new Set(records.map((r) => r.session_id).filter((s) => s !== null && s !== undefined)).size,
    span_count: spans.filter((s) => ids.has(s.trace_id!)).length,
    error_count: errors,
    error_rate: records.length ? errors / records.length : null,
    average_latency_ns: mean(durations),
    p50_latency_ns: nearestRank(durations, 50),
    p90_latency_ns: nearestRank(durations, 90),
    p95_latency_ns: nearestRank(durations, 95),
    p99_latency_ns: nearestRank(durations, 99),
    total_input_tokens: sum(valuesOf(records, (r) => r.metrics.num_input_tokens)),
    total_output_tokens: sum(valuesOf(records, (r) => r.metrics.num_output_tokens)),
    total_tokens: sum(total),
    total_cost: sum(valuesOf(records, (r) => r.metrics.cost)),
    average_cost: mean(valuesOf(records, (r) => r.metrics.cost)),
    ...Object.fromEntries(averaged.map((m) => [`average_${m}`, mean(valuesOf(records, (r) => r.metrics[m]))])),
  };
}

/** Relative error allowed: exact (float rounding) unless the key is a percentile and percentiles may come from histograms. */
let percentileTolerance = 1e-9;
/**
 * custom_search details named `<id>_duration_percentile`: a percentile of traces' duration_ns, which
 * the pre-aggregated cells may answer (issue 29: custom_search reads them as metrics/search does,
 * once the upkeep the writes started has computed them), within 1% like the latency keys.
 */
const toleranceOf = (key: string) => (/^p\d+_latency_ns$/.test(key) ? percentileTolerance : key.endsWith("_duration_percentile") ? 0.01 : 1e-9);

function expectFigures(actual: Record<string, unknown>, expected: Record<string, number | null>, where: string) {
  for (const [key, value] of Object.entries(expected)) {
    const got = actual[key];
    if (value === null) expect(got ?? null, `${where} ${key}`).toBeNull();
    else {
      expect(typeof got, `${where} ${key}`).toBe("number");
      expect(Math.abs((got as number) - value), `${where} ${key}: ${got} vs ${value}`).toBeLessThanOrEqual(toleranceOf(key) * Math.max(1, Math.abs(value)));
    }
  }
}

/** Whether [startMs, endMs) holds a whole UTC hour (one the pre-aggregated cells may answer). */
const holdsWholeHour = (q: { startMs: number; endMs: number }) => Math.floor(q.endMs / HOUR) > Math.ceil(q.startMs / HOUR);

const queryArb = (groups: Group[]) =>
  fc.record({
    startOffset: fc.integer({ min: -2 * 60, max: 3 * 60 }),
    minutes: fc.integer({ min: 1, max: 9 * 60 }),
    interval: fc.constantFrom(1, 7, 30, 60, 240),
    filter: fc.option(
      fc.oneof(
        fc.record({ column: fc.constant("name" as const), value: fc.constantFrom(...NAMES.slice(0, 6)) }),
        fc.record({ column: fc.constant("tags" as const), value: fc.constantFrom(...TAGS) }),
        fc.record({ column: fc.constant("toxicity" as const), value: fc.constantFrom(0.2, 0.5, 0.9) }),
        fc.record({ column: fc.constant("customer" as const), value: fc.constantFrom(...CUSTOMERS) }),
      ),
      { nil: null },
    ),
    group: fc.constantFrom(...groups),
  });

function toQuery(q: { startOffset: number; minutes: number; interval: number; filter: Filter; group: Group }): Query | null {
  const startMs = T0 + q.startOffset * 60_000;
  const endMs = startMs + q.minutes * 60_000;
  if (Math.ceil(q.minutes / q.interval) > 1000) return null;
  return { startMs, endMs, interval: q.interval, filter: q.filter, group: q.group };
}

function checkBuckets(body: any, key: string, ref: ReturnType<typeof reference>, q: Query, figure: (records: Raw[]) => number | null) {
  const buckets = body.bucketed_metrics[key];
  expect(buckets.length).toBe(ref.buckets);
  buckets.forEach((bucket: Record<string, unknown>, i: number) => {
    expect(bucket.start_bucket_time).toBe(new Date(q.startMs + i * q.interval * 60_000).toISOString().replace("Z", "000Z"));
    const cell = ref.cells[i]!;
    if (q.group === null) expectFigures({ [key]: bucket.value }, { [key]: figure(cell.get("") ?? []) }, `bucket ${i}`);
    else for (const g of ref.shown) expectFigures({ [key]: bucket[g] }, { [key]: figure(cell.get(g) ?? []) }, `bucket ${i} group ${g}`);
  });
}

describe("metrics/search", () => {
  it("equals the reference for random windows, intervals, filters and groups", async () => {
    const averaged = ["toxicity"];
    // Since issue 29 the upkeep computes the hours' cells right after the writes, so a window
    // holding whole hours may be answered from them (whether they were ready yet was a race that
    // made this test flaky): compute them now, so every run takes the same paths.
    for (const db of recordDatabases()) while (!(await refreshMetricCells(db, 5, 3)).complete);
    try {
      await fc.assert(
        fc.asyncProperty(queryArb([null, "name", "tags", "status_code", "user_metadata.customer"]), async (raw) => {
          const q = toQuery(raw as never);
          if (!q) return;
          // Percentiles of a window holding a whole UTC hour may come from that hour's cell
          // (merged histograms: within the contract's 1% of nearest rank); any other is exact.
          percentileTolerance = holdsWholeHour(q) ? 0.01 : 1e-9;
          const filter = filterBody(q.filter);
          const answer = await call(`/v2/projects/${projectId}/metrics/search`, {
            as: tenant,
            body: { log_stream_id: stream, start_time: new Date(q.startMs).toISOString(), end_time: new Date(q.endMs).toISOString(), interval: q.interval, filters: filter ? [filter] : [], group_by: q.group },
          });
          expect(answer.status, JSON.stringify(answer.body).slice(0, 400)).toBe(200);
          const ref = reference(traces, q);
          expect(answer.body.group_by_columns).toEqual(ref.shown);
          expectFigures(answer.body.aggregate_metrics, traceFigures(ref.whole, averaged), "aggregate");
          for (const key of ["trace_count", "session_count", "span_count", "error_rate", "p95_latency_ns", "total_tokens", "total_cost", "average_toxicity"]) {
            checkBuckets(answer.body, key, ref, q, (records) => traceFigures(records, averaged)[key]!);
          }
        }),
        // The window that failed at random before the cells were computed here (two whole hours).
        { numRuns: 25, examples: [[{ startOffset: 0, minutes: 120, interval: 240, filter: null, group: null }]] },
      );
    } finally {
      percentileTolerance = 1e-9;
    }
  }, 240_000);
});

const AGGREGATIONS = ["Count", "Sum", "Average", "Min", "Max", "P50", "P90", "P95", "P99", "PercentageTrue", "PercentageFalse"] as const;

function aggregate(records: Raw[], metric: string, aggregation: (typeof AGGREGATIONS)[number]): number | null {
  const values = valuesOf(records, (r) => (metric === "status_code" ? r.status_code : metric === "is_complete" ? (r.is_complete ? 1 : 0) : r.metrics[metric]));
  switch (aggregation) {
    case "Count":
      return values.length;
    case "Sum":
      return sum(values);
    case "Average":
      return mean(values);
    case "Min":
      return values.length ? Math.min(...values) : null;
    case "Max":
      return values.length ? Math.max(...values) : null;
    case "PercentageTrue":
      return values.length ? (100 * values.filter((v) => v !== 0).length) / values.length : null;
    case "PercentageFalse":
      return values.length ? (100 * values.filter((v) => v === 0).length) / values.length : null;
    default:
      return nearestRank(values, Number(aggregation.slice(1)));
  }
}

/** A detail's id: `m<i>`, marked as a duration percentile of traces when it is one (toleranceOf). */
const idOf = (d: { metric: string; aggregation: string }, i: number, family: string) =>
  family === "trace" && d.metric === "duration_ns" && /^P\d+$/.test(d.aggregation) ? `m${i}_duration_percentile` : `m${i}`;

describe("metrics/custom_search", () => {
  it("equals the reference for random aggregations of traces and spans", async () => {
    const detailArb = fc.record({ metric: fc.constantFrom("duration_ns", "cost", "toxicity", "status_code", "is_complete", "num_input_tokens"), aggregation: fc.constantFrom(...AGGREGATIONS) });
    await fc.assert(
      fc.asyncProperty(queryArb([null, "name", "tags", "status_code", "type", "model"]), fc.constantFrom("trace" as const, "span" as const), fc.array(detailArb, { minLength: 1, maxLength: 4 }), async (raw, family, details) => {
        const q = toQuery(raw as never);
        if (!q || (family === "trace" && (q.group === "type" || q.group === "model"))) return;
        const filter = filterBody(q.filter);
        const answer = await call(`/v2/projects/${projectId}/metrics/custom_search`, {
          as: tenant,
          body: {
            log_stream_id: stream,
            record_type: family,
            start_time: new Date(q.startMs).toISOString(),
            end_time: new Date(q.endMs).toISOString(),
            interval_minutes: q.interval,
            filter_tree: filter ? { filter } : undefined,
            group_by: q.group,
            metric_details: details.map((d, i) => ({ id: idOf(d, i, family), metric_name: d.metric, aggregation: d.aggregation })),
          },
        });
        expect(answer.status, JSON.stringify(answer.body).slice(0, 400)).toBe(200);
        const ref = reference(family === "trace" ? traces : spans, q);
        expect(answer.body.group_by_columns).toEqual(ref.shown);
        details.forEach((d, i) => {
          const id = idOf(d, i, family);
          expectFigures(answer.body.aggregate_metrics, { [id]: aggregate(ref.whole, d.metric, d.aggregation) }, `aggregate ${d.metric} ${d.aggregation}`);
          checkBuckets(answer.body, id, ref, q, (records) => aggregate(records, d.metric, d.aggregation));
        });
      }),
      { numRuns: 25 },
    );
  }, 240_000);
});

/** Recomputes every marked hour's pre-aggregated cells, as the minutely refresh does. */
async function refreshCells(): Promise<void> {
  for (const db of recordDatabases()) while (!(await refreshMetricCells(db, 5, 3)).complete);
}

/** The pre-aggregated path: whole hours of the window answered from cells (src/analytics/preaggregated-read.ts). */
const alignedQueryArb = fc.oneof(
  fc.record({
    startHour: fc.integer({ min: -2, max: 3 }),
    hours: fc.integer({ min: 1, max: 9 }),
    extraMinutes: fc.constantFrom(0, 0, 0, 25),
    interval: fc.constantFrom(60, 60, 120, 1440, 30),
    group: fc.constantFrom<Group>(null, "name", "tags", "user_metadata.customer"),
  }),
  // Whole UTC days (the data spans the last hour of one and the start of the next): read from
  // day cells, each bucket one cell (1 day, 1 hour) or several (2 days).
  fc.record({
    startHour: fc.constantFrom(-24, 0),
    hours: fc.constantFrom(24, 48),
    extraMinutes: fc.constantFrom(0, 0, 25),
    interval: fc.constantFrom(1440, 1440, 2880, 60),
    group: fc.constantFrom<Group>(null, "name", "tags", "user_metadata.customer"),
  }),
);

async function checkAligned(runs: number) {
  percentileTolerance = 0.01;
  try {
    await fc.assert(
      fc.asyncProperty(alignedQueryArb, async (raw) => {
        const startMs = T0 + raw.startHour * HOUR;
        const q: Query = { startMs, endMs: startMs + raw.hours * HOUR + raw.extraMinutes * 60_000, interval: raw.interval, filter: null, group: raw.group };
        const answer = await call(`/v2/projects/${projectId}/metrics/search`, {
          as: tenant,
          body: { log_stream_id: stream, start_time: new Date(q.startMs).toISOString(), end_time: new Date(q.endMs).toISOString(), interval: q.interval, group_by: q.group },
        });
        expect(answer.status, JSON.stringify(answer.body).slice(0, 400)).toBe(200);
        const ref = reference(traces, q);
        expect(answer.body.group_by_columns).toEqual(ref.shown);
        const averaged = ["toxicity"];
        expectFigures(answer.body.aggregate_metrics, traceFigures(ref.whole, averaged), "aggregate");
        for (const key of Object.keys(traceFigures([], averaged))) checkBuckets(answer.body, key, ref, q, (records) => traceFigures(records, averaged)[key]!);
      }),
      { numRuns: runs },
    );
  } finally {
    percentileTolerance = 1e-9;
  }
}

describe("metrics/search from pre-aggregated cells", () => {
  it("equals the reference after the cells are computed, after writes that mark hours, and after they are recomputed", async () => {
    const settings = await call(`/v2/projects/${projectId}/analytics_settings`, { as: tenant, method: "PUT", body: { metadata_key: "customer" } });
    expect(settings.status).toBe(200);
    await refreshCells();
    const db = await recordsOf(projectId);
    const cells = await db.prepare("SELECT count(*) AS n FROM metric_cells WHERE run_id = ?1 AND grouping = 'metadata'").bind(stream).first<{ n: number }>();
    expect(cells!.n).toBeGreaterThan(0);
    await checkAligned(15);

    // Writes after the refresh: new traces, patches (a new extreme duration), deletions. Their hours are marked and scanned.
    const { batches, int } = randomData(77);
    const answer = await call(`/v2/projects/${projectId}/traces`, { as: tenant, body: { log_stream_id: stream, traces: batches[0] } });
    expect(answer.status).toBe(200);
    const longest = [...traces].sort((a, b) => (b.metrics.duration_ns ?? 0) - (a.metrics.duration_ns ?? 0))[0]!;
    for (const trace of [longest, ...traces.slice(20, 25)]) {
      const patch = await call(`/v2/projects/${projectId}/traces/${trace.id}`, { as: tenant, method: "PATCH", body: { log_stream_id: stream, status_code: 500, duration_ns: int(1, 50) } });
      expect(patch.status).toBe(200);
    }
    const erase = await call("/v2/org-jobs/delete-by-metadata?immediate=true", { as: tenant, body: { metadata_key: "erase", metadata_value: "span-gone" } });
    expect(erase.status).toBe(200);
    const dirty = await db.prepare("SELECT count(*) AS n FROM metric_dirty_hours WHERE run_id = ?1").bind(stream).first<{ n: number }>();
    expect(dirty!.n).toBeGreaterThan(0);
    traces = await everything("traces");
    spans = await everything("spans");
    await checkAligned(10);

    await refreshCells();
    await checkAligned(10);
  }, 300_000);
});
