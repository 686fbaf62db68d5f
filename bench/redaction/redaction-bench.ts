/**
 * The redaction benchmark (issue 33, point 5). Two figures:
 *
 * 1. Ingest with every detector on against ingest with redaction off, same server, same run,
 *    realistic data: the ingest benchmark's payload (the search benchmark's content, about 1 MB of
 *    JSON per request of 100 traces × 10 spans) with personal data planted in one record in five
 *    (an e-mail, a phone, a card, an IBAN, a key, in llm messages and outputs). Phases alternate
 *    off, on, off, on (each `requests` timed requests, one client) so that the database growing
 *    under them weighs on both alike; the ratio is on/off of the summed spans per second.
 *    Target: at least 0.85×.
 * 2. The CPU cost of masking, in this Node process (V8, as workerd): a 1 MB text of each
 *    adversarial shape (long runs that start a match and never finish one) through every detector
 *    and a nested custom pattern `(a+)+b`, and the realistic records' texts per record.
 */
import os from "node:os";
import { performance } from "node:perf_hooks";
import type { IngestTrace } from "../../src/ingest/ingest-schemas";
import { customMatcher } from "../../src/redaction/custom-patterns";
import { DETECTORS } from "../../src/redaction/detectors";
import type { Matcher } from "../../src/redaction/mask-text";
import { maskString } from "../../src/redaction/mask-values";
import { discardCopy, emptyDatabase } from "../dataset/dataset-cache";
import { sessionInput } from "../dataset/synthetic-traces";
import { workload } from "../ingest/ingest-bench";
import { expectStatus, timedJson } from "../lib/http-timing";
import { markdownTable, runConditions } from "../lib/markdown-report";
import { finishReport } from "../lib/finish-report";
import { SERVICE_CONFIG } from "../lib/paths";
import { count, ms, ratio } from "../lib/stats";
import { withDevServer } from "../lib/wrangler-dev";
import { BENCH_VARS } from "../search/search-bench";

export interface RedactionBenchOptions {
  quick: boolean;
}

const SEED = 5;
const SPANS_PER_REQUEST = 1000;
const PLANTED = [
  "jane.doe@example.com",
  "+44 20 7946 0958",
  "4111 1111 1111 1111",
  "DE89 3704 0044 0532 0130 00",
  "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
];

/** Plants a value in one record in five: in the content the record already has. */
function plant(traces: IngestTrace[]): IngestTrace[] {
  let n = 0;
  const visit = (record: { input?: unknown; output?: unknown; spans?: unknown[] }) => {
    n++;
    if (n % 5 === 0) {
      const value = PLANTED[(n / 5) % PLANTED.length]!;
      if (typeof record.input === "string") record.input = `${record.input} contact: ${value}`;
      else if (Array.isArray(record.input) && record.input.length > 0) {
        const last = record.input[record.input.length - 1] as { content?: unknown };
        if (typeof last.content === "string") last.content = `${last.content} my details: ${value}`;
      }
    }
    for (const child of (record.spans ?? []) as (typeof record)[]) visit(child);
  };
  for (const trace of traces) visit(trace as never);
  return traces;
}

interface Phase {
  label: string;
  spans: number;
  seconds: number;
}

async function ingestPhases(requests: number): Promise<Phase[]> {
  const order: ("off" | "on")[] = ["off", "on", "off", "on"];
  const loads = order.map((_, i) => workload(requests + 1, i * (requests + 1) * 100, "realistic"));
  for (const load of loads) for (const traces of load.requests) plant(traces);
  const db = await emptyDatabase("redaction", SEED);
  try {
    const { tenant } = db.manifest;
    const headers = { "Service-API-Key": tenant.apiKey };
    return await withDevServer({ name: "redaction", config: SERVICE_CONFIG, persistTo: db.persistDir, vars: BENCH_VARS, readyPath: "/healthcheck" }, async (server) => {
      const phases: Phase[] = [];
      const policyUrl = `${server.baseUrl}/v2/projects/${tenant.projectId}/redaction`;
      for (const [i, mode] of order.entries()) {
        const put = await fetch(policyUrl, { method: "PUT", headers: { ...headers, "content-type": "application/json" }, body: JSON.stringify({ enabled: mode === "on" }) });
        if (put.status !== 200) throw new Error(`PUT redaction: ${put.status} ${await put.text()}`);
        const load = loads[i]!;
        for (const session of load.sessions) {
          expectStatus(
            await timedJson(`${server.baseUrl}/v2/projects/${tenant.projectId}/sessions`, { body: { log_stream_id: tenant.logStreamId, ...sessionInput(SEED, session) }, headers }),
            200,
            "create session",
          );
        }
        const url = `${server.baseUrl}/v2/projects/${tenant.projectId}/traces`;
        const [warmup, ...timed] = load.requests.map((traces) => ({ log_stream_id: tenant.logStreamId, traces }));
        expectStatus(await timedJson(url, { body: warmup, headers }), 200, "warm-up");
        const started = performance.now();
        for (const body of timed) expectStatus(await timedJson(url, { body, headers }), 200, "ingest");
        const seconds = (performance.now() - started) / 1000;
        phases.push({ label: mode, spans: timed.length * SPANS_PER_REQUEST, seconds });
        console.log(`  redaction ${mode} (phase ${i + 1}): ${count((timed.length * SPANS_PER_REQUEST) / seconds)} spans/s`);
      }
      // The last phase ran with every detector: check that it masked.
      const search = await timedJson<{ records: unknown[] }>(`${server.baseUrl}/v2/projects/${tenant.projectId}/spans/search`, {
        body: { log_stream_id: tenant.logStreamId, filters: [{ column_id: "input", operator: "contains", value: "[REDACTED:", type: "text" }], limit: 1 },
        headers,
      });
      if (search.body.records.length === 0) throw new Error("no masked record found after the redaction-on phases");
      return phases;
    });
  } finally {
    discardCopy(db);
  }
}

