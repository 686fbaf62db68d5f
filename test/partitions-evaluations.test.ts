/**
 * Online evaluations across partitions on several shards (contract sections 13 and 15;
 * docs/partitions.md, docs/evaluations.md "Partitions"): a project created on SHARD_0 whose
 * records sit in partitions on SHARD_0 and SHARD_1 gets every record scored wherever it is
 * stored (new records, late children written while the open partition is elsewhere), its
 * backfill covers both shards, the cron's safety net scores a pending result on the second
 * shard, a scorer is tested on a record there, each result lives beside its record, and the
 * scores read back as metrics (filters, metrics/search averages) and in the scorer's counts
 * from both shards.
 */
import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { sweepDueResults } from "../src/evaluations/due-results";
import { clearPartitionCache } from "../src/partitions/partition-catalog";
import { type PartitionedProject, fetchAs, ingestTraces, projectOn, rollTo, shardsOf } from "./support/partitioned-project";
import { type Tenant, createTenant } from "./support/tenants";
import { until } from "./support/until";

let tenant: Tenant;
let p: PartitionedProject;
const db = (shard: string) => (env as unknown as Record<string, D1Database>)[shard]!;

async function presetScorer(name: string, preset: string, params: Record<string, unknown>, nodeTypes: string[]): Promise<string> {
  const made = await fetchAs(tenant, {}, "/v2/scorers", { name, scorer_type: "preset", scoreable_node_types: nodeTypes });
  expect(made.status, JSON.stringify(made.body)).toBe(200);
  const version = await fetchAs(tenant, {}, `/v2/scorers/${made.body.id}/version/preset`, { preset, params });
  expect(version.status, JSON.stringify(version.body)).toBe(200);
  return made.body.id;
}

async function setScorers(ids: string[]) {
  const answer = await fetchAs(tenant, {}, `/v2/projects/${p.projectId}/log_streams/${p.logStreamId}/metric_settings`, { scorers: ids.map((id) => ({ id })) }, "PATCH");
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
}

/** The result rows of a scorer for these records, with the shard each is stored on. */
async function resultsOf(scorerId: string, ids: readonly string[]): Promise<Map<string, { shard: string; status: string; value: number | null }>> {
  const found = new Map<string, { shard: string; status: string; value: number | null }>();
  for (const shard of ["DB", "SHARD_0", "SHARD_1"]) {
    const { results } = await db(shard)
      .prepare("SELECT record_id, status, value FROM evaluation_results WHERE project_id = ?1 AND scorer_id = ?2 AND record_id IN (SELECT value FROM json_each(?3))")
      .bind(p.projectId, scorerId, JSON.stringify(ids))
      .all<{ record_id: string; status: string; value: number | null }>();
    for (const row of results) found.set(row.record_id, { shard, status: row.status, value: row.value });
  }
  return found;
}

/** A record's `metrics.<name>` wherever it is stored. */
async function metricOf(id: string, name: string): Promise<number | undefined> {
  for (const shard of ["DB", "SHARD_0", "SHARD_1"]) {
    const row = await db(shard).prepare("SELECT metrics FROM records WHERE project_id = ?1 AND id = ?2").bind(p.projectId, id).first<{ metrics: string }>();
    if (row) return JSON.parse(row.metrics)[name];
  }
  return undefined;
}

const uuid = () => crypto.randomUUID();
const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000).toISOString();

// Traces 0-1 in the first partition (SHARD_0), 2-3 in the second (SHARD_1); JSON output on all but trace 1.
const TRACES = Array.from({ length: 4 }, () => uuid());
const trace = (i: number, spans: Record<string, unknown>[] = []) => ({ id: TRACES[i], name: `t${i}`, input: "q", output: i !== 1 ? '{"ok": true}' : "plain text", created_at: minutesAgo(30 - i), spans });
const SPANS = Array.from({ length: 4 }, () => uuid());
const LATE = { onShard1: uuid(), onShard0: uuid() };
let isJson: string;

