/**
 * Online evaluations (contract section 15) through the worker's entry point: scorers and their
 * versions (validation, roles, tenancy, names), metric_settings, and presets scoring records
 * after their write through the evaluation queue: values in `metrics.<name>`, `metric_info`
 * with its status, a column of available_columns, one result per (record, scorer version) under
 * redelivery, and GET on a scorer counting by status.
 */
import { createExecutionContext, createMessageBatch, env, getQueueResult } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import type { EvaluationMessage } from "../src/env";
import { handleEvaluationQueue } from "../src/evaluations/evaluation-consumer";
import { hexToUuid, spanUuid } from "../src/otlp/otel-ids";
import type { Env } from "../src/env";
import { call } from "./support/client";
import { failingDatabase } from "./support/failing-database";
import { exportRequest, otlpSpan, postOtlp, protobufBody, randomHex } from "./support/otlp-requests";
import { recordsOf } from "./support/record-dbs";
import { addUser, createTenant, type Tenant } from "./support/tenants";
import { until } from "./support/until";
import { callWorkerWith } from "./support/worker-call";

let admin: Tenant;
let member: Tenant;
let other: Tenant;
let projectId: string;
let stream: string;
const ids = { json: crypto.randomUUID(), text: crypto.randomUUID(), noCost: crypto.randomUUID(), unsampled: crypto.randomUUID() };

const scorer = (body: Record<string, unknown>, as: Tenant = admin) => call("/v2/scorers", { as, body: { scorer_type: "preset", ...body } });
const presetVersion = (id: string, preset: string, params: Record<string, unknown>, as: Tenant = admin) => call(`/v2/scorers/${id}/version/preset`, { as, body: { preset, params } });

async function presetScorer(name: string, preset: string, params: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const created = await scorer({ name, ...extra });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const version = await presetVersion(created.body.id, preset, params);
  expect(version.status, JSON.stringify(version.body)).toBe(200);
  return created.body.id as string;
}

async function storedRecord(id: string) {
  const db = await recordsOf(projectId);
  return db.prepare("SELECT metrics, metric_info FROM records WHERE project_id = ?1 AND id = ?2").bind(projectId, id).first<{ metrics: string; metric_info: string | null }>();
}

beforeAll(async () => {
  admin = await createTenant();
  member = await addUser(admin, "member");
  other = await createTenant();
  projectId = (await call("/v2/projects", { as: admin, body: { name: "evaluations" } })).body.id;
  stream = (await call(`/v2/projects/${projectId}/log_streams`, { as: admin, body: { name: "default" } })).body.id;
});

