/**
 * The export benchmark (issue 22, point 5; docs/benchmarks.md "Export (issue 22)"). For each
 * dataset size, the whole run (sessions as roots, so every session, trace and span once) is
 * exported as `jsonl_flat` through `POST /v2/projects/{pid}/export_records` and read to the end
 * by the client, and measured in one run:
 *
 * 1. rate: records/s and MB/s of the stream as the client reads it, against the sqlite3 shell
 *    writing the same rows of the same file as JSON lines (json_object of the record's columns)
 *    to /dev/null, alone, in the same run; the ratio, judged at 0.5× at 100,000 records. And the
 *    floor of any export through D1's binding: the shell's very lines, written by SQLite, read
 *    page by page with `.raw()` and streamed by a worker that does nothing else
 *    (bench/floor-worker `/lines`); when the floor itself is below 0.5× of the shell, no export
 *    through the binding can reach it on this machine.
 * 2. memory: the worker isolate's live heap (the objects of a heap snapshot, taken after a full collection) before
 *    and at 20 points of an export of its own (measureLiveHeap), judged between the smallest and the
 *    largest size run (issue: 100,000 against 1,000,000, under 10% apart); also the used heap
 *    (garbage included) and the `workerd` process's resident memory (with the local D1 in it)
 *    during the first timed export.
 * 3. cost: the D1 queries of the export, counted by bench/capture-worker (the service with its D1
 *    binding observed: every call, also those made after the response began, which the
 *    `Server-Timing` header sent with the first byte cannot count); the workerd process's CPU
 *    time (/proc/<pid>/stat, minus its idle rate); the CPU the export's own SQL costs in SQLite
 *    (the captured statements replayed on the file by the sqlite3 shell); per 1,000 records.
 *    From them, the largest streamed export that fits one Worker invocation (30 s of CPU by
 *    default, 5 minutes at most on paid plans; 1,000 D1 queries).
 *
 * Servers run one at a time and the shell runs alone, so none competes with another for the cores.
 */
import http from "node:http";
import os from "node:os";
import { performance } from "node:perf_hooks";
import type { D1Call } from "../../src/http/d1-round-trips";
import { type Dataset, ensureDataset } from "../dataset/dataset-cache";
import { markdownTable, runConditions } from "../lib/markdown-report";
import { finishReport } from "../lib/finish-report";
import { CAPTURE_WORKER_CONFIG, FLOOR_WORKER_CONFIG, SERVICE_CONFIG } from "../lib/paths";
import { connectHeapSampler, type HeapSampler } from "../lib/inspector-heap";
import { cpuSeconds, memoryOf, resetPeakMemory, workerdPidsOf } from "../lib/process-usage";
import { SCAN_ADMISSION_OFF } from "../lib/scan-admission-off";
import { runSqlite, type SqlStatement, type SqlValue, sqlLiteral, timeStatements } from "../lib/sqlite-cli";
import { count, median, ms, ratio } from "../lib/stats";
import { type DevServer, sleep, withDevServer } from "../lib/wrangler-dev";
import { BENCH_VARS } from "../search/search-bench";

export interface ExportBenchOptions {
  sizes: number[];
  seed: number;
  quick: boolean;
}

/**
 * A whole-run export reads page after page: the organization's scan admission (which may refuse
 * a page as a scan over its time share) is lifted, as in the search bench, so that the bench
 * measures the export and not the limits.
 */
const EXPORT_BENCH_VARS = { ...BENCH_VARS, ...SCAN_ADMISSION_OFF };

/** Worker limits (docs/limits.md, /work/shared/platform.md): CPU per invocation and D1 queries. */
const CPU_LIMIT_DEFAULT_S = 30;
const CPU_LIMIT_MAX_S = 300;
const D1_QUERY_LIMIT = 1_000;
const MB = 1_000_000;

interface StreamRead {
  seconds: number;
  bytes: number;
  lines: number;
}

interface FloorRead extends StreamRead {
  /** workerd CPU during the read, seconds, its idle rate taken off. */
  cpuSeconds: number;
}

interface ShellRead extends StreamRead {
  /** The statement's CPU time in the shell (user + sys), seconds. */
  cpuSeconds: number;
}

interface ServiceExport extends StreamRead {
  /** workerd CPU during the export, seconds, its idle rate taken off. */
  cpuSeconds: number;
  /** Peak resident set during the export (VmHWM after a reset), bytes. */
  peakRss: number;
  /** Resident set just before the export, bytes. */
  rssBefore: number;
  /** Anonymous resident memory (RssAnon) just before the export and its peak during it (sampled every 20 ms), bytes. */
  anonymousBefore: number;
  peakAnonymous: number;
  /** The worker isolate's used V8 heap just before the export, and its peak during it (sampled), bytes. */
  heapBefore: number;
  peakHeap: number;
  heapSamples: number;
}

