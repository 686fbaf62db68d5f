/**
 * The upkeep benchmark (issue 29, point 4): derived data measured under ingest, not after it.
 *
 * 1. Baseline ingest: a new database, the service with UPKEEP_AFTER_WRITES=false (writes start no
 *    upkeep, as before issue 29; no cron fires under the bench either), one client sending
 *    requests of 100 traces × 10 spans back to back for the baseline time: spans/s.
 * 2. Steady state: another new database, the service as deployed (writes start the upkeep
 *    through the queue), one client ingesting at full rate for `--seconds`; every `--sample`
 *    seconds the sampler times the first page (S1), the rare substring search (S8) and hourly
 *    metrics/search over the whole window (A1), median of three each, and reads the unindexed
 *    tail (rids above the text index's watermark) and the marked hours from the SQLite file.
 *    Ingest over the same length as the baseline, from the start, against the baseline: ≥ 0.9x.
 * 3. Bulk import: `--bulk` records (requests of 1,100 records, four clients at once), then no
 *    writes: the time until S8 ≤ 1.5 × S1, A1 ≤ 3 × S1 and the tail is empty.
 *
 * Under `wrangler dev` on the shared machine: figures are relative to S1 of the same sample.
 */
import os from "node:os";
import { performance } from "node:perf_hooks";
import { discardCopy, emptyDatabase, type Dataset } from "../dataset/dataset-cache";
import { workload } from "../ingest/ingest-bench";
import { expectStatus, timedJson } from "../lib/http-timing";
import { markdownTable, runConditions } from "../lib/markdown-report";
import { finishReport } from "../lib/finish-report";
import { SERVICE_CONFIG } from "../lib/paths";
import { queryJson } from "../lib/sqlite-cli";
import { count, median, ms, ratio } from "../lib/stats";
import { type DevServer, sleep, withDevServer } from "../lib/wrangler-dev";
import { BENCH_VARS } from "../search/search-bench";
import { SCAN_ADMISSION_OFF } from "../lib/scan-admission-off";

/** The search bench's vars: the scan admission lifted, so a scan shows as time, not as a 429. */
const VARS = { ...BENCH_VARS, ...SCAN_ADMISSION_OFF };

export interface UpkeepBenchOptions {
  seconds: number;
  sampleSeconds: number;
  bulkRecords: number;
  quick: boolean;
}

const SPANS_PER_REQUEST = 1_000;
const RECORDS_PER_REQUEST = 1_100;
const S8_GOAL = 1.5;
const A1_GOAL = 3;

interface Sample {
  at: number;
  records: number;
  s1: number;
  s8: number;
  a1: number;
  tail: number;
  marked: number;
  a1Status: number;
}

const iso = (micros: number) => new Date(Math.floor(micros / 1000)).toISOString();

async function medianOf(times: number, call: () => Promise<{ ms: number; status: number }>): Promise<{ ms: number; status: number }> {
  const runs: { ms: number; status: number }[] = [];
  for (let i = 0; i < times; i += 1) runs.push(await call());
  return { ms: median(runs.map((r) => r.ms)), status: runs[runs.length - 1]!.status };
}

async function sample(server: DevServer, dataset: Dataset, started: number): Promise<Sample> {
  const { tenant, window, rareWord } = dataset.manifest;
  const headers = { "Service-API-Key": tenant.apiKey };
  const base = `${server.baseUrl}/v2/projects/${tenant.projectId}`;
  const post = (route: string, body: unknown) => timedJson(`${base}/${route}`, { body, headers });
  // Times in ms; S1's own figure is the reference of the ratios.
  const s1 = await medianOf(3, () => post("spans/partial_search", { log_stream_id: tenant.logStreamId, limit: 100 }));
  const s8 = await medianOf(3, () => post("spans/partial_search", { log_stream_id: tenant.logStreamId, limit: 100, filters: [{ type: "text", column_id: "input", operator: "contains", value: rareWord }] }));
  const a1 = await medianOf(3, () => post("metrics/search", { log_stream_id: tenant.logStreamId, start_time: iso(window.startMicros), end_time: iso(window.endMicros), interval: 60 }));
  const [state] = await queryJson<{ records: number; tail: number; marked: number }>(dataset.sqliteFile, {
    sql: "SELECT (SELECT count(*) FROM records) AS records, coalesce((SELECT max(rid) FROM records), 0) - (SELECT indexed_through FROM records_text_backfill) AS tail, (SELECT count(*) FROM metric_dirty_hours) AS marked",
    params: [],
  });
  return { at: (performance.now() - started) / 1000, records: state!.records, s1: s1.ms, s8: s8.ms, a1: a1.ms, tail: state!.tail, marked: state!.marked, a1Status: a1.status };
}