describe("scorers", () => {
  it("creates, reads, lists, renames and deletes, in Galileo's shapes", async () => {
    const created = await scorer({ name: "has_greeting", description: "says hello", tags: ["tone"], output_type: "boolean" });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body).toMatchObject({ name: "has_greeting", scorer_type: "preset", description: "says hello", tags: ["tone"], output_type: "boolean", scoreable_node_types: ["llm"], daily_budget: 10_000, latest_version: null });
    const id = created.body.id;
    const v1 = await presetVersion(id, "contains", { values: ["hello"] });
    expect(v1.body).toMatchObject({ version: 1, scorer_id: id, preset: { name: "contains", params: { values: ["hello"], mode: "any", case_sensitive: false, field: "output" } } });
    const v2 = await presetVersion(id, "contains", { values: ["hello", "hi"], mode: "all" });
    expect(v2.body.version).toBe(2);
    const got = await call(`/v2/scorers/${id}`, { as: member });
    expect(got.status).toBe(200);
    expect(got.body.latest_version).toMatchObject({ id: v2.body.id, version: 2 });
    expect(got.body.counts).toEqual({ pending: 0, success: 0, error: 0 });
    expect(got.body.last_error).toBeNull();
    const versions = await call(`/v2/scorers/${id}/versions`, { as: member });
    expect(versions.body.map((v: { version: number }) => v.version)).toEqual([2, 1]);
    const listed = await call("/v2/scorers/list", { as: member, body: { filters: [{ name: "name", value: "greet", operator: "contains" }] } });
    expect(listed.body.scorers.map((s: { name: string }) => s.name)).toEqual(["has_greeting"]);
    // A long `contains` value is no database error (D1 refuses LIKE patterns over 50 bytes).
    const long = await call("/v2/scorers/list", { as: member, body: { filters: [{ name: "tags", value: "t".repeat(200), operator: "contains" }] } });
    expect(long.status, JSON.stringify(long.body)).toBe(200);
    expect(long.body.scorers).toEqual([]);
    const renamed = await call(`/v2/scorers/${id}`, { as: admin, method: "PATCH", body: { name: "greets", daily_budget: 5 } });
    expect(renamed.body).toMatchObject({ name: "greets", daily_budget: 5 });
    expect((await call(`/v2/scorers/${id}`, { as: admin, method: "DELETE" })).body).toEqual({ id, deleted: true });
    expect((await call(`/v2/scorers/${id}`, { as: admin })).status).toBe(404);
  });

  it("refuses bad names, taken names, bad presets and wrong version kinds with 422/409", async () => {
    expect((await scorer({ name: "Bad Name" })).status).toBe(422);
    expect((await scorer({ name: "taken" })).status).toBe(200);
    expect((await scorer({ name: "taken" })).status).toBe(409);
    const id = (await scorer({ name: "checks" })).body.id;
    const badRegex = await presetVersion(id, "regex", { pattern: "(a+)+\\1" });
    expect(badRegex.status).toBe(422);
    expect(badRegex.body.detail[0].loc).toEqual(["body", "params", "pattern"]);
    const lookaround = await presetVersion(id, "regex", { pattern: "(?=x)" });
    expect(lookaround.status).toBe(422);
    expect((await presetVersion(id, "length", { min: 5, max: 2 })).status).toBe(422);
    expect((await presetVersion(id, "similarity", { reference: "elsewhere" })).status).toBe(422);
    expect((await presetVersion(id, "pii", { detectors: ["nope"] })).status).toBe(422);
    expect((await presetVersion(id, "contains", { values: ["x"], extra: 1 })).status).toBe(422);
    const llm = await call(`/v2/scorers/${id}/version/llm`, { as: admin, body: { user_prompt: "{output}", model_name: "m" } });
    expect(llm.status).toBe(422);
    const judge = (await call("/v2/scorers", { as: admin, body: { name: "judge_cat", scorer_type: "llm", output_type: "categorical" } })).body.id;
    expect((await call(`/v2/scorers/${judge}/version/llm`, { as: admin, body: { user_prompt: "{output}", model_name: "m" } })).status).toBe(422);
    const ok = await call(`/v2/scorers/${judge}/version/llm`, { as: admin, body: { user_prompt: "Rate {output}", model_name: "m", categories: ["good", "bad"], num_judges: 3 } });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.llm).toMatchObject({ num_judges: 3, categories: ["good", "bad"], output_type: "categorical" });
    expect((await call(`/v2/scorers/${judge}/version/llm`, { as: admin, body: { user_prompt: "x", model_name: "m", num_judges: 6 } })).status).toBe(422);
  });

  it("lets members read but not write, and hides other organizations' scorers", async () => {
    expect((await scorer({ name: "by_member" }, member)).status).toBe(403);
    const id = (await scorer({ name: "private_one" })).body.id;
    expect((await call(`/v2/scorers/${id}`, { as: other })).status).toBe(404);
    expect((await presetVersion(id, "is_json", {}, other)).status).toBe(404);
    expect((await call("/v2/scorers/list", { as: other, body: {} })).body.scorers).toEqual([]);
    // Names are per organization.
    expect((await scorer({ name: "private_one" }, other)).status).toBe(200);
  });
});