/** The worker isolate's live heap (after a full collection) before and during one export of its own. */
interface LiveHeap {
  before: number;
  peak: number;
  samples: number;
}

interface SizeRun {
  size: number;
  /** From an export of its own, after the timed ones: sampling the live heap stops the isolate. */
  liveHeap: LiveHeap;
  records: number;
  shell: ShellRead[];
  /** The floor: the shell's lines through the D1 binding, streamed by a worker doing nothing else. */
  floor: FloorRead[];
  service: ServiceExport[];
  workerdProcesses: number;
  queries: number;
  queryMethods: string;
  /** CPU of the export's statements replayed in the sqlite3 shell, seconds. */
  sqlCpuSeconds: number;
}

function exportBody(dataset: Dataset): Record<string, unknown> {
  return { log_stream_id: dataset.manifest.tenant.logStreamId, root_type: "session", export_format: "jsonl_flat" };
}

const exportUrl = (server: DevServer, dataset: Dataset) => `${server.baseUrl}/v2/projects/${dataset.manifest.tenant.projectId}/export_records`;

/**
 * Sends the export and reads its body to the end (or only `maxBytes` of it, then cancels),
 * counting bytes and lines as a client saving the file would see them.
 */
async function readExport(server: DevServer, dataset: Dataset, maxBytes = Number.POSITIVE_INFINITY): Promise<StreamRead> {
  const started = performance.now();
  const response = await fetch(exportUrl(server, dataset), {
    method: "POST",
    headers: { "content-type": "application/json", "Service-API-Key": dataset.manifest.tenant.apiKey },
    body: JSON.stringify(exportBody(dataset)),
  });
  return readBody(response, started, maxBytes);
}

/** Reads a streamed answer to the end (or `maxBytes` of it, then cancels), counting bytes and lines. */
async function readBody(response: Response, started: number, maxBytes = Number.POSITIVE_INFINITY): Promise<StreamRead> {
  if (response.status !== 200 || !response.body) throw new Error(`HTTP ${response.status}: ${(await response.text()).slice(0, 1000)}`);
  const reader = response.body.getReader();
  let bytes = 0;
  let lines = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.byteLength;
    for (let i = value.indexOf(10); i !== -1; i = value.indexOf(10, i + 1)) lines += 1;
    if (bytes >= maxBytes) {
      await reader.cancel();
      break;
    }
  }
  return { seconds: (performance.now() - started) / 1000, bytes, lines };
}

/**
 * The baseline: the run's rows as JSON lines, written by the sqlite3 shell from the database file
 * to /dev/null. The object holds the columns the export writes for each record (its fields,
 * user_metadata, tags and metrics as JSON, input and output parsed back when stored as JSON,
 * created_at and updated_at as ISO text); no ORDER BY: the fastest the shell writes these rows.
 */
const RECORD_JSON = `json_object(
  'id', id, 'type', type, 'name', name,
  'input', CASE WHEN input_is_json = 1 THEN json(input) ELSE input END,
  'output', CASE WHEN output_is_json = 1 THEN json(output) ELSE output END,
  'redacted_input', redacted_input, 'redacted_output', redacted_output,
  'created_at', strftime('%Y-%m-%dT%H:%M:%fZ', created_at / 1000000.0, 'unixepoch'),
  'updated_at', strftime('%Y-%m-%dT%H:%M:%fZ', updated_at / 1000000.0, 'unixepoch'),
  'user_metadata', json(user_metadata), 'tags', json(tags), 'status_code', status_code,
  'external_id', external_id, 'dataset_input', dataset_input, 'dataset_output', dataset_output,
  'dataset_metadata', json(dataset_metadata), 'session_id', session_id, 'trace_id', trace_id,
  'project_id', project_id, 'run_id', run_id, 'has_children', json(CASE WHEN has_children = 1 THEN 'true' ELSE 'false' END),
  'is_complete', json(CASE WHEN is_complete = 1 THEN 'true' ELSE 'false' END), 'error_message', error_message,
  'progress_message', progress_message, 'parent_id', parent_id, 'step_number', step_number,
  'metrics', json(metrics), 'metric_info', json(metric_info), 'model', model, 'temperature', temperature,
  'finish_reason', finish_reason, 'tools', json(tools), 'events', json(events), 'tool_call_id', tool_call_id,
  'agent_type', agent_type, 'previous_session_id', previous_session_id)`;

