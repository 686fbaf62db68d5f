/**
 * A small, fast probe of the ingest path (not a benchmark of record): one client sends N
 * realistic requests (100 traces × 10 spans) one after another into a new database under
 * `wrangler dev`, and prints per request its latency and the D1 round trips its Server-Timing
 * names. Used to compare two commits request by request (run it in each tree), e.g.
 *   PROBE_REQUESTS=12 PROBE_VARS='{"UPKEEP_AFTER_WRITES":"false"}' npx tsx bench/ingest/ingest-probe.ts
 * PROBE_PAUSE_MS waits between requests (what an idle gap gives the work behind the answers).
 */
import { performance } from "node:perf_hooks";
import { discardCopy, emptyDatabase } from "../dataset/dataset-cache";
import { sessionInput } from "../dataset/synthetic-traces";
import { expectStatus, timedJson } from "../lib/http-timing";
import { SERVICE_CONFIG } from "../lib/paths";
import { sleep, withDevServer } from "../lib/wrangler-dev";
import { BENCH_VARS } from "../search/search-bench";
import { type Payload, workload } from "./ingest-bench";

const requests = Number(process.env.PROBE_REQUESTS ?? 12);
const pauseMs = Number(process.env.PROBE_PAUSE_MS ?? 0);
const payload = (process.env.PROBE_PAYLOAD ?? "realistic") as Payload;
const vars = process.env.PROBE_VARS ? (JSON.parse(process.env.PROBE_VARS) as Record<string, string>) : {};

const db = await emptyDatabase(`probe-${payload}`, 5);
try {
  const load = workload(requests + 1, 0, payload);
  const { tenant } = db.manifest;
  const headers = { "Service-API-Key": tenant.apiKey };
  await withDevServer({ name: "probe", config: SERVICE_CONFIG, persistTo: db.persistDir, vars: { ...BENCH_VARS, ...vars }, readyPath: "/healthcheck" }, async (server) => {
    const sessionMs: number[] = [];
    const sessionTrips: (number | undefined)[] = [];
    for (const session of load.sessions) {
      const r = expectStatus(await timedJson(`${server.baseUrl}/v2/projects/${tenant.projectId}/sessions`, { body: { log_stream_id: tenant.logStreamId, ...sessionInput(5, session) }, headers }), 200, "session");
      sessionMs.push(r.ms);
      sessionTrips.push(r.roundTrips);
    }
    const url = `${server.baseUrl}/v2/projects/${tenant.projectId}/traces`;
    const [warmup, ...timed] = load.requests.map((traces) => ({ log_stream_id: tenant.logStreamId, traces }));
    expectStatus(await timedJson(url, { body: warmup, headers }), 200, "warm-up");
    const lines: string[] = [];
    const ms: number[] = [];
    const started = performance.now();
    for (const body of timed) {
      const r = expectStatus(await timedJson(url, { body, headers }), 200, "ingest");
      ms.push(r.ms);
      lines.push(`${Math.round(r.ms)}ms/${r.roundTrips ?? "?"}rt`);
      if (pauseMs > 0) await sleep(pauseMs);
    }
    const seconds = (performance.now() - started) / 1000 - (pauseMs * timed.length) / 1000;
    const sorted = [...ms].sort((a, b) => a - b);
    console.log(`sessions: mean ${Math.round(sessionMs.reduce((a, b) => a + b, 0) / sessionMs.length)} ms, round trips ${[...new Set(sessionTrips)].join("/")}`);
    console.log(`requests: ${lines.join(" ")}`);
    console.log(`PROBE ${payload} ${JSON.stringify(vars)} pause ${pauseMs}: ${Math.round((timed.length * 1000) / seconds)} spans/s, p50 ${Math.round(sorted[Math.floor(sorted.length / 2)]!)} ms, mean ${Math.round(ms.reduce((a, b) => a + b, 0) / ms.length)} ms`);
  });
} finally {
  discardCopy(db);
}
process.exit(0);
