/**
 * The load benchmark (issue 9): `npm run bench -- load`. A bounded loopback run of a few minutes
 * against `wrangler dev` of the service, with two organizations in one database:
 *
 * - **well-behaved** (20,000 records): three clients with a little think time, each a steady mix
 *   of ingestion, indexed searches, an occasional scan search, lookups by id, dry runs and
 *   deletion jobs;
 * - **abusive** (100,000 records): scan-class searches from four clients (substrings, unindexed
 *   sorts, deep offsets), password guessing from two (real and invented emails, one client IP),
 *   and a request flood from one, each client 25 requests per second whatever the answers
 *   (Retry-After ignored).
 *
 * The well-behaved organization runs alone and with the abusive one in alternating windows (the
 * machine is shared: alternating gives both conditions the same background load), then the same
 * on a server with the scan and password limits off, to show what they are worth. Reported:
 * p50/p95 per operation of the well-behaved organization alone and abused, the 429s served (by
 * limit), the 5xx (target 0), and a consistency check afterwards: every acknowledged record is
 * present exactly once unless a deletion job erased it, and nothing of one organization is
 * visible to the other. Target: the well-behaved organization's search p95 at most 2× its solo
 * p95 while the abusive one runs.
 */
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { benchTenantStatements } from "../dataset/bench-tenant";
import { applyMigrations, sqliteFileOf } from "../dataset/dataset-cache";
import { checkpoint, writeRun } from "../dataset/write-run";
import { markdownTable, runConditions } from "../lib/markdown-report";
import { finishReport } from "../lib/finish-report";
import { SCRATCH_DIR, SERVICE_CONFIG } from "../lib/paths";
import { SCAN_ADMISSION_OFF } from "../lib/scan-admission-off";
import { SeededRandom } from "../lib/seeded-random";
import { ms, percentile, ratio } from "../lib/stats";
import { withDevServer } from "../lib/wrangler-dev";
import { BENCH_VARS } from "../search/search-bench";
import { type ConsistencyReport, checkConsistency } from "./load-consistency";
import { ABUSIVE_INTERVAL_MS, RECORDS_PER_TRACE, Tally, flooder, ingest, orgOf, passwordGuesser, scanAbuser, wellBehavedClient, type Org } from "./load-traffic";

export interface LoadBenchOptions {
  quick: boolean;
  seed: number;
  /** Seconds of each phase (default 75; quick 10). */
  seconds?: number;
  /** Loopback port of the server (default: one the kernel hands out). */
  port?: number;
}

const GOOD_TRACES = 5_000;
const BAD_TRACES = 25_000;
/** Erasure groups of the setup traces: a deletion job erases one (100 traces of the well-behaved org). */
const GROUPS = 50;
const setupGroup = (index: number) => `group-${index % GROUPS}`;
const GOOD_CLIENTS = 3;
const THINK_MS = 50;
interface Abuse {
  scanners: number;
  guessers: number;
  flooders: number;
}

const ABUSIVE: Abuse = { scanners: 4, guessers: 2, flooders: 1 };

/** Each kind of abuse on its own, to tell what the slowdown of the well-behaved organization comes from. */
const BREAKDOWN: [string, Abuse][] = [
  ["scans only", { scanners: ABUSIVE.scanners, guessers: 0, flooders: 0 }],
  ["password guessing only", { scanners: 0, guessers: ABUSIVE.guessers, flooders: 0 }],
  ["flood only", { scanners: 0, guessers: 0, flooders: ABUSIVE.flooders }],
];
/** Length of one window of the alternation (alone, abused, alone, ...). */
const WINDOW_SECONDS = 15;

interface Phase {
  name: string;
  seconds: number;
  good: Tally;
  bad: Tally;
}

async function twoOrganizations(seed: number) {
  const persistDir = path.join(SCRATCH_DIR, `load-${process.pid}-${Date.now()}`);
  applyMigrations(persistDir);
  const createdAt = Date.now() * 1000 - 3_600_000_000;
  const good = await benchTenantStatements(new SeededRandom(seed, 0x600d), createdAt);
  const bad = await benchTenantStatements(new SeededRandom(seed, 0xbad), createdAt);
  const file = sqliteFileOf(persistDir);
  await writeRun(file, [], [...good.statements, ...bad.statements]);
  await checkpoint(file);
  return { persistDir, good: good.tenant, bad: bad.tenant };
}

