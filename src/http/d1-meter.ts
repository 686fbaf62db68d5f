/**
 * The bill's meter (issue 36, "The bill"): what the isolate asked of D1, in the units Cloudflare
 * bills — rows read and rows written, from D1's own `meta` of each answer — and how many
 * requests, queue batches and cron runs it served. The ingest and search benches read it through
 * `GET /__meter` and turn it into a cost per span and per search (docs/benchmarks.md, "The bill").
 *
 * It is off unless the worker's `D1_METER` variable is "1" (only the benches set it): the counts
 * are per isolate, across tenants, and a deployed service must not tell one tenant how many rows
 * another's data made it read. When off, nothing is wrapped and the route does not exist.
 *
 * What D1 does not report is counted, not guessed: `raw()` and `exec()` return no `meta` (drizzle
 * runs its typed selects through `raw()`), so their round trips are `unmetered`; a `first()` is
 * run as `all()` (what D1 itself does, then takes the first row) so that its rows are counted.
 */
import { observeD1, withD1Views } from "./d1-round-trips";

export const METER_PATH = "/__meter";

export interface D1MeterReading {
  /** Calls that went to a database: statements, batches, exec. */
  roundTrips: number;
  rowsRead: number;
  rowsWritten: number;
  /** Round trips whose answer carried no `meta` (`raw()`, `exec()`, `dump()`). */
  unmetered: number;
  /** Invocations of the worker's handlers. */
  requests: number;
  queueBatches: number;
  queueMessages: number;
  scheduledRuns: number;
}

const reading: D1MeterReading = { roundTrips: 0, rowsRead: 0, rowsWritten: 0, unmetered: 0, requests: 0, queueBatches: 0, queueMessages: 0, scheduledRuns: 0 };

export function meterEnabled(env: { D1_METER?: string }): boolean {
  return env.D1_METER === "1";
}

export function meterReading(): D1MeterReading {
  return { ...reading };
}

/** What happened between two readings: each count of `to` less that of `from`. */
export function meterDifference(from: D1MeterReading, to: D1MeterReading): D1MeterReading {
  const difference = { ...to };
  for (const key of Object.keys(difference) as (keyof D1MeterReading)[]) difference[key] -= from[key];
  return difference;
}

export function countInvocation(kind: "request" | "scheduled" | { queueMessages: number }): void {
  if (kind === "request") reading.requests += 1;
  else if (kind === "scheduled") reading.scheduledRuns += 1;
  else {
    reading.queueBatches += 1;
    reading.queueMessages += kind.queueMessages;
  }
}

function meteredD1(db: D1Database): D1Database {
  return observeD1(
    db,
    () => {
      reading.roundTrips += 1;
    },
    {
      meta: (meta) => {
        reading.rowsRead += meta.rows_read ?? 0;
        reading.rowsWritten += meta.rows_written ?? 0;
      },
      unmetered: () => {
        reading.unmetered += 1;
      },
    },
  );
}

const meteredViews = new WeakMap<object, object>();

/** The bindings with every D1 binding metered; one view per bindings object, so identity holds. */
export function meteredEnv<E extends object>(env: E): E {
  let view = meteredViews.get(env) as E | undefined;
  if (!view) {
    view = withD1Views(env, meteredD1);
    meteredViews.set(env, view);
  }
  return view;
}

/** `GET /__meter`: the reading since the isolate started, as JSON. */
export function meterResponse(): Response {
  return Response.json(meterReading(), { headers: { "cache-control": "no-store" } });
}