/** The run's records in the file (the dataset holds one run: its organization, project and log stream). */
function runRows(dataset: Dataset): string {
  const { organizationId, projectId, logStreamId } = dataset.manifest.tenant;
  return `FROM records WHERE organization_id = ${sqlLiteral(organizationId)} AND project_id = ${sqlLiteral(projectId)} AND run_id = ${sqlLiteral(logStreamId)}`;
}

const RUN_TIME = /^Run Time: real ([\d.]+) user ([\d.]+) sys ([\d.]+)$/m;

async function shellExport(dataset: Dataset): Promise<ShellRead> {
  const started = performance.now();
  const { stdout: timing } = await runSqlite(dataset.sqliteFile, `.mode list\n.headers off\n.output /dev/null\n.timer on\nSELECT ${RECORD_JSON} ${runRows(dataset)};\n`, { timeoutMs: 3_600_000 });
  const seconds = (performance.now() - started) / 1000;
  const time = RUN_TIME.exec(timing);
  if (!time) throw new Error(`no timing from sqlite3: ${timing.slice(0, 300)}`);
  // The same lines' count and size, measured apart so that the timed run writes nowhere.
  const { stdout } = await runSqlite(dataset.sqliteFile, `.mode list\nSELECT count(*), sum(length(CAST(line AS BLOB)) + 1) FROM (SELECT ${RECORD_JSON} AS line ${runRows(dataset)});\n`);
  const [lines, bytes] = stdout.trim().split("|").map(Number);
  return { seconds, cpuSeconds: Number(time[2]) + Number(time[3]), bytes: bytes!, lines: lines! };
}

/** CPU seconds per second that workerd spends doing nothing (timers, the dev proxy's keep-alive). */
async function idleCpuRate(pid: number, seconds: number): Promise<number> {
  const before = cpuSeconds(pid);
  await sleep(seconds * 1000);
  return (cpuSeconds(pid) - before) / seconds;
}

/** Rows per page of the floor: as many as the export's descendant reads (DESCENDANT_ROWS_PER_READ). */
const FLOOR_PAGE = 2_000;

/**
 * The floor of any streamed export through D1's binding: the shell's lines (the same
 * json_object, written by SQLite) read page by page, by rid, with `.raw()`, and streamed by a
 * worker that does nothing else (bench/floor-worker `/lines`). The run's columns are unary-plus'd
 * so that SQLite walks the table in rid order and each page costs the same.
 */
async function measureFloor(dataset: Dataset, repetitions: number): Promise<FloorRead[]> {
  const { organizationId, projectId, logStreamId } = dataset.manifest.tenant;
  const sql = `SELECT rid, ${RECORD_JSON} FROM records WHERE +organization_id = ${sqlLiteral(organizationId)} AND +project_id = ${sqlLiteral(projectId)} AND +run_id = ${sqlLiteral(logStreamId)} AND rid > ?1 ORDER BY rid LIMIT ?2`;
  return withDevServer({ name: "export-floor", config: FLOOR_WORKER_CONFIG, persistTo: dataset.persistDir }, async (server) => {
    const pids = workerdPidsOf(server.pid);
    const pid = pids.map((p) => ({ p, rss: memoryOf(p).rss })).sort((a, b) => b.rss - a.rss)[0]!.p;
    const read = async () => {
      const started = performance.now();
      const response = await fetch(`${server.baseUrl}/lines`, { method: "POST", body: JSON.stringify({ sql, page: FLOOR_PAGE }) });
      return readBody(response, started);
    };
    await read(); // warm: JIT, the statement's plan, the file's pages
    await sleep(500);
    const idle = await idleCpuRate(pid, 2);
    const runs: FloorRead[] = [];
    for (let i = 0; i < repetitions; i += 1) {
      const cpuBefore = cpuSeconds(pid);
      const done = await read();
      runs.push({ ...done, cpuSeconds: cpuSeconds(pid) - cpuBefore - idle * done.seconds });
      console.log(`  D1 floor: ${count(done.lines)} lines, ${(done.bytes / MB).toFixed(1)} MB in ${done.seconds.toFixed(2)} s; workerd CPU ${runs.at(-1)!.cpuSeconds.toFixed(2)} s`);
    }
    return runs;
  });
}

