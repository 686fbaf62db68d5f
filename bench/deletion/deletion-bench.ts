/**
 * The deletion benchmark (issue 4). On a private copy of the search benchmark's dataset (1M
 * records by default), `wrangler dev` of the service deletes through its queue, as deployed code
 * would (the POST queues a job, the local queue consumer works through it), two tenants of ten
 * in turn:
 *
 * - `user_metadata.tenant = tenant-3` (about 10% of the traces, with their spans) with nothing
 *   else running: records deleted per second and the time from the POST to `completed` (from the
 *   job's own created_at/updated_at, and as the polling client saw it);
 * - `tenant-4` (about as large) while a second client sends a search back to back: the search's
 *   latency during the job (p50, p95), against the same search before the jobs, and the job's
 *   rate under that load;
 * - the baseline: tenant-3's records removed by plain DELETE statements straight on another copy
 *   of the SQLite file, in one transaction, as fast as SQLite can, nothing else running.
 *
 * Targets: the rate of the job run alone at least 0.5 × the baseline's (both alone), and the
 * concurrent search p95 under 100 ms. Locally the worker, its queue consumer and D1 share one
 * thread, so every concurrent search takes its time out of the deletion: the rate under load is
 * reported too, not judged. The copies are removed afterwards.
 *
 * A job whose progress stops moving for STALL_MS is reported as stalled (with what it deleted
 * until then), so the bench always ends whatever the local runtime does: before the consumer
 * handed the event loop back between chunks, wrangler dev's local queue lost a message's
 * completion and stopped delivering (bench/results/dataset-history.md, "Notes").
 */
import os from "node:os";
import { performance } from "node:perf_hooks";
import { copyDataset, type Dataset, discardCopy, ensureDataset } from "../dataset/dataset-cache";
import { expectStatus, timedJson } from "../lib/http-timing";
import { markdownTable, runConditions } from "../lib/markdown-report";
import { finishReport } from "../lib/finish-report";
import { SERVICE_CONFIG } from "../lib/paths";
import { queryJson, runSqlite, sqlLiteral } from "../lib/sqlite-cli";
import { count, median, ms, percentile, ratio } from "../lib/stats";
import { sleep, withDevServer } from "../lib/wrangler-dev";
import { BENCH_VARS } from "../search/search-bench";
import { SEARCH_SHAPES, shapePath } from "../search/search-shapes";

export interface DeletionBenchOptions {
  size: number;
  seed: number;
  quick: boolean;
}

interface Counts {
  sessions: number;
  traces: number;
  spans: number;
}

const total = (c: Counts) => c.sessions + c.traces + c.spans;

interface OrgJob {
  status: "queued" | "running" | "completed" | "failed";
  error_message: string | null;
  created_at: string;
  updated_at: string;
  progress: { sessions_deleted: number; traces_deleted: number; spans_deleted: number };
}

/**
 * The records the job must delete, computed independently of the service, on the file: the
 * matching sessions with their traces, the matching traces, the spans of all those, and the
 * spans that match on their own metadata with every span below them.
 */
const DOOMED = (organizationId: string, key: string, value: string) => [
  `CREATE TEMP TABLE doomed (rid INTEGER PRIMARY KEY);`,
  `CREATE TEMP TABLE roots AS SELECT r.rid, r.id, r.run_id, r.record_type FROM record_metadata m JOIN records r ON r.rid = m.record_rid
     WHERE m.organization_id = ${sqlLiteral(organizationId)} AND m.key = ${sqlLiteral(key)} AND m.value = ${sqlLiteral(value)};`,
  "INSERT OR IGNORE INTO doomed SELECT rid FROM roots WHERE record_type IN ('session', 'trace');",
  "INSERT OR IGNORE INTO doomed SELECT r.rid FROM roots s JOIN records r ON r.session_id = s.id AND r.run_id = s.run_id WHERE s.record_type = 'session' AND r.record_type IN ('trace', 'span');",
  "INSERT OR IGNORE INTO doomed SELECT r.rid FROM doomed d JOIN records t ON t.rid = d.rid AND t.record_type = 'trace' JOIN records r ON r.trace_id = t.id AND r.run_id = t.run_id AND r.record_type = 'span';",
  `INSERT OR IGNORE INTO doomed WITH RECURSIVE below(rid, id, run_id) AS (
     SELECT rid, id, run_id FROM roots WHERE record_type = 'span'
     UNION SELECT c.rid, c.id, c.run_id FROM below b JOIN records c ON c.parent_id = b.id AND c.run_id = b.run_id AND c.record_type = 'span')
   SELECT rid FROM below;`,
];