describe("scoring after the write", () => {
  it("scores new records with the run's presets, once, as metrics like any other", async () => {
    const isJson = await presetScorer("output_is_json", "is_json", {}, { scoreable_node_types: ["trace"] });
    const words = await presetScorer("output_words", "length", { unit: "words" }, { scoreable_node_types: ["trace"], output_type: "count" });
    const fast = await presetScorer("under_a_second", "latency_under", { ms: 1000 }, { scoreable_node_types: ["trace"] });
    const settings = await call(`/v2/projects/${projectId}/log_streams/${stream}/metric_settings`, {
      as: admin,
      method: "PATCH",
      body: { scorers: [{ id: isJson }, { name: "output_words" }, { id: fast, filters: [{ name: "node_name", operator: "eq", value: "timed" }] }] },
    });
    expect(settings.status, JSON.stringify(settings.body)).toBe(200);
    expect(settings.body.scorers.map((s: { name: string }) => s.name)).toEqual(["output_is_json", "output_words", "under_a_second"]);
    const read = await call(`/v2/projects/${projectId}/log_streams/${stream}/metric_settings`, { as: member });
    expect(read.body).toEqual(settings.body);
    expect((await call(`/v2/projects/${projectId}/log_streams/${stream}/metric_settings`, { as: member, method: "PATCH", body: { scorers: [] } })).status).toBe(403);
    expect((await call(`/v2/projects/${projectId}/log_streams/${stream}/metric_settings`, { as: admin, method: "PATCH", body: { scorers: [{ name: "nope" }] } })).status).toBe(422);

    const written = await call(`/v2/projects/${projectId}/traces`, {
      as: admin,
      body: {
        log_stream_id: stream,
        traces: [
          { id: ids.json, name: "timed", input: "q", output: '{"a": 1}', metrics: { duration_ns: 5_000_000 } },
          { id: ids.text, name: "other", input: "q", output: "three plain words" },
        ],
      },
    });
    expect(written.status, JSON.stringify(written.body)).toBe(200);
    const json = await until("t-json scored", async () => {
      const r = await storedRecord(ids.json);
      return r?.metric_info && JSON.parse(r.metric_info).output_words ? r : null;
    });
    const metrics = JSON.parse(json.metrics);
    const info = JSON.parse(json.metric_info!);
    expect(metrics).toMatchObject({ output_is_json: 1, output_words: 2 });
    expect(info.output_is_json).toMatchObject({ status_type: "success", value: 1 });
    expect(metrics.under_a_second).toBe(1);
    const text = await until("t-text scored", async () => {
      const r = await storedRecord(ids.text);
      return r?.metric_info && JSON.parse(r.metric_info).output_words ? r : null;
    });
    expect(JSON.parse(text.metrics)).toMatchObject({ output_is_json: 0, output_words: 3 });
    // The filter keeps the latency scorer off the other trace.
    expect(JSON.parse(text.metric_info!).under_a_second).toBeUndefined();

    // A column of the run, filterable like any metric.
    const columns = await call(`/v2/projects/${projectId}/traces/available_columns`, { as: member, body: { log_stream_id: stream } });
    const columnIds = (columns.body.columns as { id: string }[]).map((c) => c.id);
    expect(columnIds).toEqual(expect.arrayContaining(["metrics/output_is_json", "metrics/output_words"]));
    const found = await call(`/v2/projects/${projectId}/traces/partial_search`, {
      as: member,
      body: { log_stream_id: stream, filters: [{ column_id: "metrics/output_is_json", operator: "eq", value: 1, type: "number" }], limit: 10 },
    });
    expect(found.status, JSON.stringify(found.body)).toBe(200);
    expect(found.body.records.map((r: { id: string }) => r.id)).toEqual([ids.json]);
    // Sorted by the score, and averaged by metrics/search like any metric.
    const sorted = await call(`/v2/projects/${projectId}/traces/partial_search`, { as: member, body: { log_stream_id: stream, sort: { column_id: "metrics/output_words", ascending: false }, limit: 10 } });
    expect(sorted.body.records.map((r: { id: string }) => r.id)).toEqual([ids.text, ids.json]);
    const start = new Date(Date.now() - 3_600_000).toISOString();
    const end = new Date(Date.now() + 60_000).toISOString();
    const averaged = await call(`/v2/projects/${projectId}/metrics/search`, { as: member, body: { log_stream_id: stream, start_time: start, end_time: end, interval: 120 } });
    expect(averaged.status, JSON.stringify(averaged.body)).toBe(200);
    expect(averaged.body.aggregate_metrics.average_output_words).toBe(2.5);

    // Redelivered (twice, concurrently): still one result per record and scorer.
    const body: EvaluationMessage = { kind: "score", organizationId: admin.organizationId, projectId, runId: stream, recordIds: [ids.json, ids.text] };
    const batch = () => createMessageBatch<EvaluationMessage>("trace-store-evaluations", [{ id: crypto.randomUUID(), timestamp: new Date(), attempts: 1, body }]);
    const ctx = createExecutionContext();
    const [a] = [batch(), batch()];
    await Promise.all([handleEvaluationQueue(a!, env), handleEvaluationQueue(batch(), env)]);
    expect((await getQueueResult(a!, ctx)).explicitAcks).toHaveLength(1);
    const db = await recordsOf(projectId);
    const rows = await db.prepare("SELECT record_id, scorer_id, status, attempts FROM evaluation_results WHERE project_id = ?1 ORDER BY record_id, scorer_id").bind(projectId).all<{ record_id: string; attempts: number; status: string }>();
    expect(rows.results).toHaveLength(5);
    expect(rows.results.every((r) => r.status === "success" && r.attempts === 1)).toBe(true);

    const health = await call(`/v2/scorers/${words}`, { as: member });
    expect(health.body.counts).toEqual({ pending: 0, success: 2, error: 0 });
    expect(health.body.counts_complete).toBe(true);

    // A record database that cannot be read (a shard listed before its migrations ran: "no such
    // table", as the bench's unmigrated shards once answered; or one that is down): the counts of
    // the others, saying so, never a 500.
    const home = (await env.DB.prepare("SELECT coalesce(shard, 'DB') AS shard FROM projects WHERE id = ?1").bind(projectId).first<{ shard: string }>())!.shard;
    const unmigrated = failingDatabase(() => new Error("D1_ERROR: no such table: evaluation_results: SQLITE_ERROR"));
    // (DB is the catalog too: the shards other than the project's stand for the unreadable ones.)
    const others = Object.fromEntries(["SHARD_0", "SHARD_1"].filter((s) => s !== home).map((s) => [s, unmigrated]));
    const partly = await callWorkerWith(others as Partial<Env>, `/v2/scorers/${words}`, { headers: { "Service-API-Key": member.apiKey } });
    expect(partly.status, JSON.stringify(partly.body)).toBe(200);
    expect(partly.body.counts).toEqual({ pending: 0, success: 2, error: 0 });
    expect(partly.body.counts_complete).toBe(false);
    expect(partly.body.counts_message).toMatch(/could not be read/);
  });

  it("scores what the OTLP intake writes, after its answer, like the API's intake", async () => {
    const fast = await presetScorer("otlp_fast", "latency_under", { ms: 1000 }, { scoreable_node_types: ["trace", "llm", "workflow", "tool", "agent", "retriever", "session"] });
    const run = (await call(`/v2/projects/${projectId}/log_streams`, { as: admin, body: { name: "otel" } })).body.id;
    expect((await call(`/v2/projects/${projectId}/log_streams/${run}/metric_settings`, { as: admin, method: "PATCH", body: { scorers: [{ id: fast }] } })).status).toBe(200);
    const trace = randomHex(16);
    const [root, child] = [randomHex(8), randomHex(8)];
    const spans = [otlpSpan({ trace, span: root, name: "root", startMs: Date.now() - 1000, durationMs: 20 }), otlpSpan({ trace, span: child, parent: root, name: "slow child", startMs: Date.now() - 990, durationMs: 1500 })];
    const response = await postOtlp(protobufBody(exportRequest(spans)), { headers: { "Service-API-Key": admin.apiKey, project: projectId, logstream: "otel" } });
    expect(response.status).toBe(200);
    const traceId = hexToUuid(trace);
    const childId = await spanUuid(trace, child);
    const scored = await until("the OTLP trace and span scored", async () => {
      const [t, c] = [await storedRecord(traceId), await storedRecord(childId)];
      return t?.metric_info && c?.metric_info ? { t, c } : null;
    });
    expect(JSON.parse(scored.t.metrics).otlp_fast).toBe(1);
    expect(JSON.parse(scored.c.metrics).otlp_fast).toBe(0);
    expect(JSON.parse(scored.c.metric_info!).otlp_fast).toMatchObject({ status_type: "success", value: 0, scorer_id: fast, scorer_version: 1 });
    // A run without scorers: the OTLP write queues nothing and its records carry no result.
    const bare = randomHex(16);
    expect((await postOtlp(protobufBody(exportRequest([otlpSpan({ trace: bare, span: randomHex(8), durationMs: 3 })])), { headers: { "Service-API-Key": admin.apiKey, project: projectId, logstream: "otel-unscored" } })).status).toBe(200);
    const db = await recordsOf(projectId);
    expect((await db.prepare("SELECT count(*) AS n FROM evaluation_results WHERE project_id = ?1 AND record_id = ?2").bind(projectId, hexToUuid(bare)).first<{ n: number }>())!.n).toBe(0);
  });

  it("tests a scorer on a chosen record, storing nothing", async () => {
    const id = await presetScorer("tested_only", "contains", { values: ["plain"] }, { scoreable_node_types: ["trace"] });
    const tested = await call(`/v2/scorers/${id}/test`, { as: admin, body: { project_id: projectId, record_id: ids.text } });
    expect(tested.status, JSON.stringify(tested.body)).toBe(200);
    expect(tested.body).toEqual({ scorer_id: id, version: 1, record_id: ids.text, result: { status_type: "success", value: 1 } });
    expect(JSON.parse((await storedRecord(ids.text))!.metrics).tested_only).toBeUndefined();
    expect((await call(`/v2/scorers/${id}/test`, { as: member, body: { project_id: projectId, record_id: ids.text } })).status).toBe(403);
    expect((await call(`/v2/scorers/${id}/test`, { as: admin, body: { project_id: projectId, record_id: "nope" } })).status).toBe(404);
    const foreign = (await call("/v2/projects", { as: other, body: { name: "elsewhere" } })).body.id;
    expect((await call(`/v2/scorers/${id}/test`, { as: admin, body: { project_id: foreign, record_id: ids.text } })).status).toBe(404);
  });

  it("says why a record was not scored, and leaves untouched records no metric", async () => {
    const cost = await presetScorer("cheap", "cost_under", { usd: 0.01 }, { scoreable_node_types: ["trace"] });
    const run = (await call(`/v2/projects/${projectId}/log_streams`, { as: admin, body: { name: "costs" } })).body.id;
    expect((await call(`/v2/projects/${projectId}/log_streams/${run}/metric_settings`, { as: admin, method: "PATCH", body: { scorers: [{ id: cost }] } })).status).toBe(200);
    expect((await call(`/v2/projects/${projectId}/traces`, { as: admin, body: { log_stream_id: run, traces: [{ id: ids.noCost, input: "q", output: "a" }] } })).status).toBe(200);
    const stored = await until("no-cost judged", async () => {
      const r = await storedRecord(ids.noCost);
      return r?.metric_info ? r : null;
    });
    expect(JSON.parse(stored.metric_info!).cheap).toMatchObject({ status_type: "not_applicable", message: "not scored: the record has no cost" });
    expect(JSON.parse(stored.metrics).cheap).toBeUndefined();
    // The search answer shows it too (a result without a value is still a metric_info entry).
    const found = await call(`/v2/projects/${projectId}/traces/partial_search`, { as: member, body: { log_stream_id: run, include_code_metric_metadata: true, limit: 5 } });
    expect(found.body.records[0].metric_info.cheap).toMatchObject({ status_type: "not_applicable", message: "not scored: the record has no cost", scorer_id: cost });
  });

  it("samples deterministically: a rate of 0 scores nothing", async () => {
    const id = await presetScorer("never_sampled", "is_json", {}, { scoreable_node_types: ["trace"] });
    const run = (await call(`/v2/projects/${projectId}/log_streams`, { as: admin, body: { name: "sampled" } })).body.id;
    const patched = await call(`/v2/projects/${projectId}/log_streams/${run}/metric_settings`, { as: admin, method: "PATCH", body: { scorers: [{ id }], segment_filters: [{ sample_rate: 0 }] } });
    expect(patched.body.segment_filters).toEqual([{ filter: null, sample_rate: 0, llm_scorers: false }]);
    expect((await call(`/v2/projects/${projectId}/traces`, { as: admin, body: { log_stream_id: run, traces: [{ id: ids.unsampled, input: "q", output: "{}" }] } })).status).toBe(200);
    const body: EvaluationMessage = { kind: "score", organizationId: admin.organizationId, projectId, runId: run, recordIds: [ids.unsampled] };
    await handleEvaluationQueue(createMessageBatch<EvaluationMessage>("trace-store-evaluations", [{ id: crypto.randomUUID(), timestamp: new Date(), attempts: 1, body }]), env);
    expect((await storedRecord(ids.unsampled))!.metric_info).toBeNull();
  });

  it("backfills stored records as an org-job, and a new version re-scores only by backfill", async () => {
    const run = (await call(`/v2/projects/${projectId}/log_streams`, { as: admin, body: { name: "backfilled" } })).body.id;
    const traces = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
    expect((await call(`/v2/projects/${projectId}/traces`, { as: admin, body: { log_stream_id: run, traces: traces.map((id) => ({ id, input: "q", output: "alpha" })) } })).status).toBe(200);
    const id = await presetScorer("mentions_alpha", "contains", { values: ["alpha"] }, { scoreable_node_types: ["trace"] });
    const path = `/v2/projects/${projectId}/log_streams/${run}/metric_settings/backfill`;
    const start = new Date(Date.now() - 3_600_000).toISOString();
    const end = new Date(Date.now() + 60_000).toISOString();
    expect((await call(path, { as: admin, body: { start_time: start, end_time: end } })).status).toBe(422); // no scorer on the run yet
    expect((await call(path, { as: admin, body: { start_time: end, end_time: start, scorer_ids: [id] } })).status).toBe(422);
    expect((await call(path, { as: member, body: { start_time: start, end_time: end, scorer_ids: [id] } })).status).toBe(403);
    expect((await call(`/v2/projects/${projectId}/log_streams/${run}/metric_settings`, { as: admin, method: "PATCH", body: { scorers: [{ id }] } })).status).toBe(200);
    const job = await call(path, { as: admin, body: { start_time: start, end_time: end } });
    expect(job.status, JSON.stringify(job.body)).toBe(200);
    const done = await until("the backfill", async () => {
      const j = await call(`/v2/org-jobs/${job.body.job_id}`, { as: admin });
      return j.body.status === "completed" ? j.body : null;
    });
    expect(done).toMatchObject({ job_name: "score", progress: { records_scored: 3, records_skipped: 0, errors: 0 }, request_data: { run_id: run, scorer_ids: null } });
    for (const trace of traces) expect(JSON.parse((await storedRecord(trace))!.metrics).mentions_alpha).toBe(1);

    // A new version: new records use it, stored results stay until a backfill replaces them.
    expect((await presetVersion(id, "contains", { values: ["alpha"], mode: "none" })).status).toBe(200);
    const body: EvaluationMessage = { kind: "score", organizationId: admin.organizationId, projectId, runId: run, recordIds: traces };
    await handleEvaluationQueue(createMessageBatch<EvaluationMessage>("trace-store-evaluations", [{ id: crypto.randomUUID(), timestamp: new Date(), attempts: 1, body }]), env);
    expect(JSON.parse((await storedRecord(traces[0]!))!.metrics).mentions_alpha).toBe(1);
    const again = await call(path, { as: admin, body: { start_time: start, end_time: end, scorer_ids: [id] } });
    await until("the second backfill", async () => (await call(`/v2/org-jobs/${again.body.job_id}`, { as: admin })).body.status === "completed");
    for (const trace of traces) {
      const stored = (await storedRecord(trace))!;
      expect(JSON.parse(stored.metrics).mentions_alpha).toBe(0);
      expect(JSON.parse(stored.metric_info!).mentions_alpha).toMatchObject({ status_type: "success", scorer_version: 2 });
    }
  });
});