/**
 * The worker's memory as the export needs it: its live heap, the objects of a heap snapshot
 * (which V8 takes after a full collection), before an export of its own and at 20 points of it.
 * The inspector is answered only while the isolate is idle, which a busy export seldom is (on a
 * loaded machine, not once in a 1,000,000-record export), so this export's client pauses at each
 * point, the worker finishes the chunk it was writing and waits for the client to read on
 * (backpressure) with what it holds, and the sample is taken then. The sample is the snapshot's
 * own sum: the used heap read just after it could already count the garbage of work done in
 * between (it read 37-59 MiB at points where the snapshot held 22 MiB). The used heap the timed exports sample also counts garbage V8 has not
 * collected yet, which comes and goes with its collector's pace: 43 to 85 MiB over six exports of
 * one server, while the live heap after each was 10.8-10.9 MiB (docs/benchmarks.md, "Export").
 */
/** How long the memory export's client waits, paused, before a sample: the worker's pull in flight finishes. */
const SETTLE_MS = 500;

async function measureLiveHeap(server: DevServer, dataset: Dataset, heap: HeapSampler, expectedBytes: number): Promise<LiveHeap> {
  const live = () => heap.live().catch(() => Number.NaN);
  const before = await live();
  let peak = before;
  let samples = 0;
  const every = Math.max(MB, expectedBytes / 20);
  const response = await fetch(exportUrl(server, dataset), {
    method: "POST",
    headers: { "content-type": "application/json", "Service-API-Key": dataset.manifest.tenant.apiKey },
    body: JSON.stringify(exportBody(dataset)),
  });
  if (response.status !== 200 || !response.body) throw new Error(`export: HTTP ${response.status}`);
  const reader = response.body.getReader();
  let bytes = 0;
  let next = every;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.byteLength;
    if (bytes < next) continue;
    next += every;
    // The worker may be mid-pull when the client stops (a D1 read in flight): let it finish and
    // wait on backpressure, or its work would land between the collection and the reading.
    await sleep(SETTLE_MS);
    const sample = await live();
    if (Number.isNaN(sample)) continue;
    peak = Number.isNaN(peak) ? sample : Math.max(peak, sample);
    samples += 1;
  }
  console.log(`  live heap: ${mib(before)} MiB before, peak ${mib(peak)} MiB (${samples} samples over ${(bytes / MB).toFixed(0)} MB)`);
  return { before, peak, samples };
}

async function measureService(dataset: Dataset, repetitions: number): Promise<{ runs: ServiceExport[]; liveHeap: LiveHeap; workerdProcesses: number }> {
  return withDevServer({ name: "export", config: SERVICE_CONFIG, persistTo: dataset.persistDir, vars: EXPORT_BENCH_VARS, readyPath: "/healthcheck" }, async (server) => {
    const pids = workerdPidsOf(server.pid);
    if (pids.length === 0) throw new Error(`no workerd process in wrangler dev's process group ${server.pid}`);
    // wrangler dev starts two: the one that runs the worker (and the local D1) is the largest.
    const pid = pids.map((p) => ({ p, rss: memoryOf(p).rss })).sort((a, b) => b.rss - a.rss)[0]!.p;
    // Connected before anything runs: after an export, the proxy may leave the call unanswered.
    const heap = await connectHeapSampler(server.inspectorPort).catch((error: Error) => (console.log(`  no isolate heap: ${error.message}`), undefined));
    // The isolate's used heap, or NaN when the inspector does not answer (reported as n/a).
    const heapUsed = async () => (heap ? heap.used().catch(() => Number.NaN) : Number.NaN);
    // Warm up: JIT, the statements' first plans, the file's pages in the page cache.
    await readExport(server, dataset, 4 * MB);
    await sleep(500);
    const idle = await idleCpuRate(pid, 2);
    const runs: ServiceExport[] = [];
    try {
      for (let i = 0; i < repetitions; i += 1) {
        const heapBefore = await heapUsed();
        const before = memoryOf(pid);
        resetPeakMemory(pid);
        let peakAnonymous = before.anonymous;
        const sampler = setInterval(() => (peakAnonymous = Math.max(peakAnonymous, memoryOf(pid).anonymous)), 20);
        // The isolate's heap, one sample after another (each answered between the worker's tasks).
        // On a loaded machine a sample can go unanswered for the inspector's 10 s: it is counted
        // as missed and sampling goes on; three missed in a row end it (the inspector is gone).
        let peakHeap = heapBefore;
        let heapSamples = 0;
        let heapMissed = 0;
        let exporting = true;
        const heapSampling = (async () => {
          for (let missedInRow = 0; exporting && missedInRow < 3; await sleep(20)) {
            const used = await heapUsed();
            if (Number.isNaN(used)) {
              heapMissed += 1;
              missedInRow += 1;
              continue;
            }
            missedInRow = 0;
            peakHeap = Number.isNaN(peakHeap) ? used : Math.max(peakHeap, used);
            heapSamples += 1;
          }
        })();
        const cpuBefore = cpuSeconds(pid);
        const read = await readExport(server, dataset).finally(() => {
          clearInterval(sampler);
          exporting = false;
        });
        await heapSampling;
        const cpu = cpuSeconds(pid) - cpuBefore - idle * read.seconds;
        const after = memoryOf(pid);
        peakAnonymous = Math.max(peakAnonymous, after.anonymous);
        runs.push({ ...read, cpuSeconds: cpu, peakRss: after.peak, rssBefore: before.rss, anonymousBefore: before.anonymous, peakAnonymous, heapBefore, peakHeap: heapSamples > 0 ? peakHeap : Number.NaN, heapSamples });
        console.log(
          `  service: ${count(read.lines)} lines, ${(read.bytes / MB).toFixed(1)} MB in ${read.seconds.toFixed(2)} s; workerd CPU ${cpu.toFixed(2)} s; RSS ${mib(before.rss)} MiB before (${mib(before.anonymous)} anonymous, ${mib(before.file)} file), peak ${mib(after.peak)} MiB (${mib(peakAnonymous)} anonymous); isolate heap ${mib(heapBefore)} MiB before, peak ${mib(peakHeap)} MiB (${heapSamples} samples, ${heapMissed} missed)`,
        );
      }
      const liveHeap = heap ? await measureLiveHeap(server, dataset, heap, runs[0]!.bytes) : { before: Number.NaN, peak: Number.NaN, samples: 0 };
      return { runs, liveHeap, workerdProcesses: pids.length };
    } finally {
      heap?.close();
    }
  });
}

