/**
 * The load benchmark (issue 9): `npm run bench -- load`. A bounded loopback run of a few minutes
 * against `wrangler dev` of the service, with two organizations in one database:
 *
 * - **well-behaved** (20,000 records): three clients with a little think time, each a steady mix
 *   of ingestion, indexed searches, an occasional scan search, lookups by id, dry runs and
 *   deletion jobs;
 * - **abusive** (100,000 records): scan-class searches back to back from four clients
 *   (substrings, unindexed sorts, deep offsets), password guessing from two (real and invented
 *   emails, one client IP), and a request flood from one, all ignoring Retry-After.
 *
 * The well-behaved organization runs alone for a phase, then with the abusive one for a phase of
 * the same length. Reported: p50/p95 per operation of the well-behaved organization in both
 * phases, the 429s served (by limit), the 5xx (target 0), and a consistency check afterwards:
 * every acknowledged record is present exactly once unless a deletion job erased it, and nothing
 * of one organization is visible to the other. Target: the well-behaved organization's search
 * p95 at most 2× its solo p95 while the abusive one runs.
 */
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { benchTenantStatements } from "../dataset/bench-tenant";
import { applyMigrations, sqliteFileOf } from "../dataset/dataset-cache";
import { checkpoint, writeRun } from "../dataset/write-run";
import { markdownTable, runConditions, writeResult } from "../lib/markdown-report";
import { SCRATCH_DIR, SERVICE_CONFIG } from "../lib/paths";
import { SeededRandom } from "../lib/seeded-random";
import { ms, percentile, ratio } from "../lib/stats";
import { withDevServer } from "../lib/wrangler-dev";
import { BENCH_VARS } from "../search/search-bench";
import { type ConsistencyReport, checkConsistency } from "./load-consistency";
import { RECORDS_PER_TRACE, Tally, flooder, ingest, orgOf, passwordGuesser, scanAbuser, wellBehavedClient, type Org } from "./load-traffic";

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
const ABUSIVE = { scanners: 4, guessers: 2, flooders: 1 };

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

async function runPhase(name: string, seconds: number, good: Org, bad: Org | undefined, seed: number, nextTrace: () => number): Promise<Phase> {
  const phase: Phase = { name, seconds, good: new Tally(), bad: new Tally() };
  const window = { until: performance.now() + seconds * 1000 };
  const clients: Promise<void>[] = [];
  for (let i = 0; i < GOOD_CLIENTS; i++) {
    clients.push(wellBehavedClient(good, new SeededRandom(seed, 100 + i, name.length), window, phase.good, { thinkMs: THINK_MS, nextTrace, groups: GROUPS }));
  }
  if (bad) {
    for (let i = 0; i < ABUSIVE.scanners; i++) clients.push(scanAbuser(bad, new SeededRandom(seed, 200 + i), window, phase.bad));
    const victims = [good.tenant.email, bad.tenant.email];
    for (let i = 0; i < ABUSIVE.guessers; i++) clients.push(passwordGuesser(bad, victims, new SeededRandom(seed, 300 + i), window, phase.bad));
    for (let i = 0; i < ABUSIVE.flooders; i++) clients.push(flooder(bad, window, phase.bad));
  }
  await Promise.all(clients);
  return phase;
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
  ORG_CONCURRENT_SCANS: "1000",
  ORG_SCAN_TIME_PERCENT: "100",
  PASSWORD_FREE_FAILURES_PER_EMAIL: "1000000",
  PASSWORD_FREE_FAILURES_PER_IP: "1000000",
};

const OPERATIONS = ["search (indexed)", "search (scan)", "ingest", "lookup", "dry run", "deletion job"];