beforeAll(async () => {
  tenant = await createTenant();
  p = await projectOn(tenant, "SHARD_0");
  isJson = await presetScorer(`json_${uuid().slice(0, 8)}`, "is_json", {}, ["trace", "llm"]);
  await setScorers([isJson]);
  await ingestTraces(p, [0, 1].map((i) => trace(i, [{ id: SPANS[i], type: "llm", name: "l", input: "q", output: i % 2 === 0 ? "[1]" : "no", created_at: minutesAgo(30 - i) }])));
  await rollTo(p, "SHARD_1");
  await ingestTraces(p, [2, 3].map((i) => trace(i, [{ id: SPANS[i], type: "llm", name: "l", input: "q", output: i % 2 === 0 ? "[1]" : "no", created_at: minutesAgo(30 - i) }])));
  // Back to a partition on SHARD_0: a late child of trace 2 still goes to its trace's partition on SHARD_1.
  await rollTo(p, "SHARD_0");
  const late1 = await fetchAs(tenant, {}, `/v2/projects/${p.projectId}/spans`, { log_stream_id: p.logStreamId, trace_id: TRACES[2], parent_id: TRACES[2], spans: [{ id: LATE.onShard1, type: "llm", name: "late", input: "q", output: '{"late": 1}' }] });
  expect(late1.status, JSON.stringify(late1.body)).toBe(200);
  const late0 = await fetchAs(tenant, {}, `/v2/projects/${p.projectId}/spans`, { log_stream_id: p.logStreamId, trace_id: TRACES[1], parent_id: TRACES[1], spans: [{ id: LATE.onShard0, type: "llm", name: "late", input: "q", output: "not json" }] });
  expect(late0.status, JSON.stringify(late0.body)).toBe(200);
  clearPartitionCache();
});

const ALL = () => [...TRACES, ...SPANS, LATE.onShard1, LATE.onShard0];
const expectedJson = (id: string) => (id === LATE.onShard1 ? 1 : id === LATE.onShard0 ? 0 : TRACES.includes(id) ? (TRACES.indexOf(id) !== 1 ? 1 : 0) : SPANS.indexOf(id) % 2 === 0 ? 1 : 0);