async function expectedDeletion(dataset: Dataset, value: string): Promise<Counts> {
  const { organizationId } = dataset.manifest.tenant;
  const { key } = dataset.manifest.deletion;
  const script = [
    ".mode json",
    ...DOOMED(organizationId, key, value),
    `SELECT sum(r.record_type = 'session') AS sessions, sum(r.record_type = 'trace') AS traces, sum(r.record_type = 'span') AS spans
       FROM doomed d JOIN records r ON r.rid = d.rid;`,
    "",
  ].join("\n");
  const { stdout } = await runSqlite(dataset.sqliteFile, script, { timeoutMs: 1_800_000 });
  const [row] = JSON.parse(stdout.trim() || "[{}]") as Partial<Counts>[];
  return { sessions: row?.sessions ?? 0, traces: row?.traces ?? 0, spans: row?.spans ?? 0 };
}

/**
 * The baseline: the same records deleted with plain statements in one transaction (children
 * before parents, metadata, tag and metric rows first), with foreign keys on as D1 has them.
 * Returns seconds of statement time as the shell's timer reports it.
 */
async function plainDelete(dataset: Dataset): Promise<{ seconds: number; deleted: number }> {
  const { organizationId } = dataset.manifest.tenant;
  const { key, value } = dataset.manifest.deletion;
  const script = [
    "PRAGMA foreign_keys = ON;",
    ".timer on",
    "BEGIN;",
    ...DOOMED(organizationId, key, value),
    "DELETE FROM record_metadata WHERE record_rid IN (SELECT rid FROM doomed);",
    "DELETE FROM record_tags WHERE record_rid IN (SELECT rid FROM doomed);",
    "DELETE FROM record_metrics WHERE record_rid IN (SELECT rid FROM doomed);",
    "DELETE FROM records WHERE rid IN (SELECT rid FROM doomed);",
    "COMMIT;",
    ".timer off",
    "SELECT count(*) FROM doomed;",
    "",
  ].join("\n");
  const { stdout } = await runSqlite(dataset.sqliteFile, script, { timeoutMs: 1_800_000 });
  const seconds = [...stdout.matchAll(/^Run Time: real ([\d.]+)/gm)].reduce((sum, [, real]) => sum + Number(real), 0);
  const deleted = Number(stdout.trim().split("\n").pop());
  return { seconds, deleted };
}

/** One deletion job as the service ran it. */
interface JobRun {
  value: string;
  expected: Counts;
  deleted: Counts;
  remaining: Counts;
  /** Job created_at → its last progress (completion, or the last chunk before a stall). */
  serverSeconds: number;
  clientSeconds: number;
  completed: boolean;
  /** Why the job did not complete, when it did not. */
  stalled?: string;
  /** Searches sent back to back while the job deleted (empty for the job run alone). */
  during: number[];
  /** Searches during the job that got no answer within SEARCH_TIMEOUT_MS (counted at that time). */
  timedOut: number;
  statusTrail: string[];
  failure?: string;
}

interface ServiceRun {
  /** The benchmark's selector, deleted with nothing else running: the rate the target is about. */
  alone: JobRun;
  /** Another tenant of the same size, deleted while a client searches back to back. */
  loaded: JobRun;
  probe: string;
  idle: number[];
}

/**
 * The value deleted while the concurrent search runs: another tenant of ten, about as large as
 * the benchmark's own (tenant-4: 9,939 traces against tenant-3's 9,907 at 1M, seed 1).
 */
const LOADED_DELETION_VALUE = "tenant-4";

/** Far longer than any chunk: a search that waited this long was held back by the local runtime. */
const HELD_BACK_MS = 5_000;