/**
 * GET a JSON answer over a connection of its own (node:http, no agent). After the client had read
 * a whole streamed export, a fetch of the captured calls waited until undici's headers timeout
 * (300 s) and failed, while curl on the same server answered in 0.04 s. On its own connection it
 * usually answers at once, but it has still hung once (docs/benchmarks.md, "Export"): the cause is
 * not found, and the 600 s timeout makes such a run fail visibly rather than wait.
 */
async function freshGetJson<T>(url: string): Promise<T> {
  const text = await new Promise<string>((resolve, reject) => {
    const request = http.get(url, { agent: false, timeout: 600_000 }, (response) => {
      if (response.statusCode !== 200) reject(new Error(`GET ${url}: HTTP ${response.statusCode}`));
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () => resolve(Buffer.concat(chunks).toString()));
      response.on("error", reject);
    });
    request.on("timeout", () => request.destroy(new Error(`GET ${url}: timed out`)));
    request.on("error", reject);
  });
  return JSON.parse(text) as T;
}

/** Every D1 call of one whole export, from the capture worker, and the CPU of its SQL in SQLite. */
async function captureQueries(dataset: Dataset): Promise<{ calls: D1Call[]; sqlCpuSeconds: number }> {
  const calls = await withDevServer(
    { name: "export-capture", config: CAPTURE_WORKER_CONFIG, persistTo: dataset.persistDir, vars: EXPORT_BENCH_VARS, readyPath: "/healthcheck" },
    async (server) => {
      await readExport(server, dataset);
      return await freshGetJson<D1Call[]>(`${server.baseUrl}/__bench/d1-calls`);
    },
  );
  const statements: SqlStatement[] = calls.flatMap((call) => call.statements.map((s) => ({ sql: s.sql, params: s.params as SqlValue[] })));
  const { samples } = await timeStatements(dataset.sqliteFile, statements, { warmup: 1, repetitions: 1, timeoutMs: 3_600_000 });
  return { calls, sqlCpuSeconds: samples[0]! / 1000 };
}

