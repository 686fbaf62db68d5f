/**
 * The bill (issue 36): what a span ingested and a search cost in the units Cloudflare bills, and
 * the dollars per million spans at its list prices.
 *
 * Rows read and written come from D1's own `meta`, counted by the service's meter
 * (src/http/d1-meter.ts, on when the server runs with D1_METER=1) across requests, queue batches
 * and cron runs, so the derived data the upkeep writes after ingest is counted with the ingest.
 * CPU is the `workerd` process's (bench/lib/process-usage.ts): locally it also runs SQLite, which
 * Cloudflare does not bill as Worker CPU, so it is an upper bound of the billed CPU.
 */
import { sleep } from "./wrangler-dev";
import { type D1MeterReading, meterDifference } from "../../src/http/d1-meter";
import { cpuSeconds, workerdPidsOf } from "./process-usage";

/** The service's `GET /__meter` answer: the service's own type, so the two cannot drift. */
export type MeterReading = D1MeterReading;

/** A meter reading and the worker's CPU seconds at one moment. */
export interface BillPoint {
  meter: MeterReading;
  cpuSeconds: number;
}

export const BILL_VARS = { D1_METER: "1" };

export async function readMeter(baseUrl: string): Promise<MeterReading> {
  const response = await fetch(`${baseUrl}/__meter`);
  if (response.status !== 200) throw new Error(`GET /__meter answered ${response.status}: is the server running with D1_METER=1?`);
  return (await response.json()) as MeterReading;
}

/** The CPU seconds of the workerd processes of a `wrangler dev` process group. */
export function workerCpuSeconds(processGroup: number): number {
  return workerdPidsOf(processGroup).reduce((sum, pid) => sum + cpuSeconds(pid), 0);
}

export async function billPoint(baseUrl: string, processGroup: number): Promise<BillPoint> {
  return { meter: await readMeter(baseUrl), cpuSeconds: workerCpuSeconds(processGroup) };
}

export interface BillDelta extends MeterReading {
  cpuMs: number;
}

export function billDelta(from: BillPoint, to: BillPoint): BillDelta {
  return { ...meterDifference(from.meter, to.meter), cpuMs: (to.cpuSeconds - from.cpuSeconds) * 1000 };
}

/**
 * Waits until the service has stopped writing (the upkeep after writes caught up: no row written
 * for `quietMs`), at most `maxMs`; returns whether it went quiet.
 */
export async function untilQuiet(baseUrl: string, quietMs = 5_000, maxMs = 300_000): Promise<boolean> {
  const deadline = Date.now() + maxMs;
  let last = await readMeter(baseUrl);
  let quietSince = Date.now();
  while (Date.now() < deadline) {
    await sleep(1_000);
    const now = await readMeter(baseUrl);
    if (now.rowsWritten !== last.rowsWritten || now.queueMessages !== last.queueMessages) quietSince = Date.now();
    else if (Date.now() - quietSince >= quietMs) return true;
    last = now;
  }
  return false;
}

/**
 * Cloudflare's list prices (Workers Paid), read from developers.cloudflare.com's pricing pages
 * (Workers, D1, Queues) as of 2026-11; the marginal price past the plan's monthly allowance
 * (10M requests, 30M CPU ms, 25B rows read, 50M rows written, 5 GB stored, 1M queue operations)
 * and its $5 base, which a service of this kind exceeds.
 */
export const LIST_PRICES = {
  date: "2026-11",
  perMillionRequests: 0.3,
  perMillionCpuMs: 0.02,
  perMillionRowsRead: 0.001,
  perMillionRowsWritten: 1.0,
  perGbMonthStored: 0.75,
  /** A queue message is three operations (write, read, delete) per 64 KB. */
  perMillionQueueOperations: 0.4,
};

export interface SpanCost {
  requestsPerSpan: number;
  cpuMsPerSpan: number;
  rowsReadPerSpan: number;
  rowsWrittenPerSpan: number;
  queueMessagesPerSpan: number;
  bytesPerSpan: number;
}

/** Dollars per million spans ingested and kept `days` days, by line of the bill. */
export function dollarsPerMillionSpans(cost: SpanCost, days = 30): { line: string; dollars: number }[] {
  const million = 1_000_000;
  const p = LIST_PRICES;
  return [
    { line: "Worker requests", dollars: cost.requestsPerSpan * million * (p.perMillionRequests / million) },
    { line: "Worker CPU (upper bound: local CPU includes SQLite)", dollars: cost.cpuMsPerSpan * million * (p.perMillionCpuMs / million) },
    { line: "D1 rows written (records, side rows, indexes' derived rows, upkeep)", dollars: cost.rowsWrittenPerSpan * million * (p.perMillionRowsWritten / million) },
    { line: "D1 rows read (write guards, upkeep)", dollars: cost.rowsReadPerSpan * million * (p.perMillionRowsRead / million) },
    { line: `D1 storage for ${days} days`, dollars: ((cost.bytesPerSpan * million) / 1e9) * p.perGbMonthStored * (days / 30) },
    { line: "Queue operations (upkeep after writes)", dollars: cost.queueMessagesPerSpan * 3 * million * (p.perMillionQueueOperations / million) },
  ];
}