/** A job whose progress has not moved for this long is reported as stalled. */
const STALL_MS = 60_000;
const SEARCH_TIMEOUT_MS = 30_000;

function isTimeout(error: unknown): boolean {
  return error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError");
}

interface Server {
  baseUrl: string;
}

/**
 * Queues the deletion of `value` and polls the job every 200 ms until it ends or stalls. With
 * `search`, a second client sends it back to back meanwhile; only the searches sent while the
 * job was still deleting count (after a stall, the idle minute that detects it would flatter the
 * p95).
 */
async function runJob(server: Server, dataset: Dataset, value: string, search?: () => Promise<number>): Promise<JobRun> {
  const expected = await expectedDeletion(dataset, value);
  const headers = { "Service-API-Key": dataset.manifest.tenant.apiKey };
  const submitted = performance.now();
  const answer = expectStatus(
    await timedJson<{ job_id: string | null; message: string }>(`${server.baseUrl}/v2/org-jobs/delete-by-metadata`, {
      body: { metadata_key: dataset.manifest.deletion.key, metadata_value: value },
      headers,
      // Sent once: a second POST would queue a second job.
      repeatable: false,
    }),
    200,
    "delete-by-metadata",
  ).body;
  if (!answer.job_id) throw new Error(`no job was queued: ${answer.message}`);
  const jobUrl = `${server.baseUrl}/v2/org-jobs/${answer.job_id}`;

  let finished = false;
  const searches: { sentAt: number; ms: number; timedOut: boolean }[] = [];
  let searchFailure: unknown;
  const searching = (async () => {
    while (search && !finished) {
      const sentAt = Date.now();
      try {
        searches.push({ sentAt, ms: await search(), timedOut: false });
      } catch (error) {
        if (!isTimeout(error)) {
          searchFailure = error;
          return;
        }
        searches.push({ sentAt, ms: SEARCH_TIMEOUT_MS, timedOut: true });
      }
    }
  })();
  const statusTrail: string[] = [];
  let job: OrgJob | undefined;
  let lastProgress = "";
  let lastChange = Date.now();
  let stalled: string | undefined;
  for (;;) {
    try {
      job = expectStatus(await timedJson<OrgJob>(jobUrl, { headers, timeoutMs: SEARCH_TIMEOUT_MS }), 200, "job status").body;
    } catch (error) {
      if (!isTimeout(error)) throw error;
    }
    if (job) {
      if (statusTrail[statusTrail.length - 1] !== job.status) statusTrail.push(job.status);
      if (job.status === "completed" || job.status === "failed") break;
      const progress = JSON.stringify(job.progress);
      if (progress !== lastProgress) {
        lastProgress = progress;
        lastChange = Date.now();
      }
    }
    if (Date.now() - lastChange > STALL_MS) {
      stalled = `no progress for ${STALL_MS / 1000} s while ${job?.status ?? "unknown"}`;
      break;
    }
    await sleep(200);
  }
  const clientSeconds = (performance.now() - submitted) / 1000;
  finished = true;
  await searching;
  if (searchFailure) throw new Error(`the concurrent search failed during the job: ${String(searchFailure)}`, { cause: searchFailure });
  if (!job) throw new Error("the job's status could not be read");
  // The job's own clock (same machine): searches sent while it was deleting.
  const lastWork = Date.parse(job.updated_at);
  const counted = searches.filter((x) => x.sentAt <= lastWork);
  if (search) console.log(`  searches during the job: ${counted.length} of ${searches.length} sent before ${stalled ? "the stall" : "completion"} was seen`);
  const deleted = { sessions: job.progress.sessions_deleted, traces: job.progress.traces_deleted, spans: job.progress.spans_deleted };
  const serverSeconds = (Date.parse(job.updated_at) - Date.parse(job.created_at)) / 1000;
  console.log(`  ${value}${search ? ", searched meanwhile" : ", alone"}: ${count(total(deleted))} records in ${serverSeconds.toFixed(1)} s (${statusTrail.join(" → ")}${stalled ? `; stalled: ${stalled}` : ""})`);
  return {
    value,
    expected,
    deleted,
    remaining: { sessions: 0, traces: 0, spans: 0 },
    serverSeconds,
    clientSeconds,
    completed: job.status === "completed",
    stalled,
    during: counted.map((x) => x.ms),
    timedOut: counted.filter((x) => x.timedOut).length,
    statusTrail,
    failure: job.status === "failed" ? (job.error_message ?? "failed") : undefined,
  };
}