async function benchSize(dataset: Dataset, options: ExportBenchOptions): Promise<SizeRun> {
  const size = dataset.manifest.records;
  const records = Object.values(dataset.manifest.counts).reduce((a, b) => a + b, 0);
  console.log(`\nexport @ ${count(size)} records (${dataset.persistDir})`);
  // Fewer repetitions where one export takes minutes.
  const repetitions = options.quick ? 1 : size <= 100_000 ? 3 : 1;
  const shell: ShellRead[] = [];
  await shellExport(dataset); // warm: the file's pages in the page cache
  for (let i = 0; i < repetitions; i += 1) {
    shell.push(await shellExport(dataset));
    const last = shell.at(-1)!;
    console.log(`  sqlite3 shell: ${count(last.lines)} lines, ${(last.bytes / MB).toFixed(1)} MB in ${last.seconds.toFixed(2)} s (CPU ${last.cpuSeconds.toFixed(2)} s)`);
  }
  const floor = await measureFloor(dataset, repetitions);
  const { runs, liveHeap, workerdProcesses } = await measureService(dataset, repetitions);
  for (const run of [...runs, ...floor]) {
    if (run.lines !== records) throw new Error(`the export (or its floor) wrote ${run.lines} lines for ${records} records`);
  }
  const { calls, sqlCpuSeconds } = await captureQueries(dataset);
  const methods = new Map<string, number>();
  for (const call of calls) methods.set(call.method, (methods.get(call.method) ?? 0) + 1);
  console.log(`  D1: ${calls.length} queries; their SQL replayed: ${sqlCpuSeconds.toFixed(2)} s CPU`);
  return {
    size,
    records,
    shell,
    floor,
    liveHeap,
    service: runs,
    workerdProcesses,
    queries: calls.length,
    queryMethods: [...methods].map(([m, n]) => `${n} ${m}`).join(", "),
    sqlCpuSeconds,
  };
}

const medianBy = <T>(items: T[], key: (item: T) => number) => median(items.map(key));
const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1);

interface Derived {
  serviceRate: number;
  serviceMBs: number;
  shellRate: number;
  shellMBs: number;
  floorRate: number;
  floorMBs: number;
  /** Load-independent: the shell's CPU for the rows over workerd's CPU for the export. */
  cpuRatio: number;
  peakRss: number;
  rssBefore: number;
  anonymousBefore: number;
  peakAnonymous: number;
  heapBefore: number;
  peakHeap: number;
  liveBefore: number;
  livePeak: number;
  liveSamples: number;
  cpuPer1000: number;
  sqlCpuPer1000: number;
  queriesPer1000: number;
}

function derive(run: SizeRun): Derived {
  const seconds = medianBy(run.service, (r) => r.seconds);
  const shellSeconds = medianBy(run.shell, (r) => r.seconds);
  const floorSeconds = medianBy(run.floor, (r) => r.seconds);
  return {
    floorRate: run.records / floorSeconds,
    floorMBs: run.floor[0]!.bytes / MB / floorSeconds,
    serviceRate: run.records / seconds,
    serviceMBs: run.service[0]!.bytes / MB / seconds,
    shellRate: run.records / shellSeconds,
    shellMBs: run.shell[0]!.bytes / MB / shellSeconds,
    cpuRatio: medianBy(run.shell, (r) => r.cpuSeconds) / medianBy(run.service, (r) => r.cpuSeconds),
    // The first export of each size: each starts from the same state (a fresh server, warmed up);
    // later ones start from whatever the one before left in the heap.
    peakRss: run.service[0]!.peakRss,
    rssBefore: run.service[0]!.rssBefore,
    anonymousBefore: run.service[0]!.anonymousBefore,
    peakAnonymous: run.service[0]!.peakAnonymous,
    heapBefore: run.service[0]!.heapBefore,
    peakHeap: run.service[0]!.peakHeap,
    liveBefore: run.liveHeap.before,
    livePeak: run.liveHeap.peak,
    liveSamples: run.liveHeap.samples,
    cpuPer1000: (medianBy(run.service, (r) => r.cpuSeconds) / run.records) * 1000,
    sqlCpuPer1000: (run.sqlCpuSeconds / run.records) * 1000,
    queriesPer1000: (run.queries / run.records) * 1000,
  };
}

/** The largest export one invocation can stream: records before the CPU or the query budget runs out. */
function invocationLimits(d: Derived): { cpuDefault: number; cpuMax: number; queries: number; workerCpuPer1000: number } {
  // The worker's own CPU: the process's, less the SQL that D1 (not the Worker) runs when deployed.
  const workerCpuPer1000 = Math.max(d.cpuPer1000 - d.sqlCpuPer1000, Number.EPSILON);
  return {
    workerCpuPer1000,
    cpuDefault: (CPU_LIMIT_DEFAULT_S / workerCpuPer1000) * 1000,
    cpuMax: (CPU_LIMIT_MAX_S / workerCpuPer1000) * 1000,
    queries: (D1_QUERY_LIMIT / d.queriesPer1000) * 1000,
  };
}

