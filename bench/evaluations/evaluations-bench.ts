/**
 * The online evaluations benchmark (issue 34, item 6), on one `wrangler dev` in one run:
 *
 * 1. Ingest with five presets enabled on the run (is_json, length, contains, regex,
 *    latency_under, scoring traces and every span type) against ingest with none: the ingest
 *    benchmark's realistic payload (100 traces × 10 spans a request, one client), phases off, on,
 *    off, on, so that the database growing under them weighs on both alike. After each "on"
 *    phase the bench waits until every record of it has its five results before the next phase
 *    (so an "off" phase never pays for the scoring of the one before). Target: on ≥ 0.9× off.
 * 2. The presets' lag: per record of the "on" phases, the last of its five results' `updated_at`
 *    minus the time its request was answered (one machine, one clock), p50/p95/max. Target: p95
 *    ≤ 10 s.
 * 3. Judge pacing: an LLM judge on a run, served by an OpenAI-compatible server this process
 *    starts on 127.0.0.1 (answers at once), the integration at --rpm requests per minute
 *    (default 20); a burst of traces is written and the judge's calls are logged for --seconds
 *    (default 150): the most calls in any 60 s window (sliding, over every call's start) against
 *    the integration's requests per minute. Target: never above.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import { performance } from "node:perf_hooks";
import type { IngestTrace } from "../../src/ingest/ingest-schemas";
import { discardCopy, emptyDatabase, sqliteFileOf } from "../dataset/dataset-cache";
import { sessionInput } from "../dataset/synthetic-traces";
import { workload } from "../ingest/ingest-bench";
import { expectStatus, timedJson } from "../lib/http-timing";
import { finishReport } from "../lib/finish-report";
import { markdownTable, runConditions } from "../lib/markdown-report";
import { SERVICE_CONFIG } from "../lib/paths";
import { queryJson } from "../lib/sqlite-cli";
import { count, ms, percentile, ratio } from "../lib/stats";
import { type DevServer, sleep, withDevServer } from "../lib/wrangler-dev";
import { BENCH_VARS } from "../search/search-bench";

export interface EvaluationsBenchOptions {
  quick: boolean;
  /** Timed requests per ingest phase. */
  requests?: number;
  /** How long the judge's calls are watched. */
  seconds?: number;
  rpm?: number;
}

const SEED = 34;
const SPANS_PER_REQUEST = 1000;
const NODE_TYPES = ["trace", "llm", "tool", "retriever", "workflow", "agent", "control"];
const PRESETS: { name: string; preset: string; params: Record<string, unknown>; output_type?: string }[] = [
  { name: "bench_is_json", preset: "is_json", params: {} },
  { name: "bench_words", preset: "length", params: { unit: "words" }, output_type: "count" },
  { name: "bench_contains", preset: "contains", params: { values: ["refund", "order"] } },
  { name: "bench_regex", preset: "regex", params: { pattern: "\\d{3,}" } },
  { name: "bench_fast", preset: "latency_under", params: { ms: 2000 } },
];

/** Every record id of a request: the traces and their nested spans. */
function idsOf(traces: IngestTrace[]): string[] {
  const ids: string[] = [];
  const visit = (r: { id?: string; spans?: unknown[] }) => {
    if (r.id) ids.push(r.id);
    for (const child of (r.spans ?? []) as (typeof r)[]) visit(child);
  };
  for (const t of traces) visit(t as never);
  return ids;
}

interface Phase {
  label: "off" | "on";
  spans: number;
  seconds: number;
  /** The on phases: record id → when its request was answered (ms since the epoch). */
  answered: Map<string, number>;
}