function latencyRows(solo: Phase, abused: Phase, unlimited: Phase | undefined): string[][] {
  return OPERATIONS.map((operation) => {
    const p = (phase: Phase | undefined, q: number) => percentile(phase?.good.latencies.get(operation) ?? [], q);
    return [
      operation,
      String(solo.good.latencies.get(operation)?.length ?? 0),
      ms(p(solo, 50)),
      ms(p(solo, 95)),
      ms(p(abused, 50)),
      ms(p(abused, 95)),
      ratio(p(abused, 95) / p(solo, 95)),
      ...(unlimited ? [ms(p(unlimited, 50)), ms(p(unlimited, 95)), ratio(p(unlimited, 95) / p(solo, 95))] : []),
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

function report(options: LoadBenchOptions, phases: { solo: Phase; abused: Phase; unlimited?: Phase }, consistency: ConsistencyReport, startLoad: number[], setup: { goodRecords: number; badRecords: number }): string {
  const { solo, abused, unlimited } = phases;
  const searchP95 = (phase: Phase) => percentile(phase.good.latencies.get("search (indexed)") ?? [], 95);
  const searchRatio = searchP95(abused) / searchP95(solo);
  const fiveXX = [solo, abused, ...(unlimited ? [unlimited] : [])].reduce((n, phase) => n + phase.good.count((s) => s >= 500) + phase.bad.count((s) => s >= 500), 0);
  const headers = ["operation", "n alone", "p50 alone (ms)", "p95 alone (ms)", "p50 abused (ms)", "p95 abused (ms)", "p95 abused / alone"];
  if (unlimited) headers.push("p50 abused, limits off (ms)", "p95 abused, limits off (ms)", "p95 limits off / alone");
  headers.push("statuses while abused");
  return [
    "# Load benchmark",
    "",
    `\`npm run bench -- load\`${options.quick ? " --quick (not figures)" : ""}: two organizations in one database under \`wrangler dev\`; well-behaved ${setup.goodRecords.toLocaleString("en-US")} records, abusive ${setup.badRecords.toLocaleString("en-US")}. Phases of ${solo.seconds} s: the well-behaved organization alone (${GOOD_CLIENTS} clients, ${THINK_MS} ms think time), then with the abusive one (${ABUSIVE.scanners} scan clients, ${ABUSIVE.guessers} password guessers and ${ABUSIVE.flooders} flooder, back to back, ignoring Retry-After)${unlimited ? ", then the same again on a server with the scan and password limits switched off (for comparison)" : ""}. Method: docs/benchmarks.md#load.`,
    "",
    "## The well-behaved organization, alone and while the abusive one runs",
    "",
    markdownTable(headers, latencyRows(solo, abused, unlimited), ["l", ...headers.slice(1, -1).map(() => "r" as const), "l"]),
    "",
    `Target: indexed search p95 while abused at most 2× alone: **${ratio(searchRatio)}** (${searchRatio <= 2 ? "met" : "not met"})${unlimited ? `; with the limits off: ${ratio(searchP95(unlimited) / searchP95(solo))}` : ""}.`,
    "",
    "## What the abusive organization got",
    "",
    markdownTable(["operation", "requests", "429s", "statuses"], abusiveRows(abused), ["l", "r", "r", "l"]),
    "",
    `Scans: ${scanShare(abused)}.${unlimited ? ` With the limits off: ${scanShare(unlimited)}; password guesses answered 401 (each a PBKDF2): ${unlimited.bad.count((s) => s === 401, "password guess")}.` : ""}`,
    "",
    `5xx answers over every phase and both organizations: **${fiveXX}** (target 0).`,
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
    const solo = await runPhase("alone", seconds, good, undefined, options.seed, nextTrace);
    console.log(`  phase alone: ${solo.good.count(() => true)} requests`);
    const abused = await runPhase("abused", seconds, good, bad, options.seed, nextTrace);
    console.log(`  phase abused: ${abused.good.count(() => true)} requests of the well-behaved organization, ${abused.bad.count(() => true)} of the abusive one`);
    const consistency = await checkConsistency(good, bad);
    console.log(`  consistency: ${consistency.ok ? "ok" : "NOT ok"}`);
    return { good, bad, solo, abused, consistency };
  });
  // The same abuse on a server with the scan and password limits off: what they are worth.
  const unlimited = await withDevServer({ ...server, vars: { ...BENCH_VARS, ...LIMITS_OFF } }, async ({ baseUrl }) => {
    const good = { ...measured.good, baseUrl };
    const bad = { ...measured.bad, baseUrl };
    const phase = await runPhase("abused, limits off", seconds, good, bad, options.seed, nextTrace);
    console.log(`  phase abused, limits off: ${phase.good.count(() => true)} requests of the well-behaved organization, ${phase.bad.count(() => true)} of the abusive one`);
    return phase;
  });
  const markdown = report(options, { solo: measured.solo, abused: measured.abused, unlimited }, measured.consistency, startLoad, {
    goodRecords: goodTraces * RECORDS_PER_TRACE,
    badRecords: badTraces * RECORDS_PER_TRACE,
  });
  console.log(`\n${markdown}`);
  console.log(`written to ${writeResult("load", markdown, options.quick)}`);
}