describe("online evaluations across partition shards", () => {
  it("stores the records where the partitions put them", async () => {
    const where = await shardsOf(p, ALL());
    expect([0, 1].map((i) => where.get(TRACES[i]!))).toEqual(["SHARD_0", "SHARD_0"]);
    expect([2, 3].map((i) => where.get(TRACES[i]!))).toEqual(["SHARD_1", "SHARD_1"]);
    expect(where.get(LATE.onShard1)).toBe("SHARD_1");
    expect(where.get(LATE.onShard0)).toBe("SHARD_0");
  });

  it("scores every new record, late children included, on the shard that holds it, once", async () => {
    const ids = ALL();
    const results = await until("every record scored", async () => {
      const r = await resultsOf(isJson, ids);
      return r.size === ids.length && [...r.values()].every((x) => x.status === "success") ? r : null;
    });
    const where = await shardsOf(p, ids);
    for (const id of ids) {
      expect(results.get(id)!.shard, id).toBe(where.get(id));
      expect(results.get(id)!.value, id).toBe(expectedJson(id));
    }
    for (const id of ids) expect(await metricOf(id, (await scorerName(isJson)))).toBe(expectedJson(id));
  });

  it("reads the scores of both shards back as metrics: filters, metrics/search averages, the scorer's counts", async () => {
    const name = await scorerName(isJson);
    const filtered = await fetchAs(tenant, {}, `/v2/projects/${p.projectId}/traces/partial_search`, {
      log_stream_id: p.logStreamId,
      filters: [{ column_id: `metrics/${name}`, operator: "eq", value: 1, type: "number" }],
      sort: { column_id: "name", ascending: true },
      limit: 10,
    });
    expect(filtered.status, JSON.stringify(filtered.body)).toBe(200);
    expect(filtered.body.records.map((r: { name: string }) => r.name)).toEqual(["t0", "t2", "t3"]);
    const spans = await fetchAs(tenant, {}, `/v2/projects/${p.projectId}/spans/partial_search`, {
      log_stream_id: p.logStreamId,
      filters: [{ column_id: `metrics/${name}`, operator: "eq", value: 1, type: "number" }],
      limit: 20,
    });
    expect(spans.status, JSON.stringify(spans.body)).toBe(200);
    expect(spans.body.records.map((r: { id: string }) => r.id).sort()).toEqual([SPANS[0], SPANS[2], LATE.onShard1].sort());

    // metrics/search averages the traces' metrics: 1, 0 on SHARD_0 and 1, 1 on SHARD_1 (0.5 from SHARD_0 alone).
    const window = { start_time: minutesAgo(120), end_time: new Date(Date.now() + 60_000).toISOString(), interval: 1440 };
    const averaged = await until("the average over both shards", async () => {
      const a = await fetchAs(tenant, {}, `/v2/projects/${p.projectId}/metrics/search`, { log_stream_id: p.logStreamId, ...window });
      expect(a.status, JSON.stringify(a.body)).toBe(200);
      return a.body.aggregate_metrics?.[`average_${name}`] === 0.75 ? a.body : null;
    });
    expect(averaged.aggregate_metrics[`average_${name}`]).toBe(0.75);

    const scorer = await fetchAs(tenant, {}, `/v2/scorers/${isJson}`);
    expect(scorer.status, JSON.stringify(scorer.body)).toBe(200);
    expect(scorer.body.counts).toEqual({ pending: 0, success: 10, error: 0 });
  });

  it("tests a scorer on a record stored in a partition on the other shard", async () => {
    const answer = await fetchAs(tenant, {}, `/v2/scorers/${isJson}/test`, { project_id: p.projectId, record_id: TRACES[3] });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body).toMatchObject({ record_id: TRACES[3], result: { status_type: "success", value: 1 } });
  });

  it("backfills a range covering both shards as one org-job, each result beside its record", async () => {
    const words = await presetScorer(`words_${uuid().slice(0, 8)}`, "length", { unit: "words" }, ["trace"]);
    await setScorers([isJson, words]);
    const job = await fetchAs(tenant, {}, `/v2/projects/${p.projectId}/log_streams/${p.logStreamId}/metric_settings/backfill`, {
      start_time: minutesAgo(120),
      end_time: new Date(Date.now() + 60_000).toISOString(),
      scorer_ids: [words],
    });
    expect(job.status, JSON.stringify(job.body)).toBe(200);
    const done = await until("the backfill", async () => {
      const j = await fetchAs(tenant, {}, `/v2/org-jobs/${job.body.job_id}`);
      return j.body.status === "completed" || j.body.status === "failed" ? j.body : null;
    });
    expect(done).toMatchObject({ status: "completed", job_name: "score", progress: { records_scored: 4, records_skipped: 6, errors: 0 } });
    const results = await resultsOf(words, TRACES);
    const where = await shardsOf(p, TRACES);
    for (const id of TRACES) {
      expect(results.get(id), id).toMatchObject({ shard: where.get(id), status: "success", value: 2 });
    }
  });

  it("the safety net scores a pending result on the second shard whose message never came", async () => {
    const deferred = await presetScorer(`deferred_${uuid().slice(0, 8)}`, "is_json", {}, ["trace"]);
    const version = await env.DB.prepare("SELECT version_id FROM scorers WHERE id = ?1").bind(deferred).first<{ version_id: string }>();
    await setScorers([isJson, deferred]);
    const record = TRACES[2]!;
    const nowUs = Date.now() * 1000;
    // As a spent budget leaves it, beside its record on SHARD_1, its delayed message lost.
    await db("SHARD_1")
      .prepare("INSERT INTO evaluation_results (project_id, record_id, scorer_id, version_id, run_id, status, info, reason, attempts, updated_at, due_at) VALUES (?1, ?2, ?3, ?4, ?5, 'pending', ?6, 'budget spent', 0, ?7, ?8)")
      .bind(p.projectId, record, deferred, version!.version_id, p.logStreamId, JSON.stringify({ status_type: "pending", message: "budget spent", scorer_id: deferred, scorer_version: 1 }), nowUs - 7_200_000_000, nowUs - 3_600_000_000)
      .run();
    expect(await sweepDueResults(env)).toBeGreaterThanOrEqual(1);
    const scored = await until("the pending result scored", async () => {
      const r = (await resultsOf(deferred, [record])).get(record);
      return r?.status === "success" ? r : null;
    });
    expect(scored).toEqual({ shard: "SHARD_1", status: "success", value: 1 });
    expect(await metricOf(record, await scorerName(deferred))).toBe(1);
  });
});

async function scorerName(id: string): Promise<string> {
  const answer = await fetchAs(tenant, {}, `/v2/scorers/${id}`);
  return answer.body.name;
}
