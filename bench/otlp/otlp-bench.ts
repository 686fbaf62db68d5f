/**
 * The OpenTelemetry intake benchmark (issue 12): spans per second through `POST /otel/v1/traces`
 * (OTLP protobuf) against the native ingest route `POST /v2/projects/{pid}/traces` on the same
 * spans, in the same run, on the same `wrangler dev` and database.
 *
 * Workload: the ingestion benchmark's realistic traces (100 traces of 10 spans per request, about
 * 1 MB of JSON natively). The OTLP requests carry the same spans with GenAI / OpenInference
 * attributes (bench/otlp/otel-spans.ts), encoded before the clock starts, each trace's root span
 * included. Both paths store 11 records per trace (the trace and its 10 spans). A third setting
 * sends each request's roots in the next request (children first, as batch exporters do at
 * batch boundaries): the placeholder path. The paths take turns request by request, so that a
 * drift of the machine's load weighs on all of them alike. Target: OTLP at least 0.8 × native.
 */
import os from "node:os";
import { performance } from "node:perf_hooks";
import { fromBinary } from "@bufbuild/protobuf";
import { ExportTraceServiceResponseSchema } from "../../src/otlp/generated/opentelemetry/proto/collector/trace/v1/trace_service_pb";
import { type Dataset, discardCopy, emptyDatabase } from "../dataset/dataset-cache";
import { sessionInput } from "../dataset/synthetic-traces";
import { workload } from "../ingest/ingest-bench";
import { expectStatus, roundTripsOf, timedJson } from "../lib/http-timing";
import { markdownTable, runConditions } from "../lib/markdown-report";
import { finishReport } from "../lib/finish-report";
import { SERVICE_CONFIG } from "../lib/paths";
import { count, median, ms, percentile, ratio } from "../lib/stats";
import { withDevServer } from "../lib/wrangler-dev";
import { BENCH_VARS } from "../search/search-bench";
import { otelSpansOf, protobufExport } from "./otel-spans";

export interface OtlpBenchOptions {
  quick: boolean;
}

const SEED = 7;
const TRACES_PER_REQUEST = 100;
const SPANS_PER_TRACE = 10;

type Path = "native" | "otlp" | "otlp-split";

interface Sample {
  ms: number;
  roundTrips: number | undefined;
}

const LABELS: Record<Path, string> = {
  native: "native: POST /v2/projects/{pid}/traces (JSON)",
  otlp: "OTLP protobuf: POST /otel/v1/traces, whole traces",
  "otlp-split": "OTLP protobuf, children first: each request's roots in the next request (every trace written twice)",
};

async function run(dataset: Dataset, rounds: number, perRound: number): Promise<Record<Path, Sample[]>> {
  const { tenant } = dataset.manifest;
  const requests = rounds * perRound + 1;
  // One workload per path (distinct ids), same generator and sizes.
  const loads = (["native", "otlp", "otlp-split"] as const).map((path, i) => ({ path, load: workload(requests, i * requests * TRACES_PER_REQUEST, "realistic") }));
  const native = loads[0]!.load;
  const nativeBodies = native.requests.map((traces) => ({ log_stream_id: tenant.logStreamId, traces }));
  const otelOf = (traces: (typeof native.requests)[number]) => traces.map((t) => otelSpansOf(t, t.session_id ?? null));
  const otlpBodies = loads[1]!.load.requests.map((traces) => protobufExport(otelOf(traces).flatMap((s) => [...s.children, s.root])));
  const split = loads[2]!.load.requests.map(otelOf);
  const splitBodies = split.map((traces, i) => protobufExport([...traces.flatMap((s) => s.children), ...(i > 0 ? split[i - 1]!.map((s) => s.root) : [])]));

  return withDevServer({ name: "otlp", config: SERVICE_CONFIG, persistTo: dataset.persistDir, vars: BENCH_VARS, readyPath: "/healthcheck" }, async (server) => {
    const apiKey = { "Service-API-Key": tenant.apiKey };
    for (const session of native.sessions) {
      expectStatus(
        await timedJson(`${server.baseUrl}/v2/projects/${tenant.projectId}/sessions`, { body: { log_stream_id: tenant.logStreamId, ...sessionInput(SEED, session) }, headers: apiKey }),
        200,
        "create session",
      );
    }
    const nativeUrl = `${server.baseUrl}/v2/projects/${tenant.projectId}/traces`;
    const otlpUrl = `${server.baseUrl}/otel/v1/traces`;
    const otlpHeaders = (logstream: string) => ({
      "content-type": "application/x-protobuf",
      Authorization: `Bearer ${tenant.apiKey}`,
      project: tenant.projectId,
      logstream,
    });
    const sendNative = async (i: number): Promise<Sample> => {
      const response = expectStatus(await timedJson<{ spans_count: number }>(nativeUrl, { body: nativeBodies[i], headers: apiKey }), 200, "native ingest");
      if (response.body.spans_count !== TRACES_PER_REQUEST * SPANS_PER_TRACE) throw new Error(`native ingest wrote ${response.body.spans_count} spans`);
      return { ms: response.ms, roundTrips: response.roundTrips };
    };
    const sendOtlp = async (body: Uint8Array, logstream: string): Promise<Sample> => {
      const started = performance.now();
      const response = await fetch(otlpUrl, { method: "POST", headers: otlpHeaders(logstream), body, signal: AbortSignal.timeout(120_000) });
      const bytes = new Uint8Array(await response.arrayBuffer());
      const elapsed = performance.now() - started;
      if (response.status !== 200) throw new Error(`OTLP export: HTTP ${response.status}: ${new TextDecoder().decode(bytes).slice(0, 500)}`);
      const answer = fromBinary(ExportTraceServiceResponseSchema, bytes);
      if (answer.partialSuccess && answer.partialSuccess.rejectedSpans > 0n) throw new Error(`OTLP export rejected spans: ${answer.partialSuccess.errorMessage}`);
      return { ms: elapsed, roundTrips: roundTripsOf(response.headers) };
    };

    // Warm-up (not timed): compiles, caches, creates the OTLP log streams.
    await sendNative(0);
    await sendOtlp(otlpBodies[0]!, "otlp-bench");
    await sendOtlp(splitBodies[0]!, "otlp-bench-split");

    const samples: Record<Path, Sample[]> = { native: [], otlp: [], "otlp-split": [] };
    for (let round = 0; round < rounds; round += 1) {
      for (let j = 0; j < perRound; j += 1) {
        const i = 1 + round * perRound + j;
        samples.native.push(await sendNative(i));
      }
      for (let j = 0; j < perRound; j += 1) {
        const i = 1 + round * perRound + j;
        samples.otlp.push(await sendOtlp(otlpBodies[i]!, "otlp-bench"));
      }
      for (let j = 0; j < perRound; j += 1) {
        const i = 1 + round * perRound + j;
        samples["otlp-split"].push(await sendOtlp(splitBodies[i]!, "otlp-bench-split"));
      }
      if ((round + 1) % 5 === 0) console.log(`  round ${round + 1}/${rounds}: native ${ms(median(samples.native.map((s) => s.ms)))} ms, OTLP ${ms(median(samples.otlp.map((s) => s.ms)))} ms, split ${ms(median(samples["otlp-split"].map((s) => s.ms)))} ms per request (medians so far)`);
    }
    return samples;
  });
}