async function serviceDeletion(dataset: Dataset, quick: boolean): Promise<ServiceRun> {
  const { tenant, deletion } = dataset.manifest;
  const headers = { "Service-API-Key": tenant.apiKey };
  return withDevServer({ name: "deletion", config: SERVICE_CONFIG, persistTo: dataset.persistDir, vars: BENCH_VARS, readyPath: "/healthcheck" }, async (server) => {
    // The concurrent search: the first page of spans (the most common UI request).
    const shape = SEARCH_SHAPES.find((s) => s.id === "first-page")!;
    const probeUrl = `${server.baseUrl}${shapePath(shape, dataset.manifest)}`;
    const probeBody: unknown = shape.body(dataset.manifest);
    const probe = `search: ${shape.title} (spans/partial_search)`;
    const search = async () =>
      expectStatus(await timedJson(probeUrl, { body: probeBody, headers, timeoutMs: SEARCH_TIMEOUT_MS }), 200, "concurrent search").ms;
    const idle: number[] = [];
    for (let i = 0; i < 5; i += 1) await search();
    for (let i = 0; i < (quick ? 10 : 40); i += 1) idle.push(await search());
    // First the benchmark's own selector with nothing else running (as the baseline runs), then
    // another tenant while the search runs: on one thread locally, every search takes its time
    // from the deletion, so the rate under load says as much about the search as the job.
    const alone = await runJob(server, dataset, deletion.value);
    const loaded = await runJob(server, dataset, LOADED_DELETION_VALUE, search);
    return { alone, loaded, probe, idle };
  });
}