/** Ingests back to back with `clients` clients until `stop()` says so or `maxRequests` are sent; spans per second over the time it ran. */
function ingestLoop(server: DevServer, dataset: Dataset, clients: number, offset: { next: number }, stop: () => boolean, maxRequests = Number.POSITIVE_INFINITY) {
  const { tenant } = dataset.manifest;
  const headers = { "Service-API-Key": tenant.apiKey };
  const url = `${server.baseUrl}/v2/projects/${tenant.projectId}/traces`;
  let sent = 0;
  const times: number[] = [];
  const started = performance.now();
  const done = Promise.all(
    Array.from({ length: clients }, async () => {
      while (!stop() && sent < maxRequests) {
        sent += 1;
        const load = workload(1, offset.next, "realistic");
        offset.next += 100;
        expectStatus(await timedJson(url, { body: { log_stream_id: tenant.logStreamId, traces: load.requests[0] }, headers }), 200, "ingest");
        times.push(performance.now());
      }
    }),
  ).then(() => ({ requests: times.length, seconds: (performance.now() - started) / 1000, times, started }));
  return done;
}

/** Spans per second of the requests that completed in the first `seconds` of a loop. */
function rateWithin(result: { times: number[]; started: number }, seconds: number): number {
  const within = result.times.filter((t) => t - result.started <= seconds * 1000).length;
  return (within * SPANS_PER_REQUEST) / seconds;
}