async function api<T = any>(server: DevServer, key: string, method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`${server.baseUrl}${path}`, { method, headers: { "Service-API-Key": key, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text.slice(0, 300)}`);
  return (text ? JSON.parse(text) : null) as T;
}

/** How long the result count may stay still before the wait calls it a stall. */
const STALL_MS = 60_000;

const countResults = async (file: string, projectId: string) =>
  (await queryJson<{ n: number }>(file, { sql: "SELECT count(*) AS n FROM evaluation_results WHERE project_id = ?1", params: [projectId] }))[0]?.n ?? 0;

/**
 * Waits until every id has `results` scorer results (or gives up after `timeoutMs`); answers their
 * last result's time (µs) per id. The wait polls one count every 2 s (a short read of the primary
 * key), the per-record query runs once at the end: the shell's reads lock the file (the local
 * database is not in WAL mode). Records left unscored in earlier runs were the local queue
 * simulator's stall (markersLeft), not these reads.
 */
async function waitForResults(file: string, projectId: string, ids: string[], results: number, target: number, timeoutMs: number): Promise<Map<string, number>> {
  const started = Date.now();
  // A count that has not moved for STALL_MS is a stall (the run's cause is in the worker's log),
  // not a slow scorer: waiting the full timeout then says nothing more.
  let seen = -1;
  let movedAt = Date.now();
  for (;;) {
    const n = await countResults(file, projectId);
    if (n >= target || Date.now() - started >= timeoutMs) break;
    if (n !== seen) [seen, movedAt] = [n, Date.now()];
    else if (Date.now() - movedAt >= STALL_MS) {
      console.log(`  no result written for ${STALL_MS / 1000} s: stalled at ${n} of ${target}`);
      break;
    }
    await sleep(2000);
  }
  const rows = await queryJson<{ record_id: string; n: number; last: number }>(file, {
    sql: "SELECT record_id, count(*) AS n, max(updated_at) AS last FROM evaluation_results WHERE project_id = ?1 AND record_id IN (SELECT value FROM json_each(?2)) GROUP BY record_id",
    params: [projectId, JSON.stringify(ids)],
  });
  const done = rows.filter((r) => r.n >= results);
  if (done.length < ids.length) console.log(`  gave up waiting: ${done.length} of ${ids.length} records scored`);
  return new Map(done.map((r) => [r.record_id, r.last]));
}

async function ingestPhases(server: DevServer, file: string, tenant: { apiKey: string; projectId: string; logStreamId: string }, requests: number) {
  const order: ("off" | "on")[] = ["off", "on", "off", "on"];
  const loads = order.map((_, i) => workload(requests + 1, i * (requests + 1) * 100, "realistic"));
  const scorerIds: string[] = [];
  for (const p of PRESETS) {
    const created = await api<{ id: string }>(server, tenant.apiKey, "POST", "/v2/scorers", { name: p.name, scorer_type: "preset", scoreable_node_types: NODE_TYPES, ...(p.output_type ? { output_type: p.output_type } : {}) });
    await api(server, tenant.apiKey, "POST", `/v2/scorers/${created.id}/version/preset`, { preset: p.preset, params: p.params });
    scorerIds.push(created.id);
  }
  const settings = `/v2/projects/${tenant.projectId}/log_streams/${tenant.logStreamId}/metric_settings`;
  const headers = { "Service-API-Key": tenant.apiKey };
  const phases: Phase[] = [];
  const lags: number[] = [];
  let unscored = 0;
  for (const [i, mode] of order.entries()) {
    await api(server, tenant.apiKey, "PATCH", settings, { scorers: mode === "on" ? scorerIds.map((id) => ({ id })) : [], segment_filters: [] });
    const before = await countResults(file, tenant.projectId);
    // The settings' per-isolate cache lives 4 s: past it, every request of the phase sees them.
    await sleep(5000);
    const load = loads[i]!;
    for (const session of load.sessions) {
      expectStatus(await timedJson(`${server.baseUrl}/v2/projects/${tenant.projectId}/sessions`, { body: { log_stream_id: tenant.logStreamId, ...sessionInput(SEED, session) }, headers }), 200, "create session");
    }
    const url = `${server.baseUrl}/v2/projects/${tenant.projectId}/traces`;
    const [warmup, ...timed] = load.requests;
    expectStatus(await timedJson(url, { body: { log_stream_id: tenant.logStreamId, traces: warmup }, headers }), 200, "warm-up");
    const answered = new Map<string, number>();
    const started = performance.now();
    for (const traces of timed) {
      expectStatus(await timedJson(url, { body: { log_stream_id: tenant.logStreamId, traces }, headers }), 200, "ingest");
      const at = Date.now();
      for (const id of idsOf(traces)) answered.set(id, at);
    }
    const seconds = (performance.now() - started) / 1000;
    phases.push({ label: mode, spans: timed.length * SPANS_PER_REQUEST, seconds, answered });
    console.log(`  evaluations ${mode} (phase ${i + 1}): ${count((timed.length * SPANS_PER_REQUEST) / seconds)} spans/s`);
    if (mode === "on") {
      const ids = [...answered.keys()];
      // The warm-up's records are scored too: the count waits for them as well.
      const last = await waitForResults(file, tenant.projectId, ids, PRESETS.length, before + (ids.length + idsOf(warmup!).length) * PRESETS.length, 300_000);
      unscored += ids.length - last.size;
      for (const [id, micros] of last) lags.push(micros / 1000 - answered.get(id)!);
    }
  }
  return { phases, lags, unscored };
}

/** The local judge: logs each call's arrival, answers at once. */
function startJudge(calls: number[]): Promise<{ server: http.Server; origin: string }> {
  const server = http.createServer((request, response) => {
    let raw = "";
    request.setEncoding("utf8");
    request.on("data", (chunk) => (raw += chunk));
    request.on("end", () => {
      calls.push(Date.now());
      const body = JSON.parse(raw) as { model: string };
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify({ id: "b", object: "chat.completion", model: body.model, choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: JSON.stringify({ score: true, explanation: "ok" }) } }], usage: { prompt_tokens: 50, completion_tokens: 5 } }));
    });
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve({ server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })));
}

/** The most calls in any 60 s window starting at a call. */
function maxPerWindow(calls: number[]): number {
  const sorted = [...calls].sort((a, b) => a - b);
  let best = 0;
  let j = 0;
  for (let i = 0; i < sorted.length; i++) {
    while (j < sorted.length && sorted[j]! < sorted[i]! + 60_000) j++;
    best = Math.max(best, j - i);
  }
  return best;
}

async function judgePacing(server: DevServer, tenant: { apiKey: string; projectId: string }, rpm: number, seconds: number) {
  const calls: number[] = [];
  const judge = await startJudge(calls);
  try {
    await api(server, tenant.apiKey, "PUT", "/v2/integrations/custom", { endpoint: `${judge.origin}/v1`, api_key_value: "sk-bench", models: ["judge-model"], requests_per_minute: rpm, max_concurrency: 4 });
    const scorer = await api<{ id: string }>(server, tenant.apiKey, "POST", "/v2/scorers", { name: "bench_judge", scorer_type: "llm", scoreable_node_types: ["trace"], output_type: "boolean" });
    await api(server, tenant.apiKey, "POST", `/v2/scorers/${scorer.id}/version/llm`, { instructions: "Is it fine?", user_prompt: "{output}", model_name: "judge-model" });
    const run = await api<{ id: string }>(server, tenant.apiKey, "POST", `/v2/projects/${tenant.projectId}/log_streams`, { name: "judged" });
    await api(server, tenant.apiKey, "PATCH", `/v2/projects/${tenant.projectId}/log_streams/${run.id}/metric_settings`, { scorers: [{ id: scorer.id }], segment_filters: [] });
    await sleep(5000);
    // Three times what the pace allows over the watch: the judge is always behind.
    const traces = Math.ceil((rpm * seconds * 3) / 60);
    const started = Date.now();
    await api(server, tenant.apiKey, "POST", `/v2/projects/${tenant.projectId}/traces`, { log_stream_id: run.id, traces: Array.from({ length: traces }, (_, i) => ({ id: crypto.randomUUID(), name: `t${i}`, input: "q", output: `answer ${i}` })) });
    await sleep(seconds * 1000);
    // The figure is the calls' log; the scorer's counts are a check (a failed read is reported, not fatal).
    const health = await api<{ counts: { pending: number; success: number; error: number } }>(server, tenant.apiKey, "GET", `/v2/scorers/${scorer.id}`).catch((error) => {
      console.log(`  the scorer's counts could not be read: ${error instanceof Error ? error.message : String(error)}`);
      return { counts: { pending: NaN, success: NaN, error: NaN } };
    });
    const watched = (Date.now() - started) / 1000;
    // The judge is left behind on purpose: off before the ingest phases, so its paced retries do not run beside them.
    await api(server, tenant.apiKey, "PATCH", `/v2/projects/${tenant.projectId}/log_streams/${run.id}/metric_settings`, { scorers: [], segment_filters: [] });
    return { traces, calls: calls.length, maxWindow: maxPerWindow(calls), watched, counts: health.counts };
  } finally {
    judge.server.close();
  }
}