/** CPU milliseconds (median of `runs`) to mask `text` with `matchers`. */
function maskMs(text: string, matchers: Matcher[], runs: number): number {
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    maskString(text, matchers);
    samples.push(performance.now() - started);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)]!;
}

const MB = 1_000_000;
const ADVERSARIAL: [string, () => string][] = [
  ["digits with single spaces (card, phone, SSN candidates)", () => "1 ".repeat(MB / 2)],
  ["one digit run", () => "4".repeat(MB)],
  ["local-part characters, no domain (`aaaa…@`)", () => `${"a".repeat(MB - 1)}@`],
  ["`a@` repeated (e-mail starts)", () => "a@".repeat(MB / 2)],
  ["colons and hex (IPv6 candidates)", () => "a:".repeat(MB / 2)],
  ["`eyJ` and base64url, no dots (JWT starts)", () => `eyJ${"A".repeat(MB - 3)}`],
  ["`x://` then userinfo, no `@` (URL credentials)", () => `x://${"u:".repeat(MB / 2 - 2)}`],
  ["`sk-` runs (API key starts)", () => "sk-a".repeat(MB / 4)],
  ["`DE89 ` repeated (grouped IBAN starts)", () => "DE89 ".repeat(MB / 5)],
  ["`0 ` repeated (national phone and card starts)", () => "0 ".repeat(MB / 2)],
  ["`+1 ` repeated (E.164 starts)", () => "+1 ".repeat(Math.floor(MB / 3))],
  ["realistic prose with a planted value every 100 sentences", () => Array.from({ length: MB / 40 }, (_, i) => (i % 100 === 0 ? `call ${PLANTED[(i / 100) % 5]} ` : "the quick brown fox jumps over a dog. ")).join("")],
];

function cpuFigures(quick: boolean): string[][] {
  const nested = customMatcher({ name: "nested", pattern: "(a+)+b" });
  const all = [...DETECTORS, nested];
  const runs = quick ? 1 : 3;
  return ADVERSARIAL.map(([label, make]) => {
    const text = make();
    return [label, count(text.length), ms(maskMs(text, [...DETECTORS], runs)), ms(maskMs(text, [nested], runs)), ms(maskMs(text, all, runs))];
  });
}

function perRecordFigure(): { records: number; msPerRecord: number; maxMs: number } {
  const load = workload(5, 0, "realistic");
  const texts: string[] = [];
  const visit = (r: { input?: unknown; output?: unknown; spans?: unknown[] }) => {
    for (const v of [r.input, r.output]) if (v !== undefined && v !== null) texts.push(typeof v === "string" ? v : JSON.stringify(v));
    for (const child of (r.spans ?? []) as (typeof r)[]) visit(child);
  };
  for (const traces of load.requests) for (const t of plant(traces)) visit(t as never);
  let max = 0;
  const started = performance.now();
  for (const text of texts) {
    const one = performance.now();
    maskString(text, DETECTORS);
    max = Math.max(max, performance.now() - one);
  }
  return { records: texts.length / 2, msPerRecord: (performance.now() - started) / (texts.length / 2), maxMs: max };
}

export async function runRedactionBench(options: RedactionBenchOptions): Promise<string> {
  const startLoad = os.loadavg();
  const requests = options.quick ? 4 : 10;
  console.log(`\nredaction: ${requests} timed requests of ${SPANS_PER_REQUEST} spans per phase, phases off, on, off, on`);
  const phases = await ingestPhases(requests);
  const rate = (label: string) => {
    const of = phases.filter((p) => p.label === label);
    return of.reduce((s, p) => s + p.spans, 0) / of.reduce((s, p) => s + p.seconds, 0);
  };
  const versus = rate("on") / rate("off");
  const cpu = cpuFigures(options.quick);
  const perRecord = perRecordFigure();
  const markdown = [
    "# Redaction benchmark",
    "",
    runConditions(startLoad),
    `- ingest: ${requests} timed requests (after a warm-up) of 100 traces × 10 spans per phase, one client, realistic payload with a planted value in one record in five; phases off, on, off, on on one server`,
    "",
    markdownTable(
      ["phase", "spans", "seconds", "spans/s"],
      phases.map((p, i) => [`${i + 1}: redaction ${p.label}`, count(p.spans), p.seconds.toFixed(2), count(p.spans / p.seconds)]),
      ["l", "r", "r", "r"],
    ),
    "",
    `Every detector on: **${ratio(versus)}** of redaction off (target ≥ 0.85×): ${versus >= 0.85 ? "PASS" : "FAIL"}.`,
    "",
    "## CPU of masking one 1 MB text (median, this Node process)",
    "",
    markdownTable(["text", "characters", "every detector (ms)", "custom `(a+)+b` (ms)", "both (ms)"], cpu, ["l", "r", "r", "r", "r"]),
    "",
    `Realistic records (the payload above, input and output): ${perRecord.records} records, ${ms(perRecord.msPerRecord)} ms per record with every detector, slowest text ${ms(perRecord.maxMs)} ms.`,
    "",
  ].join("\n");
  return finishReport("redaction", markdown, options.quick);
}