/** Whether the floor itself reaches 0.5× of the shell at the judged size: if not, no export through D1's binding can. */
function floorVerdict(runs: SizeRun[], derived: Derived[]): string {
  const i = runs.findIndex((run) => run.size === 100_000);
  const at = i === -1 ? runs.length - 1 : i;
  const d = derived[at]!;
  const floor = d.floorRate / d.shellRate;
  const reach = floor >= 0.5 ? "the target is within the floor's reach" : "below 0.5×: no export through D1's binding reaches the target on this machine, however little it does besides";
  return `The D1 floor at ${count(runs[at]!.size)} records runs at ${ratio(floor)} of the shell (${reach}); the export at ${ratio(d.serviceRate / d.floorRate)} of the floor. The floor: bench/floor-worker \`/lines\`, the shell's lines (the same json_object, written by SQLite) read ${count(FLOOR_PAGE)} rows a statement with \`.raw()\` and streamed by a worker that does nothing else.`;
}

function report(runs: SizeRun[], options: ExportBenchOptions, startLoad: number[]): string {
  const derived = runs.map(derive);
  const rateRows = runs.map((run, i) => {
    const d = derived[i]!;
    const judged = run.size === 100_000;
    const pass = d.serviceRate / d.shellRate >= 0.5;
    return [
      count(run.size),
      `${count(d.serviceRate)} rec/s, ${d.serviceMBs.toFixed(1)} MB/s`,
      `${count(d.shellRate)} rec/s, ${d.shellMBs.toFixed(1)} MB/s`,
      `${count(d.floorRate)} rec/s, ${d.floorMBs.toFixed(1)} MB/s`,
      ratio(d.serviceRate / d.shellRate),
      ratio(d.floorRate / d.shellRate),
      ratio(d.serviceRate / d.floorRate),
      ratio(d.cpuRatio),
      judged ? (pass ? "PASS (≥ 0.5×)" : "FAIL (< 0.5×)") : `${pass ? "≥" : "<"} 0.5× (target judged at 100,000)`,
      `${(run.service[0]!.bytes / run.records).toFixed(0)} / ${(run.shell[0]!.bytes / run.records).toFixed(0)}`,
    ];
  });
  const smallest = derived[0]!;
  const largest = derived[derived.length - 1]!;
  // Judged on the worker isolate's live heap: what the export holds. The used heap also counts
  // garbage not yet collected, and the process's anonymous memory also holds the local D1 (its
  // SQLite pages and its own isolate), which a deployed Worker does not.
  const memoryGrowth = largest.livePeak / smallest.livePeak - 1;
  const usedGrowth = largest.peakHeap / smallest.peakHeap - 1;
  const anonymousGrowth = largest.peakAnonymous / smallest.peakAnonymous - 1;
  const memoryRows = runs.map((run, i) => {
    const d = derived[i]!;
    const vs = (a: number, b: number) => (i === 0 ? "—" : `${(100 * (a / b - 1)).toFixed(1)}%`);
    return [
      count(run.size),
      `${mib(d.liveBefore)} / ${mib(d.livePeak)} (${d.liveSamples} samples)`,
      vs(d.livePeak, smallest.livePeak),
      `${mib(d.heapBefore)} / ${mib(d.peakHeap)}`,
      vs(d.peakHeap, smallest.peakHeap),
      `${mib(d.rssBefore)} / ${mib(d.anonymousBefore)}`,
      mib(d.peakRss),
      mib(d.peakAnonymous),
      vs(d.peakAnonymous, smallest.peakAnonymous),
    ];
  });
  const percent = (growth: number) => (Number.isNaN(growth) ? "not measured (the inspector did not answer)" : `${(100 * growth).toFixed(1)}% apart`);
  const costRows = runs.map((run, i) => {
    const d = derived[i]!;
    const limits = invocationLimits(d);
    return [
      count(run.size),
      `${run.queries} (${run.queryMethods})`,
      d.queriesPer1000.toFixed(2),
      ms(d.cpuPer1000 * 1000),
      ms(d.sqlCpuPer1000 * 1000),
      ms(limits.workerCpuPer1000 * 1000),
      count(limits.queries),
      count(limits.cpuDefault),
      count(limits.cpuMax),
    ];
  });
  const last = invocationLimits(largest);
  const fits = Math.min(last.queries, last.cpuDefault);
  const bound = last.queries <= last.cpuDefault ? "the 1,000 D1 queries" : "30 s of CPU";
  const sizes = runs.map((r) => r.size);
  return [
    "# Export benchmark",
    "",
    runConditions(startLoad),
    `- seed ${options.seed}; sizes ${sizes.map(count).join(", ")}${options.quick ? "; QUICK run (one sample: not for figures)" : ""}`,
    `- the export: the whole run, \`root_type: session\` (every session, trace and span once), \`jsonl_flat\`, redact on, newest first; \`wrangler dev\` of the service with the scan admission lifted; ${runs[0]!.workerdProcesses} workerd process(es) in wrangler's group, the largest measured`,
    "",
    "## Rate: the stream read to the end, against the sqlite3 shell",
    "",
    markdownTable(
      ["records", "export (client reads)", "sqlite3 shell (to /dev/null)", "D1 floor (the shell's lines through the binding)", "export / shell", "floor / shell", "export / floor", "same, by CPU time", "target", "bytes per record: export / shell"],
      rateRows,
      ["r", "r", "r", "r", "r", "r", "r", "r", "l", "r"],
    ),
    "",
    floorVerdict(runs, derived),
    "",
    "Medians of the repetitions (3 up to 100,000 records, 1 above). The shell writes `json_object(...)` of the same records' columns, one line each, with no ORDER BY (see bench/export/export-bench.ts). By CPU time: the shell's CPU for the statement (user + sys) over workerd's for the export: the same ratio without the machine's load, which stretches a 5 s export's wall time more than a 0.2 s statement's.",
    "",
    "## Memory: the worker's isolate and the workerd process during the export",
    "",
    markdownTable(
      ["records", "live heap: before / peak (MiB)", "live peak vs smallest size", "used heap: before / peak (MiB)", "used peak vs smallest size", "process RSS / anonymous before (MiB)", "peak RSS (VmHWM, MiB)", "peak anonymous (MiB)", "peak anonymous vs smallest size"],
      memoryRows,
      ["r", "r", "r", "r", "r", "r", "r", "r", "r"],
    ),
    "",
    `The worker isolate's peak live heap between ${count(sizes[0]!)} and ${count(sizes[sizes.length - 1]!)} records: ${percent(memoryGrowth)} (target: under 10% between 100,000 and 1,000,000): ${Number.isNaN(memoryGrowth) ? "n/a" : Math.abs(memoryGrowth) < 0.1 ? "PASS" : "FAIL"}${sizes[0] === 100_000 && sizes[sizes.length - 1] === 1_000_000 ? "" : " (not the sizes of the target)"}; its peak used heap: ${percent(usedGrowth)}; the process's peak anonymous memory: ${percent(anonymousGrowth)}.`,
    "The live heap is the sum of the objects of a heap snapshot of the worker's isolate (V8 takes it after a full collection; external array buffers included: `HeapProfiler.takeHeapSnapshot` through wrangler's inspector, bench/lib/inspector-heap.ts), before an export of its own and at 20 points of it, where that export's client pauses and the worker waits with what it holds (the inspector is answered only while the isolate is idle): what the export holds. The used heap (`Runtime.getHeapUsage`, sampled all through the first timed export) also counts garbage not yet collected, which comes and goes with the collector's pace. The process's anonymous memory (RssAnon, sampled every 20 ms) also holds the local D1, which runs in the same workerd process (SQLite's pages and the D1 service's own isolate) and a deployed Worker does not hold; VmHWM is the whole resident set's peak (reset with clear_refs just before the export).",
    "",
    "## Cost per 1,000 records and the largest streamed export per invocation",
    "",
    markdownTable(
      ["records", "D1 queries (calls)", "queries / 1,000", "workerd CPU ms / 1,000", "its SQL in SQLite ms / 1,000", "worker CPU ms / 1,000", "fits 1,000 queries", "fits 30 s CPU", "fits 5 min CPU"],
      costRows,
      ["r", "r", "r", "r", "r", "r", "r", "r", "r"],
    ),
    "",
    `At ${count(sizes[sizes.length - 1]!)} records, one invocation streams about ${count(fits)} records before ${bound} run out (default limits). Past that, \`POST /v2/projects/{pid}/export_records/url\` runs the export as a queued job to R2, continuing across queue messages.`,
    "workerd CPU: the process's user + system time during the export, less its idle rate; it includes the local D1 (SQLite in the same process) and the HTTP proxying. Worker CPU: that less the export's own statements replayed in the sqlite3 shell (what D1, not the Worker, spends deployed).",
    "",
  ].join("\n");
}

export async function runExportBench(options: ExportBenchOptions): Promise<string> {
  const startLoad = os.loadavg();
  const sizes = [...new Set(options.sizes)].sort((a, b) => a - b);
  const datasets: Dataset[] = [];
  for (const size of sizes) datasets.push(await ensureDataset(size, options.seed));
  const runs: SizeRun[] = [];
  for (const dataset of datasets) runs.push(await benchSize(dataset, options));
  const markdown = report(runs, { ...options, sizes }, startLoad);
  return finishReport("export", markdown, options.quick);
}