/**
 * A window of `seconds` in which the well-behaved organization runs, and the abusive one too if
 * given; what both get is added to `into`.
 */
async function runWindow(into: { good: Tally; bad: Tally }, seconds: number, good: Org, bad: Org | undefined, r: SeededRandom, nextTrace: () => number, abuse: Abuse): Promise<void> {
  const window = { until: performance.now() + seconds * 1000 };
  const clients: Promise<void>[] = [];
  const fork = () => new SeededRandom(r.int(0, 2 ** 30), r.int(0, 2 ** 30));
  for (let i = 0; i < GOOD_CLIENTS; i++) clients.push(wellBehavedClient(good, fork(), window, into.good, { thinkMs: THINK_MS, nextTrace, groups: GROUPS }));
  if (bad) {
    for (let i = 0; i < abuse.scanners; i++) clients.push(scanAbuser(bad, fork(), window, into.bad));
    const victims = [good.tenant.email, bad.tenant.email];
    for (let i = 0; i < abuse.guessers; i++) clients.push(passwordGuesser(bad, victims, fork(), window, into.bad));
    for (let i = 0; i < abuse.flooders; i++) clients.push(flooder(bad, window, into.bad));
  }
  await Promise.all(clients);
}

/**
 * The two conditions, alone and abused, in alternating windows of WINDOW_SECONDS until each has
 * run `seconds`: the machine is shared, and its load drifts over minutes; alternating gives both
 * conditions the same drift, so that their ratio is the abusive organization's doing.
 */
async function runAlternating(label: string, seconds: number, good: Org, bad: Org, r: SeededRandom, nextTrace: () => number, abuse: Abuse = ABUSIVE): Promise<{ solo: Phase; abused: Phase }> {
  const solo: Phase = { name: `${label}: alone`, seconds: 0, good: new Tally(), bad: new Tally() };
  const abused: Phase = { name: `${label}: abused`, seconds: 0, good: new Tally(), bad: new Tally() };
  while (solo.seconds < seconds) {
    const length = Math.min(WINDOW_SECONDS, seconds - solo.seconds);
    await runWindow(solo, length, good, undefined, r, nextTrace, abuse);
    solo.seconds += length;
    await runWindow(abused, length, good, bad, r, nextTrace, abuse);
    abused.seconds += length;
  }
  return { solo, abused };
}

function statusSummary(tally: Tally, operation: string): string {
  const byStatus = tally.statuses.get(operation);
  if (!byStatus) return "";
  return [...byStatus]
    .sort(([a], [b]) => a - b)
    .map(([status, n]) => `${n}× ${status}`)
    .join(", ");
}

/** The vars that switch the abuse limits off, for the comparison phase (the request rate stays). */
const LIMITS_OFF = {
  ...SCAN_ADMISSION_OFF,
  PASSWORD_FREE_FAILURES_PER_EMAIL: "1000000",
  PASSWORD_FREE_FAILURES_PER_IP: "1000000",
};

const OPERATIONS = ["search (indexed)", "search (scan)", "ingest", "lookup", "dry run", "deletion job"];

interface Comparison {
  solo: Phase;
  abused: Phase;
}

function latencyRows({ solo, abused }: Comparison): string[][] {
  return OPERATIONS.map((operation) => {
    const p = (phase: Phase, q: number) => percentile(phase.good.latencies.get(operation) ?? [], q);
    return [
      operation,
      `${solo.good.latencies.get(operation)?.length ?? 0} / ${abused.good.latencies.get(operation)?.length ?? 0}`,
      ms(p(solo, 50)),
      ms(p(solo, 95)),
      ms(p(abused, 50)),
      ms(p(abused, 95)),
      ratio(p(abused, 95) / p(solo, 95)),
      statusSummary(abused.good, operation),
    ];
  });
}

function abusiveRows(phase: Phase): string[][] {
  return ["abusive scan", "password guess", "flood"].map((operation) => [
    operation,
    String(phase.bad.count(() => true, operation)),
    String(phase.bad.count((s) => s === 429, operation)),
    statusSummary(phase.bad, operation),
  ]);
}