export async function runDeletionBench(options: DeletionBenchOptions): Promise<string> {
  const startLoad = os.loadavg();
  const dataset = await ensureDataset(options.size, options.seed);
  console.log(`\ndeletion @ ${count(options.size)} records: ${dataset.manifest.deletion.key} = ${dataset.manifest.deletion.value}`);

  const serviceCopy = copyDataset(dataset, "deletion-service");
  let service: ServiceRun;
  try {
    service = await serviceDeletion(serviceCopy, options.quick);
    for (const run of [service.alone, service.loaded]) run.remaining = await expectedDeletion(serviceCopy, run.value);
  } finally {
    discardCopy(serviceCopy);
  }

  const baselineCopy = copyDataset(dataset, "deletion-baseline");
  let baseline: { seconds: number; deleted: number };
  try {
    baseline = await plainDelete(baselineCopy);
  } finally {
    discardCopy(baselineCopy);
  }
  console.log(`  plain DELETE: ${count(baseline.deleted)} records in ${baseline.seconds.toFixed(2)} s`);

  const { alone, loaded } = service;
  const rateOf = (run: JobRun) => total(run.deleted) / run.serverSeconds;
  const baselineRate = baseline.deleted / baseline.seconds;
  const during = loaded.during;
  const duringP95 = percentile(during, 95);
  const failures: string[] = [];
  for (const run of [alone, loaded]) {
    const which = `the job for ${run.value}`;
    if (run.failure) failures.push(`${which} failed: ${run.failure}`);
    if (!run.completed && run.stalled) {
      failures.push(
        `${which} did not complete: ${run.stalled}, after deleting ${count(total(run.deleted))} of ${count(total(run.expected))} records (see bench/results/dataset-history.md, "Notes", on local queue stalls); its figures are over the part that ran`,
      );
    }
    if (run.completed && total(run.deleted) !== total(run.expected)) failures.push(`${which} deleted ${total(run.deleted)} records, expected ${total(run.expected)}`);
    if (run.completed && total(run.remaining) !== 0) failures.push(`${total(run.remaining)} records matching ${run.value} remain after its job`);
  }
  if (total(alone.deleted) !== baseline.deleted && alone.completed) failures.push(`the baseline deleted ${baseline.deleted} records, the job ${total(alone.deleted)}`);
  if (rateOf(alone) < 0.5 * baselineRate) failures.push(`rate ${ratio(rateOf(alone) / baselineRate)} the baseline (target ≥ 0.5×)`);
  const heldBack = during.filter((x) => x > HELD_BACK_MS);
  const notHeldBack = during.filter((x) => x <= HELD_BACK_MS);
  if (!(duringP95 < 100)) {
    failures.push(
      `concurrent search p95 ${ms(duringP95)} ms (target < 100 ms)${heldBack.length > 0 ? `; ${heldBack.length} of ${during.length} searches waited more than ${HELD_BACK_MS / 1000} s: the local runtime held them behind a whole queue message (bench/results/dataset-history.md, "Notes"); p95 of the others: ${ms(percentile(notHeldBack, 95))} ms` : ""}`,
    );
  }

  const counts = (c: Counts) => `${count(total(c))} (${c.sessions} / ${count(c.traces)} / ${count(c.spans)})`;
  const trail = (run: JobRun) => `${run.statusTrail.join(" → ")}${run.stalled ? ` (stalled: ${run.stalled})` : ""}`;
  const table = markdownTable(
    ["measure", `${alone.value}, nothing else running`, `${loaded.value}, searched meanwhile`, "target"],
    [
      ["records to delete (sessions / traces / spans)", counts(alone.expected), counts(loaded.expected), ""],
      ["records deleted by the job; matching records left afterwards", `${count(total(alone.deleted))}; ${count(total(alone.remaining))}`, `${count(total(loaded.deleted))}; ${count(total(loaded.remaining))}`, "all; 0"],
      ["job status trail", trail(alone), trail(loaded), "completed"],
      ["time to completion (job created_at → updated_at; as the polling client saw it)", `${alone.serverSeconds.toFixed(2)} s; ${alone.clientSeconds.toFixed(2)} s`, `${loaded.serverSeconds.toFixed(2)} s; ${loaded.clientSeconds.toFixed(2)} s`, ""],
      ["service rate", `${count(rateOf(alone))} records/s`, `${count(rateOf(loaded))} records/s`, ""],
      ["plain DELETE of the same rows on the SQLite file (one transaction, nothing else running)", `${count(baseline.deleted)} records in ${baseline.seconds.toFixed(2)} s = ${count(baselineRate)} records/s`, "", ""],
      ["service rate / plain DELETE rate", ratio(rateOf(alone) / baselineRate), `(${ratio(rateOf(loaded) / baselineRate)})`, "≥ 0.5× (alone, as the baseline)"],
      [
        "concurrent search during the job: p50 / p95",
        "",
        `${ms(median(during))} / ${ms(duringP95)} ms (${during.length} requests${loaded.timedOut > 0 ? `, ${loaded.timedOut} without an answer in ${SEARCH_TIMEOUT_MS / 1000} s, counted as ${SEARCH_TIMEOUT_MS / 1000} s` : ""})`,
        "p95 < 100 ms",
      ],
      [
        `concurrent search during the job: p99 / max; slower than 100 ms / 1 s / ${HELD_BACK_MS / 1000} s`,
        "",
        `${ms(percentile(during, 99))} / ${ms(Math.max(...during))} ms; ${during.filter((x) => x > 100).length} / ${during.filter((x) => x > 1_000).length} / ${heldBack.length} requests`,
        "",
      ],
      ["same search before the jobs: p50 / p95", "", `${ms(median(service.idle))} / ${ms(percentile(service.idle, 95))} ms`, ""],
    ],
    ["l", "r", "r", "l"],
  );
  const markdown = [
    "# Deletion benchmark",
    "",
    runConditions(startLoad),
    `- dataset: ${count(options.size)} records, seed ${options.seed}; deleting user_metadata.${dataset.manifest.deletion.key} = ${alone.value} with nothing else running (compared with the baseline), then = ${loaded.value} while a client searches`,
    `- concurrent search: ${service.probe}, one client sending back to back`,
    "",
    table,
    "",
    failures.length === 0 ? "Every target met." : ["Targets missed:", "", ...failures.map((f) => `- ${f}`)].join("\n"),
    "",
  ].join("\n");
  return finishReport("deletion", markdown, options.quick);
}
