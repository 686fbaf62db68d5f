/**
 * The deletion benchmark (issue 4). On a private copy of the search benchmark's dataset (1M
 * records by default), `wrangler dev` of the service deletes `user_metadata.tenant = tenant-3`
 * (about 10% of the traces, with their spans) through its queue, as deployed code would: the
 * POST queues a job, the local queue consumer works through it. Measured:
 *
 * - records deleted per second and the time from the POST to `completed` (from the job's own
 *   created_at/updated_at, and as the polling client saw it);
 * - the latency of a search sent back to back while the job runs (p50, p95), and of the same
 *   search before the job (the idle reference);
 * - the baseline: the same records removed by plain DELETE statements straight on another copy
 *   of the SQLite file, in one transaction, as fast as SQLite can.
 *
 * Targets: the service's rate at least 0.5 × the baseline's, and the concurrent search p95 under
 * 100 ms. The copies are removed afterwards.
 */
import os from "node:os";
import { performance } from "node:perf_hooks";
import { copyDataset, type Dataset, discardCopy, ensureDataset } from "../dataset/dataset-cache";
import { expectStatus, timedJson } from "../lib/http-timing";
import { markdownTable, runConditions, writeResult } from "../lib/markdown-report";
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

/** The records the job must delete, computed independently of the service, on the file. */
async function expectedDeletion(dataset: Dataset): Promise<Counts> {
  const { organizationId } = dataset.manifest.tenant;
  const { key, value } = dataset.manifest.deletion;
  const [row] = await queryJson<Counts>(dataset.sqliteFile, {
    sql: `WITH roots AS (
            SELECT record_id AS id, record_type FROM record_metadata
            WHERE organization_id = ?1 AND key = ?2 AND value = ?3 AND record_type IN ('session', 'trace')),
          traces AS (
            SELECT id FROM roots WHERE record_type = 'trace'
            UNION SELECT r.id FROM records r JOIN roots s ON s.record_type = 'session' AND r.session_id = s.id AND r.record_type = 'trace')
          SELECT (SELECT count(*) FROM roots WHERE record_type = 'session') AS sessions,
                 (SELECT count(*) FROM traces) AS traces,
                 (SELECT count(*) FROM records WHERE record_type = 'span' AND trace_id IN (SELECT id FROM traces)) AS spans`,
    params: [organizationId, key, value],
  });
  return row!;
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
    `CREATE TEMP TABLE doomed (id TEXT PRIMARY KEY) WITHOUT ROWID;`,
    `INSERT INTO doomed SELECT record_id FROM record_metadata WHERE organization_id = ${sqlLiteral(organizationId)} AND key = ${sqlLiteral(key)} AND value = ${sqlLiteral(value)} AND record_type IN ('session', 'trace');`,
    "INSERT OR IGNORE INTO doomed SELECT r.id FROM records r WHERE r.record_type = 'trace' AND r.session_id IN (SELECT id FROM doomed);",
    "INSERT OR IGNORE INTO doomed SELECT r.id FROM records r WHERE r.record_type = 'span' AND r.trace_id IN (SELECT id FROM doomed);",
    "DELETE FROM record_metadata WHERE record_id IN (SELECT id FROM doomed);",
    "DELETE FROM record_tags WHERE record_id IN (SELECT id FROM doomed);",
    "DELETE FROM record_metrics WHERE record_id IN (SELECT id FROM doomed);",
    "DELETE FROM records WHERE id IN (SELECT id FROM doomed);",
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

interface ServiceRun {
  expected: Counts;
  deleted: Counts;
  remaining: Counts;
  serverSeconds: number;
  clientSeconds: number;
  probe: string;
  idle: number[];
  during: number[];
  statusTrail: string[];
  failure?: string;
}

async function serviceDeletion(dataset: Dataset, quick: boolean): Promise<ServiceRun> {
  const expected = await expectedDeletion(dataset);
  const { tenant, deletion } = dataset.manifest;
  const headers = { "Service-API-Key": tenant.apiKey };
  return withDevServer({ name: "deletion", config: SERVICE_CONFIG, persistTo: dataset.persistDir, vars: BENCH_VARS, readyPath: "/healthcheck" }, async (server) => {
    // The concurrent search: the first page of spans (the most common UI request).
    const shape = SEARCH_SHAPES.find((s) => s.id === "first-page")!;
    let probeUrl = `${server.baseUrl}${shapePath(shape, dataset.manifest)}`;
    let probeBody: unknown = shape.body(dataset.manifest);
    let probe = `search: ${shape.title} (spans/partial_search)`;
    const first = await timedJson<{ detail?: unknown }>(probeUrl, { body: probeBody, headers });
    if (first.status === 404 && first.body?.detail === "Not Found") {
      probeUrl = `${server.baseUrl}/v2/projects/${tenant.projectId}/spans/available_columns`;
      probeBody = { log_stream_id: tenant.logStreamId };
      probe = "spans/available_columns (the search route is not there yet: a stand-in that also reads D1)";
    }
    const search = async () => expectStatus(await timedJson(probeUrl, { body: probeBody, headers }), 200, "concurrent search").ms;
    const idle: number[] = [];
    for (let i = 0; i < 5; i += 1) await search();
    for (let i = 0; i < (quick ? 10 : 40); i += 1) idle.push(await search());

    const submitted = performance.now();
    const answer = expectStatus(
      await timedJson<{ job_id: string | null; message: string }>(`${server.baseUrl}/v2/org-jobs/delete-by-metadata`, {
        body: { metadata_key: deletion.key, metadata_value: deletion.value },
        headers,
      }),
      200,
      "delete-by-metadata",
    ).body;
    if (!answer.job_id) throw new Error(`no job was queued: ${answer.message}`);
    const jobUrl = `${server.baseUrl}/v2/org-jobs/${answer.job_id}`;

    let finished = false;
    const during: number[] = [];
    const searching = (async () => {
      while (!finished) during.push(await search());
    })();
    const statusTrail: string[] = [];
    let job: OrgJob | undefined;
    const deadline = Date.now() + 25 * 60_000;
    while (Date.now() < deadline) {
      job = expectStatus(await timedJson<OrgJob>(jobUrl, { headers }), 200, "job status").body;
      if (statusTrail[statusTrail.length - 1] !== job.status) statusTrail.push(job.status);
      if (job.status === "completed" || job.status === "failed") break;
      await sleep(200);
    }
    const clientSeconds = (performance.now() - submitted) / 1000;
    finished = true;
    await searching;
    if (!job || (job.status !== "completed" && job.status !== "failed")) throw new Error("the deletion job did not finish within 25 minutes");
    const deleted = { sessions: job.progress.sessions_deleted, traces: job.progress.traces_deleted, spans: job.progress.spans_deleted };
    const serverSeconds = (Date.parse(job.updated_at) - Date.parse(job.created_at)) / 1000;
    return {
      expected,
      deleted,
      remaining: { sessions: 0, traces: 0, spans: 0 },
      serverSeconds,
      clientSeconds,
      probe,
      idle,
      during,
      statusTrail,
      failure: job.status === "failed" ? (job.error_message ?? "failed") : undefined,
    };
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
    service.remaining = await expectedDeletion(serviceCopy);
  } finally {
    discardCopy(serviceCopy);
  }
  console.log(`  service: ${count(total(service.deleted))} records in ${service.serverSeconds.toFixed(1)} s (${service.statusTrail.join(" → ")})`);

  const baselineCopy = copyDataset(dataset, "deletion-baseline");
  let baseline: { seconds: number; deleted: number };
  try {
    baseline = await plainDelete(baselineCopy);
  } finally {
    discardCopy(baselineCopy);
  }
  console.log(`  plain DELETE: ${count(baseline.deleted)} records in ${baseline.seconds.toFixed(2)} s`);

  const serviceRate = total(service.deleted) / service.serverSeconds;
  const baselineRate = baseline.deleted / baseline.seconds;
  const duringP95 = percentile(service.during, 95);
  const failures: string[] = [];
  if (service.failure) failures.push(`the job failed: ${service.failure}`);
  if (total(service.deleted) !== total(service.expected)) failures.push(`deleted ${total(service.deleted)} records, expected ${total(service.expected)}`);
  if (total(service.remaining) !== 0) failures.push(`${total(service.remaining)} matching records remain after the job`);
  if (serviceRate < 0.5 * baselineRate) failures.push(`rate ${ratio(serviceRate / baselineRate)} the baseline (target ≥ 0.5×)`);
  if (!(duringP95 < 100)) failures.push(`concurrent search p95 ${ms(duringP95)} ms (target < 100 ms)`);

  const table = markdownTable(
    ["measure", "value", "target"],
    [
      ["records to delete (sessions / traces / spans)", `${count(total(service.expected))} (${service.expected.sessions} / ${count(service.expected.traces)} / ${count(service.expected.spans)})`, ""],
      ["records deleted by the job", count(total(service.deleted)), "all of them"],
      ["matching records left afterwards", count(total(service.remaining)), "0"],
      ["job status trail", service.statusTrail.join(" → "), "completed"],
      ["time to completed (job created_at → updated_at)", `${service.serverSeconds.toFixed(2)} s`, ""],
      ["time to completed (as the polling client saw it)", `${service.clientSeconds.toFixed(2)} s`, ""],
      ["service rate", `${count(serviceRate)} records/s`, ""],
      ["plain DELETE on the SQLite file (one transaction)", `${count(baseline.deleted)} records in ${baseline.seconds.toFixed(2)} s = ${count(baselineRate)} records/s`, ""],
      ["service rate / plain DELETE rate", ratio(serviceRate / baselineRate), "≥ 0.5×"],
      ["concurrent search during the job: p50 / p95", `${ms(median(service.during))} / ${ms(duringP95)} ms (${service.during.length} requests)`, "p95 < 100 ms"],
      ["same search before the job: p50 / p95", `${ms(median(service.idle))} / ${ms(percentile(service.idle, 95))} ms`, ""],
    ],
    ["l", "r", "l"],
  );
  const markdown = [
    "# Deletion benchmark",
    "",
    runConditions(startLoad),
    `- dataset: ${count(options.size)} records, seed ${options.seed}; deleting user_metadata.${dataset.manifest.deletion.key} = ${dataset.manifest.deletion.value}`,
    `- concurrent search: ${service.probe}, one client sending back to back`,
    "",
    table,
    "",
    failures.length === 0 ? "Every target met." : ["Targets missed:", "", ...failures.map((f) => `- ${f}`)].join("\n"),
    "",
  ].join("\n");
  const file = writeResult("deletion", markdown, options.quick);
  console.log(`\n${markdown}\nwritten to ${file}`);
  return file;
}