/**
 * Scoring messages not handled at the end (each write's intake markers, deleted by the consumer
 * once its message is handled): records whose message is still in the queue or was lost. Under
 * `wrangler dev` the cron that sends them again never fires, and miniflare's local queue broker
 * (wrangler 4.86) stalls for good when its log call after a batch fails ("Network connection
 * lost.", after a consumer invocation of about 5 s: the loopback's keep-alive): its pending
 * flush is never cleared, so it dispatches again only once max_batch_size messages wait.
 */
async function markersLeft(file: string): Promise<{ markers: number; records: number }> {
  const [row] = await queryJson<{ markers: number; records: number }>(file, { sql: "SELECT count(*) AS markers, coalesce(sum(json_array_length(record_ids)), 0) AS records FROM evaluation_intake", params: [] });
  return row ?? { markers: 0, records: 0 };
}

/**
 * The bench's one database: only DB is migrated (emptyDatabase), and the tenant's project lives
 * there. wrangler.toml lists SHARD_0 and SHARD_1 as data shards, whose local files this bench
 * never migrates; routes that read every record database (GET /v2/scorers/{id}'s counts, the
 * cron's sweeps) then met "no such table" there: the 500 two runs' GET on the judge's scorer
 * answered. The route now answers the readable databases' counts with `counts_complete: false`
 * (test/evaluations-api.test.ts); serving DB alone keeps the bench's counts complete.
 */
