/**
 * The alerts benchmark (issue 35, point 6), against `wrangler dev` with the service's own cron
 * handler (`/__scheduled`):
 *
 * 1. Evaluation: `--size` due rules (default 1,000) over 100 projects (10 rules each: metrics of
 *    every kind, windows of 5 minutes to a day, half of them filtered), each project's log stream
 *    holding traces of the last day. The cron's run of their minute is timed, and workerd's CPU
 *    (all its threads, /proc) is measured against a baseline run of the same cron with no rule due
 *    (its other work: the upkeep, moves): CPU ms per rule = (with rules - baseline) / rules. The
 *    cron only sends the due rules to the evaluation queue in batches; each batch's log line (one
 *    per consumer invocation) gives its metrics reads (at most one per rule: rules of the same
 *    run, filters and window share one), its D1 round trips (the max is held against the 1,000
 *    queries a Worker invocation may make) and its wall time.
 * 2. Delivery latency: about a fifth of the rules cross their threshold in that run; each
 *    `alert.firing` is received by a local HTTP server, and the time from the cron's call to its
 *    arrival is reported (p50, p95, max). A condition that becomes true is evaluated at the rule's
 *    next due minute (at most one evaluation interval later), so it is delivered within one
 *    interval plus this latency (target: plus 30 s).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import { readFileSync } from "node:fs";
import { emptyDatabase, discardCopy } from "../dataset/dataset-cache";
import { markdownTable, runConditions } from "../lib/markdown-report";
import { finishReport } from "../lib/finish-report";
import { SERVICE_CONFIG } from "../lib/paths";
import { cpuSeconds, workerdPidsOf } from "../lib/process-usage";
import { SCAN_ADMISSION_OFF } from "../lib/scan-admission-off";
import { count, ms, percentile } from "../lib/stats";
import { sleep, withDevServer } from "../lib/wrangler-dev";
import { BENCH_VARS } from "../search/search-bench";

export interface AlertsBenchOptions {
  quick: boolean;
  rules: number;
}

const PROJECTS = 100;
const SEED = 35;
const METRICS = ["error_rate", "error_count", "trace_count", "p95_latency_ns", "p50_latency_ns", "average_latency_ns", "total_cost", "total_tokens", "average_cost", "p99_latency_ns"];
const WINDOWS = [5, 15, 60, 240, 1440];

export async function runAlertsBench(options: AlertsBenchOptions): Promise<void> {
  const startLoad = os.loadavg();
  const rulesWanted = options.quick ? 100 : options.rules;
  const projectsWanted = Math.min(PROJECTS, Math.max(1, Math.ceil(rulesWanted / 10)));
  const arrivals = new Map<string, number>();
  const receiver = http.createServer((request, response) => {
    let body = "";
    request.on("data", (chunk) => (body += chunk));
    request.on("end", () => {
      try {
        const payload = JSON.parse(body) as { type: string; alert?: { id: string } };
        if (payload.type === "alert.firing" && payload.alert) arrivals.set(payload.alert.id, Date.now());
      } catch {
        // not ours
      }
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  const db = await emptyDatabase("alerts", SEED);
  // The service's log line of each evaluation: `--log-level log` keeps the worker's console.log.
  process.env.BENCH_WRANGLER_LOG_LEVEL = "log";
  try {
    const { tenant } = db.manifest;
    // One organization holds the 100 projects here: its scan admission (2 at once, 10% of the time),
    // which every rule's read goes through as metrics/search's do, is lifted so that the figure is
    // the evaluation's own cost (docs/alerts.md says what the admission means for many rules).
    // BENCH_ALERTS_ADMISSION=1 keeps the default admission (2 scans at once, 10% of the time) to
    // measure what it does to one organization's 1,000 rules.
    const admission = process.env.BENCH_ALERTS_ADMISSION === "1";
    const vars = { ...BENCH_VARS, ...(admission ? {} : SCAN_ADMISSION_OFF), DATA_SHARDS: "DB", ALERT_DESTINATIONS: "local" };
    await withDevServer({ name: "alerts", config: SERVICE_CONFIG, persistTo: db.persistDir, vars, readyPath: "/healthcheck", testScheduled: true }, async (server) => {
      const api = async <T = any>(path: string, body?: unknown): Promise<T> => {
        const response = await fetch(`${server.baseUrl}/v2${path}`, {
          method: body === undefined ? "GET" : "POST",
          headers: { "Service-API-Key": tenant.apiKey, "content-type": "application/json" },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const text = await response.text();
        if (!response.ok) throw new Error(`${path}: ${response.status} ${text.slice(0, 300)}`);
        return JSON.parse(text) as T;
      };
      const channel = await api<{ id: string }>("/notification_channels", { name: "bench", type: "webhook", url: hookUrl });
      const now = Date.now();
      console.log(`alerts bench: ${projectsWanted} projects, their traces and ${rulesWanted} rules`);
      const ruleIds: string[] = [];
      let firingExpected = 0;
      const streams: { projectId: string; streamId: string }[] = [];
      for (let p = 0; p < projectsWanted; p += 1) {
        const project = await api<{ id: string }>("/projects", { name: `alerts-bench-${p}` });
        const stream = await api<{ id: string }>(`/projects/${project.id}/log_streams`, { name: "production" });
        // 60 traces over the last day, a third of them in the last 5 minutes; one in five an error.
        const traces = Array.from({ length: 60 }, (_, i) => ({
          name: i % 2 === 0 ? "checkout" : "search",
          created_at: new Date(now - (i % 3 === 0 ? (i + 1) * 4_000 : (i + 1) * 1_400_000)).toISOString(),
          status_code: i % 5 === 0 ? 500 : 200,
          metrics: { duration_ns: 1_000_000 * (1 + (i % 17)), num_input_tokens: 100 + i, num_output_tokens: 20, cost: 0.001 * (1 + (i % 7)) },
        }));
        await api(`/projects/${project.id}/traces`, { log_stream_id: stream.id, traces });
        streams.push({ projectId: project.id, streamId: stream.id });
      }
      // Let the upkeep compute the metric cells of what was just written (as it would be, minutes later).
      await sleep(15_000);
      const pids = workerdPidsOf(server.pid);
      const cpu = () => pids.reduce((sum, pid) => sum + cpuSeconds(pid), 0);
      const logLines = () => readFileSync(server.logFile, "utf8").split("\n").filter((l) => l.includes("alerts: minute"));
      // The cron's line (`N due rules in M evaluation batches`) and each batch's (one per consumer invocation).
      const batchLines = (lines: string[]) => lines.filter((l) => l.includes(": batch of "));
      const field = (line: string, pattern: RegExp) => Number(pattern.exec(line)?.[1] ?? NaN);
      // `/__scheduled` runs the cron at the current time (its `time` parameter is not honoured), so
      // the baseline, the same cron with no rule due, runs before the rules exist.
      const runCron = async () => {
        const started = Date.now();
        const response = await fetch(`${server.baseUrl}/__scheduled?cron=${encodeURIComponent("* * * * *")}`);
        await response.text();
        return started;
      };
      const cpuBefore = cpu();
      const baselineStarted = await runCron();
      await sleep(5_000);
      const baselineCpu = cpu() - cpuBefore;
      const baselineWall = Date.now() - baselineStarted;

      for (const [p, { projectId, streamId }] of streams.entries()) {
        for (let r = 0; r < 10 && ruleIds.length < rulesWanted; r += 1) {
          const metric = METRICS[r % METRICS.length]!;
          // Rule r % 5 === 0 crosses (threshold far below any value); the others stay ok.
          const fires = r % 5 === 0;
          if (fires) firingExpected += 1;
          const rule = await api<{ id: string }>(`/projects/${projectId}/alerts`, {
            name: `${metric} ${r}`,
            log_stream_id: streamId,
            metric,
            filters: r % 2 === 1 ? [{ type: "text", column_id: "name", operator: "eq", value: "checkout" }] : [],
            window_minutes: WINDOWS[(r + p) % WINDOWS.length],
            comparison: "gt",
            threshold: fires ? -1 : 1e15,
            evaluate_every_minutes: 1,
            channel_ids: [channel.id],
          });
          ruleIds.push(rule.id);
        }
      }

      const linesBefore = logLines().length;
      const cpuStart = cpu();
      const cronStarted = await runCron();
      let cronLine: string | undefined;
      let batches: string[] = [];
      let evaluated = 0;
      let failed = 0;
      for (let waited = 0; waited < 600_000; waited += 250) {
        await sleep(250);
        const lines = logLines().slice(linesBefore);
        cronLine = lines.find((l) => l.includes("evaluation batches"));
        batches = batchLines(lines);
        // Every due rule evaluated (or failed) once: handed-on rules show again in a later batch.
        evaluated = batches.reduce((sum, l) => sum + field(l, /(\d+) due rules/) - field(l, /(\d+) handed on/), 0);
        failed = batches.reduce((sum, l) => sum + field(l, /(\d+) failed/), 0);
        if (cronLine && evaluated >= field(cronLine, /(\d+) due rules/)) break;
      }
      if (!cronLine || evaluated < field(cronLine, /(\d+) due rules/)) throw new Error(`the evaluation did not finish in 10 minutes (${evaluated} rules evaluated)`);
      const evaluationMs = Date.now() - cronStarted;
      for (let waited = 0; waited < 120_000 && arrivals.size < firingExpected; waited += 250) await sleep(250);
      await sleep(2_000);
      const runCpu = cpu() - cpuStart;
      const due = field(cronLine, /(\d+) due rules/);
      const messages = field(cronLine, /in (\d+) evaluation batches/);
      const reads = batches.reduce((sum, l) => sum + field(l, /(\d+) metrics reads/), 0);
      const tripsPerBatch = batches.map((l) => field(l, /(\d+) D1 round trips/));
      const trips = tripsPerBatch.reduce((a, b) => a + b, 0);
      const batchMs = batches.map((l) => field(l, /round trips, (\d+) ms/));
      const latencies = [...arrivals.values()].map((t) => t - cronStarted);
      const cpuPerRuleMs = ((runCpu - baselineCpu) * 1000) / due;
      const table = markdownTable(
        ["figure", "value"],
        [
          ["due rules / projects", `${count(due)} / ${count(projectsWanted)}`],
          ["scan admission", admission ? "on (defaults: 2 at once, 10% of the time)" : "lifted"],
          ["evaluation batches (queue messages; one per consumer invocation)", `${count(messages)} sent, ${count(batches.length)} run (handed-on parts included)`],
          ["metrics reads (at most one per rule)", `${count(reads)} (${(reads / due).toFixed(2)} per rule)`],
          ["D1 round trips per consumer invocation: max (limit 1,000) / total", `${count(Math.max(...tripsPerBatch))} / ${count(trips)} (${(trips / reads).toFixed(1)} per read)`],
          ["rules failed (their last_error: e.g. a 429 of the scan admission)", count(failed)],
          ["batch wall time: max / sum", `${ms(Math.max(...batchMs))} / ${ms(batchMs.reduce((a, b) => a + b, 0))}`],
          ["cron run with the rules: workerd CPU (all threads)", ms(runCpu * 1000)],
          ["baseline cron run, no rule due: workerd CPU / wall", `${ms(baselineCpu * 1000)} / ${ms(baselineWall)}`],
          ["CPU per rule ((with - baseline) / rules; includes the deliveries' consumer)", ms(cpuPerRuleMs)],
          ["alert.firing expected / received", `${count(firingExpected)} / ${count(arrivals.size)}`],
          ["cron call to delivery: p50 / p95 / max", latencies.length > 0 ? `${ms(percentile(latencies, 50))} / ${ms(percentile(latencies, 95))} / ${ms(Math.max(...latencies))}` : "none"],
          ["cron call to last rule evaluated", ms(evaluationMs)],
        ],
        ["l", "r"],
      );
      finishReport("alerts", `## Alerts: evaluation of due rules and delivery\n\n${table}\n\n${runConditions(startLoad)}\n`, options.quick);
    });
  } finally {
    receiver.close();
    discardCopy(db);
  }
}