function scanShare(phase: Phase): string {
  const served = phase.bad.latencies.get("abusive scan") ?? [];
  const seconds = served.reduce((sum, t) => sum + t, 0) / 1000;
  return `${served.length} scans served, ${seconds.toFixed(1)} s of answers in a ${phase.seconds} s phase (${((100 * seconds) / phase.seconds).toFixed(0)}%; client-side times, an upper bound of the database time they took)`;
}

const searchP95 = (phase: Phase) => percentile(phase.good.latencies.get("search (indexed)") ?? [], 95);

function comparisonTable({ solo, abused }: Comparison): string {
  const headers = ["operation", "n alone / abused", "p50 alone (ms)", "p95 alone (ms)", "p50 abused (ms)", "p95 abused (ms)", "p95 abused / alone", "statuses while abused"];
  return markdownTable(headers, latencyRows({ solo, abused }), ["l", "r", "r", "r", "r", "r", "r", "l"]);
}

function breakdownRows(breakdown: [string, Comparison][]): string[][] {
  return breakdown.map(([label, { solo, abused }]) => [
    label,
    ms(percentile(solo.good.latencies.get("search (indexed)") ?? [], 50)),
    ms(searchP95(solo)),
    ms(percentile(abused.good.latencies.get("search (indexed)") ?? [], 50)),
    ms(searchP95(abused)),
    ratio(searchP95(abused) / searchP95(solo)),
    `${abused.bad.count(() => true)} (${abused.bad.count((s) => s === 429)} 429s)`,
  ]);
}

function report(options: LoadBenchOptions, limitsOn: Comparison, limitsOff: Comparison, breakdown: [string, Comparison][], consistency: ConsistencyReport, startLoad: number[], setup: { goodRecords: number; badRecords: number }): string {
  const searchRatio = searchP95(limitsOn.abused) / searchP95(limitsOn.solo);
  const offRatio = searchP95(limitsOff.abused) / searchP95(limitsOff.solo);
  const phases = [limitsOn.solo, limitsOn.abused, limitsOff.solo, limitsOff.abused, ...breakdown.flatMap(([, c]) => [c.solo, c.abused])];
  const fiveXX = phases.reduce((n, phase) => n + phase.good.count((s) => s >= 500) + phase.bad.count((s) => s >= 500), 0);
  return [
    "# Load benchmark",
    "",
    `\`npm run bench -- load\`${options.quick ? " --quick (not figures)" : ""}: two organizations in one database under \`wrangler dev\`; well-behaved ${setup.goodRecords.toLocaleString("en-US")} records, abusive ${setup.badRecords.toLocaleString("en-US")}. The well-behaved organization (${GOOD_CLIENTS} clients, ${THINK_MS} ms think time) runs alone and with the abusive one (${ABUSIVE.scanners} scan clients, ${ABUSIVE.guessers} password guessers and ${ABUSIVE.flooders} flooder, each sending ${1000 / ABUSIVE_INTERVAL_MS} requests per second whatever the answers, Retry-After ignored) in alternating windows of ${WINDOW_SECONDS} s, ${limitsOn.solo.seconds} s of each; then, for comparison, the same on a server with the scan and password limits switched off (${limitsOff.solo.seconds} s of each). Method: docs/benchmarks.md#load.`,
    "",
    "## The well-behaved organization, alone and while the abusive one runs",
    "",
    comparisonTable(limitsOn),
    "",
    `Target: indexed search p95 while abused at most 2× alone: **${ratio(searchRatio)}** (${searchRatio <= 2 ? "met" : "not met"}).`,
    "",
    "## What the abusive organization got",
    "",
    markdownTable(["operation", "requests", "429s", "statuses"], abusiveRows(limitsOn.abused), ["l", "r", "r", "l"]),
    "",
    `Scans: ${scanShare(limitsOn.abused)}.`,
    "",
    `5xx answers over every window and both organizations: **${fiveXX}** (target 0).`,
    "",
    "## Each kind of abuse on its own (limits on)",
    "",
    `${breakdown[0]?.[1].solo.seconds ?? 0} s of each condition, alternating as above; indexed searches of the well-behaved organization.`,
    "",
    markdownTable(["abuse", "p50 alone (ms)", "p95 alone (ms)", "p50 abused (ms)", "p95 abused (ms)", "p95 abused / alone", "abusive requests"], breakdownRows(breakdown), ["l", "r", "r", "r", "r", "r", "r"]),
    "",
    "## The same abuse with the scan and password limits off",
    "",
    comparisonTable(limitsOff),
    "",
    `Indexed search p95 abused / alone: **${ratio(offRatio)}**. Scans: ${scanShare(limitsOff.abused)}; password guesses answered 401 (each a PBKDF2): ${limitsOff.abused.bad.count((s) => s === 401, "password guess")} of ${limitsOff.abused.bad.count(() => true, "password guess")}.`,
    "",
    "## Consistency afterwards",
    "",
    ...consistency.lines.map((line) => `- ${line}`),
    "",
    `Result: **${consistency.ok ? "consistent" : "NOT consistent"}**.`,
    "",
    "## Conditions",
    "",
    runConditions(startLoad),
    "",
  ].join("\n");
}