const EVALUATIONS_SHARDS = "DB";

export async function runEvaluationsBench(options: EvaluationsBenchOptions): Promise<string> {
  const startLoad = os.loadavg();
  const requests = options.requests ?? (options.quick ? 2 : 5);
  const seconds = options.seconds ?? (options.quick ? 75 : 150);
  const rpm = options.rpm ?? 20;
  console.log(`\nevaluations: ${requests} timed requests of ${SPANS_PER_REQUEST} spans per phase (off, on, off, on), then the judge's pace at ${rpm}/min watched ${seconds} s`);
  const db = await emptyDatabase("evaluations", SEED);
  let result;
  try {
    const { tenant } = db.manifest;
    const file = sqliteFileOf(db.persistDir);
    result = await withDevServer({ name: "evaluations", config: SERVICE_CONFIG, persistTo: db.persistDir, vars: { ...BENCH_VARS, JUDGE_DESTINATIONS: "local", DATA_SHARDS: EVALUATIONS_SHARDS }, readyPath: "/healthcheck" }, async (server) => {
      // The judge first: once the local queue simulator stalls (see markersLeft), nothing after
      // it is consumed, and the judge's calls were the casualty of every earlier run (0 calls).
      const pacing = await judgePacing(server, tenant, rpm, seconds);
      const ingest = await ingestPhases(server, file, tenant, requests);
      return { ingest, pacing, markers: await markersLeft(file) };
    });
  } finally {
    discardCopy(db);
  }
  const endLoad = os.loadavg();
  const { phases, lags, unscored } = result.ingest;
  const rate = (label: string) => {
    const of = phases.filter((p) => p.label === label);
    return of.reduce((s, p) => s + p.spans, 0) / of.reduce((s, p) => s + p.seconds, 0);
  };
  const versus = rate("on") / rate("off");
  const p95 = lags.length > 0 ? percentile(lags, 95) : NaN;
  const { pacing } = result;
  const markdown = [
    "# Online evaluations benchmark",
    "",
    runConditions(startLoad),
    `- load average at the end: ${endLoad.map((l) => l.toFixed(2)).join(", ")} (2 cores, shared with other work)`,
    `- judge pacing first, then ingest: ${requests} timed requests (after a warm-up) of 100 traces × 10 spans per phase, one client, the realistic payload; phases off, on, off, on on one server; "on": five presets (${PRESETS.map((p) => p.preset).join(", ")}) on traces and every span type`,
    "",
    markdownTable(
      ["phase", "spans", "seconds", "spans/s"],
      phases.map((p, i) => [`${i + 1}: presets ${p.label}`, count(p.spans), p.seconds.toFixed(2), count(p.spans / p.seconds)]),
      ["l", "r", "r", "r"],
    ),
    "",
    `Five presets on: **${ratio(versus)}** of none (target ≥ 0.9×): ${versus >= 0.9 ? "PASS" : "FAIL"}.`,
    "",
    `Lag from the write's answer to the record's fifth result (${count(lags.length)} records${unscored > 0 ? `, ${count(unscored)} not fully scored within 300 s` : ""}): p50 ${ms(percentile(lags, 50))} ms, **p95 ${ms(p95)} ms**, max ${ms(Math.max(...lags))} ms (target p95 ≤ 10 s): ${p95 <= 10_000 && unscored === 0 ? "PASS" : "FAIL"}.`,
    "",
    `Scoring messages not handled at the end (intake markers left): ${result.markers.markers}, naming ${count(result.markers.records)} records.`,
    "",
    `Judge pacing (run first): ${pacing.traces} traces written at once to a run with an LLM judge, the integration at ${rpm} requests per minute, watched ${pacing.watched.toFixed(0)} s: ${pacing.calls} calls, **at most ${pacing.maxWindow} in any 60 s window** (limit ${rpm}): ${pacing.maxWindow <= rpm ? "PASS" : "FAIL"}; the scorer then counted ${pacing.counts.success} scored, ${pacing.counts.pending} pending, ${pacing.counts.error} in error.`,
    "",
  ].join("\n");
  return finishReport("evaluations", markdown, options.quick);
}