export async function runOtlpBench(options: OtlpBenchOptions): Promise<string> {
  const startLoad = os.loadavg();
  // One request per path per round: the paths alternate request by request, so that the load
  // of a shared machine, which drifts over seconds, weighs on each path alike.
  const rounds = options.quick ? 2 : 30;
  const perRound = 1;
  console.log(`\notlp: ${rounds} rounds × ${perRound} requests of ${TRACES_PER_REQUEST} traces × ${SPANS_PER_TRACE} spans per path`);
  const db = await emptyDatabase("otlp", SEED);
  let samples: Record<Path, Sample[]>;
  try {
    samples = await run(db, rounds, perRound);
  } finally {
    discardCopy(db);
  }
  const spansPerRequest = TRACES_PER_REQUEST * SPANS_PER_TRACE;
  const rate = (list: Sample[]) => (list.length * spansPerRequest) / (list.reduce((sum, s) => sum + s.ms, 0) / 1000);
  const nativeRate = rate(samples.native);
  const failures: string[] = [];
  const rows = (Object.keys(LABELS) as Path[]).map((path) => {
    const list = samples[path];
    const r = rate(list);
    const versus = r / nativeRate;
    // The target compares like with like: whole traces, as the native request carries them. The
    // children-first path does more than either (each trace is stored as a placeholder, then
    // completed by its root with its spans' session and completeness): it is reported, not judged.
    const verdict = path !== "otlp" ? "" : versus >= 0.8 ? "PASS" : "FAIL";
    if (verdict === "FAIL") failures.push(`- ${LABELS[path]}: ${ratio(versus)} native (target ≥ 0.8×)`);
    return [
      LABELS[path],
      count(list.length * spansPerRequest),
      count(r),
      ratio(versus),
      `${ms(median(list.map((s) => s.ms)))} / ${ms(percentile(list.map((s) => s.ms), 95))}`,
      [...new Set(list.map((s) => s.roundTrips).filter((n) => n !== undefined))].join("/") || "—",
      verdict,
    ];
  });
  const table = markdownTable(["path", "spans", "spans/s", "vs native", "request p50 / p95 ms", "D1 round trips", "target ≥ 0.8× (whole traces)"], rows, ["l", "r", "r", "r", "r", "r", "l"]);
  const markdown = [
    "# OpenTelemetry intake benchmark",
    "",
    runConditions(startLoad),
    `- ${rounds} rounds of ${perRound} request${perRound === 1 ? "" : "s"} per path, the paths taking turns (one client), after one warm-up request per path; each request ${TRACES_PER_REQUEST} traces × ${SPANS_PER_TRACE} spans (11 records per trace on every path), realistic content (the ingestion benchmark's)`,
    "- spans/s = spans sent / the sum of the request times of that path",
    "",
    table,
    "",
    failures.length === 0 ? "Every target met." : ["Targets missed:", "", ...failures].join("\n"),
    "",
  ].join("\n");
  return finishReport("otlp", markdown, options.quick);
}
