/**
 * The ingestion benchmark (issue 5). Spans per second through POST /v2/projects/{pid}/traces in
 * requests of 100 traces of 10 spans each (as an SDK flush sends them), into a new database with
 * `wrangler dev` of the service: one client sending requests one after another, then four
 * clients at once. Two payloads: the search benchmark's realistic content, and minimal records
 * (what the path costs when rows are small). The request bodies are built before the clock
 * starts.
 *
 * Baseline: the same rows (built by the service's own row builder) inserted straight into the
 * SQLite file of another new database with plain multi-row INSERT statements, one transaction per
 * request, by the sqlite3 shell. For reference the service's own write statements are also run
 * straight on the file, which separates what SQL costs from what the HTTP + Worker + D1 path
 * costs.
 *
 * Targets: the service at least 0.3 × the baseline, and at least 10,000 spans/s.
 */
import { writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { RECORD_COLUMNS, type RecordBatch, sessionRows, traceRows } from "../../src/ingest/record-rows";
import type { IngestSpan, IngestTrace } from "../../src/ingest/ingest-schemas";
import { type Dataset, discardCopy, emptyDatabase } from "../dataset/dataset-cache";
import { type PlannedSession, type PlannedTrace, sessionInput, traceInput, WINDOW_END_MICROS, WINDOW_MICROS } from "../dataset/synthetic-traces";
import { mergeBatches } from "../../src/ingest/merge-batches";
import { ingestContext, ingestStatements, type RunScope } from "../dataset/write-run";
import { expectStatus, timedJson } from "../lib/http-timing";
import { markdownTable, runConditions } from "../lib/markdown-report";
import { finishReport } from "../lib/finish-report";
import { SCRATCH_DIR, SERVICE_CONFIG } from "../lib/paths";
import { boundStatement, queryJson, runSqlite, sqlLiteral, type SqlValue } from "../lib/sqlite-cli";
import { count, median, ms, percentile, ratio } from "../lib/stats";
import { withDevServer } from "../lib/wrangler-dev";
import { BILL_VARS, type BillDelta, billDelta, billPoint, dollarsPerMillionSpans, LIST_PRICES, type SpanCost, untilQuiet } from "../lib/bill";
import { BENCH_VARS } from "../search/search-bench";

export interface IngestBenchOptions {
  quick: boolean;
}

const TRACES_PER_REQUEST = 100;
const SPANS_PER_TRACE = 10;
const SEED = 5;

export interface Workload {
  sessions: PlannedSession[];
  /** One element per request: its traces. */
  requests: IngestTrace[][];
  spans: number;
}

/**
 * The two payloads: `realistic` is the search benchmark's content (inputs and outputs of about
 * 350 bytes on average, llm messages, documents, metrics, tags, metadata: about 1 MB of JSON per
 * request); `minimal` keeps each record's ids, kind, name, time and a short input and output, and
 * nothing else, to show what the same path does when rows are small.
 */
export type Payload = "realistic" | "minimal";

function minimalSpan(span: IngestSpan): IngestSpan {
  return {
    id: span.id,
    type: span.type,
    name: span.name,
    created_at: span.created_at,
    input: "short input",
    output: "short output",
    spans: span.spans?.map(minimalSpan),
  } as IngestSpan;
}

function minimalTrace(trace: IngestTrace): IngestTrace {
  return { id: trace.id, type: "trace", name: trace.name, created_at: trace.created_at, session_id: trace.session_id, input: "short input", output: "short output", spans: trace.spans?.map(minimalSpan) } as IngestTrace;
}

/** `requests` requests of 100 traces × 10 spans, spread over sessions of 10 traces. */
export function workload(requests: number, offset: number, payload: Payload): Workload {
  const sessions: PlannedSession[] = [];
  const bodies: IngestTrace[][] = [];
  const start = WINDOW_END_MICROS - WINDOW_MICROS;
  let index = offset;
  for (let q = 0; q < requests; q += 1) {
    const traces: IngestTrace[] = [];
    for (let t = 0; t < TRACES_PER_REQUEST; t += 1, index += 1) {
      if (index % 10 === 0 || sessions.length === 0) {
        sessions.push({ index: Math.floor(index / 10), id: crypto.randomUUID(), createdAt: start + index * 1_000_000, firstTrace: index });
      }
      const session = sessions[sessions.length - 1]!;
      const planned: PlannedTrace = { index, session: session.index, createdAt: start + index * 1_000_000 + 1, spans: SPANS_PER_TRACE, salted: false };
      const trace = traceInput(SEED, planned, session);
      traces.push(payload === "minimal" ? minimalTrace(trace) : trace);
    }
    bodies.push(traces);
  }
  return { sessions, requests: bodies, spans: requests * TRACES_PER_REQUEST * SPANS_PER_TRACE };
}

interface Throughput {
  clients: number;
  requests: number;
  spans: number;
  seconds: number;
  latencies: number[];
  roundTrips: number[];
  /**
   * The bill of the setting: while its requests ran (sessions, warm-up and timed, and the upkeep
   * running beside them), then what the upkeep still did until it caught up.
   */
  bill: { spans: number; requests: BillDelta; upkeep: BillDelta; caughtUp: boolean };
}

/**
 * Worker variables for an A/B of one cost, from the environment as JSON: e.g.
 * `INGEST_BENCH_VARS='{"UPKEEP_AFTER_WRITES":"false"}' npm run bench -- ingest` measures ingest
 * with no upkeep behind the writes (as before issue 29), beside a run without it.
 */
function extraServiceVars(): Record<string, string> {
  return process.env.INGEST_BENCH_VARS ? (JSON.parse(process.env.INGEST_BENCH_VARS) as Record<string, string>) : {};
}

async function serviceThroughput(dataset: Dataset, loads: { clients: number; load: Workload }[]): Promise<Throughput[]> {
  const { tenant } = dataset.manifest;
  const headers = { "Service-API-Key": tenant.apiKey };
  return withDevServer({ name: "ingest", config: SERVICE_CONFIG, persistTo: dataset.persistDir, vars: { ...BENCH_VARS, ...BILL_VARS, ...extraServiceVars() }, readyPath: "/healthcheck" }, async (server) => {
    const results: Throughput[] = [];
    for (const { clients, load } of loads) {
      const before = await billPoint(server.baseUrl, server.pid);
      // Sessions first, untimed: the SDK opens a session before logging into it.
      for (const session of load.sessions) {
        expectStatus(
          await timedJson(`${server.baseUrl}/v2/projects/${tenant.projectId}/sessions`, { body: { log_stream_id: tenant.logStreamId, ...sessionInput(SEED, session) }, headers }),
          200,
          "create session",
        );
      }
      const bodies = load.requests.map((traces) => ({ log_stream_id: tenant.logStreamId, traces }));
      const url = `${server.baseUrl}/v2/projects/${tenant.projectId}/traces`;
      // One warm-up request (not counted) so that the first request's compile and caches are paid.
      const [warmup, ...timed] = bodies;
      expectStatus(await timedJson(url, { body: warmup, headers }), 200, "ingest warm-up");
      const latencies: number[] = [];
      const roundTrips: number[] = [];
      let next = 0;
      const started = performance.now();
      await Promise.all(
        Array.from({ length: clients }, async () => {
          while (next < timed.length) {
            const body = timed[next++]!;
            const response = expectStatus(await timedJson<{ spans_count: number }>(url, { body, headers }), 200, "ingest");
            if (response.body.spans_count !== TRACES_PER_REQUEST * SPANS_PER_TRACE) throw new Error(`ingest wrote ${response.body.spans_count} spans`);
            latencies.push(response.ms);
            if (response.roundTrips !== undefined) roundTrips.push(response.roundTrips);
          }
        }),
      );
      const seconds = (performance.now() - started) / 1000;
      // The bill: what the requests cost, then what the upkeep they started (text index, metric
      // cells, roll-ups) costs until it has caught up (untimed: the throughput is the writes').
      const written = await billPoint(server.baseUrl, server.pid);
      const caughtUp = await untilQuiet(server.baseUrl);
      const after = await billPoint(server.baseUrl, server.pid);
      const bill = { spans: bodies.length * TRACES_PER_REQUEST * SPANS_PER_TRACE, requests: billDelta(before, written), upkeep: billDelta(written, after), caughtUp };
      results.push({ clients, requests: timed.length, spans: timed.length * TRACES_PER_REQUEST * SPANS_PER_TRACE, seconds, latencies, roundTrips, bill });
      console.log(`  service, ${clients} client${clients === 1 ? "" : "s"}: ${count(results[results.length - 1]!.spans / seconds)} spans/s`);
    }
    return results;
  });
}

/** Row keys for the plain INSERTs: far above any rid SQLite assigns the dataset, one block per request. */
let plainRidBase = 1_000_000_000_000;

/**
 * Plain multi-row INSERTs of a batch's rows: the simplest way to put them in SQLite. Since
 * migration 0009 the side rows carry their record's family key (`familyKeys`, read once from
 * `run_families`) instead of the run, type and organization, and the metric rows are written by
 * the `records` triggers, as they are for the service.
 */
function plainInserts(batch: RecordBatch, familyKeys: ReadonlyMap<string, number>, scope: RunScope): string {
  const rows = (values: SqlValue[][]) => values.map((v) => `(${v.map(sqlLiteral).join(",")})`).join(",\n");
  const familyKey = (recordType: string) => {
    const key = familyKeys.get(recordType);
    if (key === undefined) throw new Error(`no run_families key for ${recordType}`);
    return key;
  };
  const parents = new Set(batch.parentIds);
  const rid = new Map(batch.records.map((r, i) => [r.id, plainRidBase + i]));
  plainRidBase += batch.records.length;
  const metadata: SqlValue[][] = [];
  const tags: SqlValue[][] = [];
  for (const r of batch.records) {
    const base = [rid.get(r.id)!, r.id] as SqlValue[];
    const key = familyKey(r.record_type);
    for (const [name, value] of Object.entries(JSON.parse(r.user_metadata) as Record<string, string>)) {
      metadata.push([...base, name, value, key, r.created_at]);
    }
    for (const tag of new Set(JSON.parse(r.tags) as string[])) tags.push([...base, tag, key, r.created_at]);
  }
  const recordRows = batch.records.map((r) => [rid.get(r.id)!, ...RECORD_COLUMNS.map((c) => r[c] as SqlValue), parents.has(r.id) ? 1 : 0, familyKey(r.record_type)]);
  const parts = [`INSERT INTO records (rid, ${RECORD_COLUMNS.join(", ")}, has_children, family_key) VALUES\n${rows(recordRows)};`];
  if (metadata.length > 0) parts.push(`INSERT INTO record_metadata (record_rid, record_id, key, value, family_key, created_at) VALUES\n${rows(metadata)};`);
  if (tags.length > 0) parts.push(`INSERT INTO record_tags (record_rid, record_id, tag, family_key, created_at) VALUES\n${rows(tags)};`);
  parts.push(`UPDATE records SET has_children = 1 WHERE project_id = ${sqlLiteral(scope.projectId)} AND id IN (${batch.parentIds.map(sqlLiteral).join(",")}) AND has_children = 0;`);
  parts.push(`INSERT OR IGNORE INTO run_columns (run_id, record_type, column_id) VALUES ${rows(batch.presentColumns.map(([family, column]) => [scope.runId, family, column]))};`);
  return parts.join("\n");
}

/** The run's family keys (record_type -> key), which the `runs_families` trigger made with the run. */
async function runFamilyKeys(sqliteFile: string, runId: string): Promise<Map<string, number>> {
  const rows = await queryJson<{ record_type: string; key: number }>(sqliteFile, { sql: "SELECT record_type, key FROM run_families WHERE run_id = ?1", params: [runId] });
  return new Map(rows.map((row) => [row.record_type, row.key]));
}

/**
 * Seconds the sqlite3 shell takes to run a script file on a database: one transaction per
 * request, foreign keys on, the journal and sync settings the file has (WAL), as D1 writes it.
 */
async function timeScript(dataset: Dataset, label: string, requests: string[]): Promise<number> {
  const script = path.join(SCRATCH_DIR, `${label}-${process.pid}.sql`);
  writeFileSync(script, ["PRAGMA foreign_keys = ON;", ".parameter init", ...requests.map((r) => `BEGIN;\n${r}\nCOMMIT;`), ""].join("\n"));
  const started = performance.now();
  await runSqlite(dataset.sqliteFile, `.read ${script}\n`, { timeoutMs: 1_800_000 });
  return (performance.now() - started) / 1000;
}

async function baselines(load: Workload, seed: number): Promise<{ plain: number; serviceSql: number }> {
  const plainDb = await emptyDatabase("ingest-plain", seed);
  const serviceSqlDb = await emptyDatabase("ingest-service-sql", seed);
  try {
    const { tenant } = plainDb.manifest;
    const scope: RunScope = { organizationId: tenant.organizationId, projectId: tenant.projectId, runId: tenant.logStreamId };
    const ctx = ingestContext(scope);
    const familyKeys = await runFamilyKeys(plainDb.sqliteFile, scope.runId);
    // Sessions exist before the traces, as in the service run (untimed there too).
    const sessions = mergeBatches(load.sessions.map((s) => sessionRows(sessionInput(SEED, s), ctx)));
    await runSqlite(plainDb.sqliteFile, `PRAGMA foreign_keys = ON;\n${plainInserts(sessions, familyKeys, scope)}\n`);
    await runSqlite(serviceSqlDb.sqliteFile, `PRAGMA foreign_keys = ON;\n.parameter init\n${ingestStatements(sessions, scope).map(boundStatement).join("")}`);
    const batches = load.requests.map((traces) => traceRows(traces, ctx));
    const plain = await timeScript(plainDb, "ingest-plain", batches.map((b) => plainInserts(b, familyKeys, scope)));
    const serviceSql = await timeScript(serviceSqlDb, "ingest-service-sql", batches.map((b) => ingestStatements(b, scope).map(boundStatement).join("")));
    return { plain, serviceSql };
  } finally {
    discardCopy(plainDb);
    discardCopy(serviceSqlDb);
  }
}

interface PayloadResult {
  payload: Payload;
  service: Throughput[];
  spans: number;
  plainSeconds: number;
  serviceSqlSeconds: number;
  /** Database bytes per span written (sessions and traces ride along), after the upkeep. */
  bytesPerSpan: number;
}

async function benchPayload(payload: Payload, requests: number, clientSettings: number[]): Promise<PayloadResult> {
  const loads = clientSettings.map((clients, i) => ({ clients, load: workload(requests + 1, i * (requests + 1) * TRACES_PER_REQUEST, payload) }));
  const db = await emptyDatabase(`ingest-${payload}`, SEED);
  let service: Throughput[];
  let bytesPerSpan: number;
  try {
    const empty = await usedBytes(db.sqliteFile);
    service = await serviceThroughput(db, loads);
    bytesPerSpan = ((await usedBytes(db.sqliteFile)) - empty) / service.reduce((sum, t) => sum + t.bill.spans, 0);
  } finally {
    discardCopy(db);
  }
  // The baselines insert what the first (one-client) setting timed: its requests after the warm-up.
  const first = loads[0]!.load;
  const timedLoad: Workload = { sessions: first.sessions, requests: first.requests.slice(1), spans: requests * TRACES_PER_REQUEST * SPANS_PER_TRACE };
  const base = await baselines(timedLoad, SEED);
  console.log(`  ${payload}: plain INSERT ${count(timedLoad.spans / base.plain)} spans/s; the service's statements on the file ${count(timedLoad.spans / base.serviceSql)} spans/s`);
  return { payload, service, spans: timedLoad.spans, plainSeconds: base.plain, serviceSqlSeconds: base.serviceSql, bytesPerSpan };
}

/** Bytes the database's pages hold (free pages left out), the write-ahead log's included. */
async function usedBytes(sqliteFile: string): Promise<number> {
  const [row] = await queryJson<{ bytes: number }>(sqliteFile, {
    sql: "SELECT ((SELECT page_count FROM pragma_page_count()) - (SELECT freelist_count FROM pragma_freelist_count())) * (SELECT page_size FROM pragma_page_size()) AS bytes",
    params: [],
  });
  return row!.bytes;
}

/** What one span costs, from a setting's bill: its requests and the upkeep they started. */
function spanCost(t: Throughput, bytesPerSpan: number): SpanCost {
  const { spans, requests, upkeep } = t.bill;
  return {
    requestsPerSpan: requests.requests / spans,
    cpuMsPerSpan: (requests.cpuMs + upkeep.cpuMs) / spans,
    rowsReadPerSpan: (requests.rowsRead + upkeep.rowsRead) / spans,
    rowsWrittenPerSpan: (requests.rowsWritten + upkeep.rowsWritten) / spans,
    queueMessagesPerSpan: (requests.queueMessages + upkeep.queueMessages) / spans,
    bytesPerSpan,
  };
}

/** The report's bill: the one-client setting of each payload, per span, and in dollars. */
function billSection(results: PayloadResult[]): string {
  const rows: string[][] = [];
  const dollars: string[][] = [];
  const fixed = (value: number, digits = 2) => value.toFixed(digits);
  for (const result of results) {
    const t = result.service[0]!;
    const { spans, requests, upkeep, caughtUp } = t.bill;
    const cost = spanCost(t, result.bytesPerSpan);
    rows.push([
      result.payload,
      count(spans),
      fixed(requests.rowsWritten / spans),
      fixed(upkeep.rowsWritten / spans),
      fixed(cost.rowsReadPerSpan),
      fixed(requests.cpuMs / spans, 3),
      fixed(upkeep.cpuMs / spans, 3),
      count(cost.bytesPerSpan),
      `${requests.unmetered + upkeep.unmetered} of ${requests.roundTrips + upkeep.roundTrips}`,
      caughtUp ? "yes" : "NO (still writing after 5 min)",
    ]);
    const lines = dollarsPerMillionSpans(cost);
    const total = lines.reduce((sum, l) => sum + l.dollars, 0);
    for (const l of lines) dollars.push([result.payload, l.line, `$${l.dollars.toFixed(4)}`]);
    dollars.push([result.payload, "**total per million spans, kept 30 days**", `**$${total.toFixed(2)}**`]);
  }
  return [
    "## The bill",
    "",
    "Per span ingested (requests of 100 traces × 10 spans, one client; sessions, traces and the warm-up request ride along), from D1's own `meta` (the service's meter, `D1_METER=1`: requests, queue batches and cron runs) and the `workerd` process's CPU. While ingesting counts everything from the first session to the last answer, the upkeep the writes started running beside them included; after is what the upkeep still did until it caught up (no row written for 5 s). D1 counts a row written per index entry a write touches, as local D1 (miniflare's) reports it.",
    "",
    markdownTable(
      ["payload", "spans", "rows written / span (while ingesting)", "rows written / span (after)", "rows read / span", "CPU ms / span (while ingesting)", "CPU ms / span (after)", "bytes stored / span", "round trips without meta", "upkeep caught up"],
      rows,
      ["l", "r", "r", "r", "r", "r", "r", "r", "r", "l"],
    ),
    "",
    `Dollars per million spans ingested and kept 30 days, at Cloudflare's list prices of ${LIST_PRICES.date} (Workers Paid, past the monthly allowance): $${LIST_PRICES.perMillionRequests} per million requests, $${LIST_PRICES.perMillionCpuMs} per million CPU ms, D1 $${LIST_PRICES.perMillionRowsWritten} per million rows written, $${LIST_PRICES.perMillionRowsRead} per million rows read, $${LIST_PRICES.perGbMonthStored} per GB-month, Queues $${LIST_PRICES.perMillionQueueOperations} per million operations (3 per message). CPU is the local workerd's, SQLite's included, so an upper bound of the billed Worker CPU.`,
    "",
    markdownTable(["payload", "line of the bill", "per million spans"], dollars, ["l", "l", "r"]),
    "",
  ].join("\n");
}

export async function runIngestBench(options: IngestBenchOptions): Promise<string> {
  const startLoad = os.loadavg();
  const requests = options.quick ? 8 : 40;
  console.log(`\ningest: ${requests} requests of ${TRACES_PER_REQUEST} traces × ${SPANS_PER_TRACE} spans per setting`);
  const results = [await benchPayload("realistic", requests, [1, 4]), await benchPayload("minimal", requests, [1])];

  const failures: string[] = [];
  const rows: string[][] = [];
  for (const result of results) {
    const plainRate = result.spans / result.plainSeconds;
    for (const t of result.service) {
      const rate = t.spans / t.seconds;
      const versus = rate / plainRate;
      const verdicts: string[] = [];
      if (versus < 0.3) verdicts.push(`${ratio(versus)} the baseline (target ≥ 0.3×)`);
      if (rate < 10_000) verdicts.push(`${count(rate)} spans/s (target ≥ 10,000)`);
      const label = `${result.payload}: service, ${t.clients} client${t.clients === 1 ? "" : "s"}`;
      if (verdicts.length > 0) failures.push(`- ${label}: ${verdicts.join("; ")}`);
      rows.push([
        label,
        count(t.spans),
        t.seconds.toFixed(2),
        count(rate),
        ratio(versus),
        `${ms(median(t.latencies))} / ${ms(percentile(t.latencies, 95))}`,
        [...new Set(t.roundTrips)].join("/") || "—",
        verdicts.length === 0 ? "PASS" : "FAIL",
      ]);
    }
    rows.push([`${result.payload}: plain INSERT straight into the SQLite file (baseline)`, count(result.spans), result.plainSeconds.toFixed(2), count(plainRate), "1.00×", "—", "—", ""]);
    const serviceSqlRate = result.spans / result.serviceSqlSeconds;
    rows.push([`${result.payload}: the service's write statements straight into the SQLite file`, count(result.spans), result.serviceSqlSeconds.toFixed(2), count(serviceSqlRate), ratio(serviceSqlRate / plainRate), "—", "—", ""]);
  }
  const table = markdownTable(
    ["payload and path", "spans", "seconds", "spans/s", "vs baseline", "request p50 / p95 ms", "D1 round trips", "targets"],
    rows,
    ["l", "r", "r", "r", "r", "r", "r", "l"],
  );
  const markdown = [
    "# Ingestion benchmark",
    "",
    runConditions(startLoad),
    `- ${requests} timed requests per setting (after one warm-up request), each ${TRACES_PER_REQUEST} traces × ${SPANS_PER_TRACE} spans = ${TRACES_PER_REQUEST * (SPANS_PER_TRACE + 1)} records, into a new database; spans/s counts spans only (traces come on top)`,
    "- realistic: the search benchmark's content (about 1 MB of JSON per request); minimal: ids, kind, name, time and a short input and output per record",
    "",
    table,
    "",
    failures.length === 0 ? "Every target met." : ["Targets missed:", "", ...failures].join("\n"),
    "",
    billSection(results),
  ].join("\n");
  return finishReport("ingest", markdown, options.quick);
}