export async function runLoadBench(options: LoadBenchOptions): Promise<void> {
  const startLoad = os.loadavg();
  const seconds = options.seconds ?? (options.quick ? 10 : 75);
  console.log(`load: two organizations, phases of ${seconds} s`);
  const { persistDir, good: goodTenant, bad: badTenant } = await twoOrganizations(options.seed);
  const goodTraces = options.quick ? GOOD_TRACES / 10 : GOOD_TRACES;
  const badTraces = options.quick ? BAD_TRACES / 10 : BAD_TRACES;
  let next = 1_000_000;
  const nextTrace = () => (next += 10) - 10;
  const server = { name: "load", config: SERVICE_CONFIG, persistTo: persistDir, readyPath: "/healthcheck", port: options.port };
  const measured = await withDevServer({ ...server, vars: BENCH_VARS }, async ({ baseUrl }) => {
    const good = orgOf(goodTenant, baseUrl);
    const bad = orgOf(badTenant, baseUrl);
    const started = performance.now();
    await Promise.all([
      ingest(good, new SeededRandom(options.seed, 1), 0, goodTraces, 100, setupGroup),
      ingest(bad, new SeededRandom(options.seed, 2), 0, badTraces / 2, 100, setupGroup),
      ingest(bad, new SeededRandom(options.seed, 3), badTraces / 2, badTraces / 2, 100, setupGroup),
    ]);
    console.log(`  setup: ${(goodTraces + badTraces) * RECORDS_PER_TRACE} records in ${((performance.now() - started) / 1000).toFixed(0)} s`);
    const { solo, abused } = await runAlternating("limits on", seconds, good, bad, new SeededRandom(options.seed, 7), nextTrace);
    console.log(`  limits on: ${solo.good.count(() => true)} requests alone, ${abused.good.count(() => true)} abused (and ${abused.bad.count(() => true)} of the abusive organization)`);
    const consistency = await checkConsistency(good, bad);
    console.log(`  consistency: ${consistency.ok ? "ok" : "NOT ok"}`);
    const breakdown: [string, Comparison][] = [];
    for (const [label, abuse] of BREAKDOWN) {
      breakdown.push([label, await runAlternating(label, options.quick ? seconds : 2 * WINDOW_SECONDS, good, bad, new SeededRandom(options.seed, 9, breakdown.length), nextTrace, abuse)]);
      console.log(`  ${label}: done`);
    }
    return { good, bad, limitsOn: { solo, abused }, consistency, breakdown };
  });
  // The same abuse on a server with the scan and password limits off: what they are worth.
  const limitsOff = await withDevServer({ ...server, vars: { ...BENCH_VARS, ...LIMITS_OFF } }, async ({ baseUrl }) => {
    const good = { ...measured.good, baseUrl };
    const bad = { ...measured.bad, baseUrl };
    const phases = await runAlternating("limits off", Math.max(WINDOW_SECONDS, Math.round((seconds * 0.6) / WINDOW_SECONDS) * WINDOW_SECONDS), good, bad, new SeededRandom(options.seed, 8), nextTrace);
    console.log(`  limits off: ${phases.solo.good.count(() => true)} requests alone, ${phases.abused.good.count(() => true)} abused (and ${phases.abused.bad.count(() => true)} of the abusive organization)`);
    return phases;
  });
  const markdown = report(options, measured.limitsOn, limitsOff, measured.breakdown, measured.consistency, startLoad, {
    goodRecords: goodTraces * RECORDS_PER_TRACE,
    badRecords: badTraces * RECORDS_PER_TRACE,
  });
  finishReport("load", markdown, options.quick);
}