export async function runUpkeepBench(options: UpkeepBenchOptions): Promise<string> {
  const startLoad = os.loadavg();
  const baselineSeconds = Math.min(60, Math.max(10, Math.round(options.seconds / 2)));
  console.log(`\nupkeep: baseline ingest ${baselineSeconds} s; steady state ${options.seconds} s sampled every ${options.sampleSeconds} s; bulk import of ${count(options.bulkRecords)} records`);

  // 1. Baseline: writes start no upkeep.
  const baseDb = await emptyDatabase("upkeep-baseline", 7);
  let baselineRate: number;
  try {
    baselineRate = await withDevServer({ name: "upkeep-baseline", config: SERVICE_CONFIG, persistTo: baseDb.persistDir, vars: { ...VARS, UPKEEP_AFTER_WRITES: "false" }, readyPath: "/healthcheck" }, async (server) => {
      const until = performance.now() + baselineSeconds * 1000;
      const result = await ingestLoop(server, baseDb, 1, { next: 0 }, () => performance.now() >= until);
      return rateWithin(result, baselineSeconds);
    });
  } finally {
    discardCopy(baseDb);
  }
  console.log(`  baseline ingest (no upkeep after writes): ${count(baselineRate)} spans/s`);

  // 2. and 3.: the service as deployed.
  const db = await emptyDatabase("upkeep", 7);
  try {
    return await withDevServer({ name: "upkeep", config: SERVICE_CONFIG, persistTo: db.persistDir, vars: VARS, readyPath: "/healthcheck" }, async (server) => {
      const offset = { next: 0 };
      const started = performance.now();
      const until = started + options.seconds * 1000;
      const ingest = ingestLoop(server, db, 1, offset, () => performance.now() >= until);
      const samples: Sample[] = [];
      for (let next = started + options.sampleSeconds * 1000; next < until; next += options.sampleSeconds * 1000) {
        await sleep(Math.max(0, next - performance.now()));
        const s = await sample(server, db, started);
        samples.push(s);
        console.log(`  t=${s.at.toFixed(0)} s: ${count(s.records)} records; S1 ${ms(s.s1)}, S8/S1 ${ratio(s.s8 / s.s1)}, A1/S1 ${ratio(s.a1 / s.s1)} (${s.a1Status}); tail ${count(s.tail)} rids, ${s.marked} marked hours`);
      }
      const steady = await ingest;
      const steadyRate = rateWithin(steady, Math.min(baselineSeconds, options.seconds));
      const overallRate = (steady.requests * SPANS_PER_REQUEST) / steady.seconds;
      console.log(`  ingest with the upkeep following: ${count(steadyRate)} spans/s over the first ${baselineSeconds} s (${ratio(steadyRate / baselineRate)} the baseline)`);

      // 3. Bulk import, then time to target.
      const bulkRequests = Math.ceil(options.bulkRecords / RECORDS_PER_REQUEST);
      const bulkStarted = performance.now();
      await ingestLoop(server, db, 4, offset, () => false, bulkRequests);
      const bulkSeconds = (performance.now() - bulkStarted) / 1000;
      const after: Sample[] = [];
      const recoveryStarted = performance.now();
      let recovered: number | null = null;
      while ((performance.now() - recoveryStarted) / 1000 < Math.max(120, options.seconds * 2)) {
        const s = await sample(server, db, recoveryStarted);
        after.push(s);
        console.log(`  after bulk +${s.at.toFixed(0)} s: S8/S1 ${ratio(s.s8 / s.s1)}, A1/S1 ${ratio(s.a1 / s.s1)} (${s.a1Status}); tail ${count(s.tail)}, ${s.marked} marked hours`);
        if (s.s8 <= S8_GOAL * s.s1 && s.a1 <= A1_GOAL * s.s1 && s.a1Status === 200 && s.tail === 0) {
          recovered = s.at;
          break;
        }
        await sleep(5_000);
      }

      const rows = samples.map((s) => [
        `${s.at.toFixed(0)} s`,
        count(s.records),
        ms(s.s1),
        `${ms(s.s8)} (${ratio(s.s8 / s.s1)})`,
        `${ms(s.a1)} (${ratio(s.a1 / s.s1)})${s.a1Status === 200 ? "" : ` ${s.a1Status}`}`,
        count(s.tail),
        String(s.marked),
        s.at > 60 ? (s.s8 <= S8_GOAL * s.s1 && s.a1 <= A1_GOAL * s.s1 && s.a1Status === 200 ? "PASS" : "FAIL") : "(first minute)",
      ]);
      const afterRows = after.map((s) => [
        `+${s.at.toFixed(0)} s`,
        count(s.records),
        ms(s.s1),
        `${ms(s.s8)} (${ratio(s.s8 / s.s1)})`,
        `${ms(s.a1)} (${ratio(s.a1 / s.s1)})${s.a1Status === 200 ? "" : ` ${s.a1Status}`}`,
        count(s.tail),
        String(s.marked),
        "",
      ]);
      const head = ["time", "records", "S1 first page (ms)", "S8 rare substring, ms (/S1)", "A1 hourly metrics, ms (/S1)", "unindexed tail (rids)", "marked hours", "targets"];
      const align: ("l" | "r")[] = ["r", "r", "r", "r", "r", "r", "r", "l"];
      const markdown = [
        "# Upkeep benchmark: derived data under ingest",
        "",
        runConditions(startLoad),
        `- one client ingesting requests of 100 traces × 10 spans (realistic payload) back to back; samples every ${options.sampleSeconds} s, each figure the median of 3 calls`,
        `- targets after the first minute: S8 ≤ ${S8_GOAL}× S1, A1 ≤ ${A1_GOAL}× S1; ingest ≥ 0.9× the baseline`,
        "",
        `Ingest: baseline (writes start no upkeep) ${count(baselineRate)} spans/s; with the upkeep following the writes ${count(steadyRate)} spans/s over the same first ${baselineSeconds} s (**${ratio(steadyRate / baselineRate)}**; ${count(overallRate)} spans/s over all ${options.seconds} s).`,
        "",
        "## Steady state, sampled under ingest",
        "",
        markdownTable(head, rows, align),
        "",
        `## After a bulk import of ${count(bulkRequests * RECORDS_PER_REQUEST)} records (4 clients, ${bulkSeconds.toFixed(0)} s, ${count((bulkRequests * SPANS_PER_REQUEST) / bulkSeconds)} spans/s)`,
        "",
        markdownTable(head, afterRows, align),
        "",
        recovered === null ? "S8 and A1 were not back within target before the bench stopped watching." : `S8 and A1 back within target, tail empty: **${recovered.toFixed(0)} s** after the import ended.`,
        "",
      ].join("\n");
      return finishReport("upkeep", markdown, options.quick);
    });
  } finally {
    discardCopy(db);
  }
}
