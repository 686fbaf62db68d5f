/**
 * Counts the D1 round trips a request makes and reports them in a `Server-Timing` header:
 * `Server-Timing: d1;desc="round trips";dur=<n>`.
 *
 * A round trip is one call that goes to the database: a `batch()` (however many statements it
 * holds: D1 runs it as one call), an `exec()`, a `dump()`, or a prepared statement's `all`,
 * `run`, `first` or `raw`. For a caller far from the database's primary each one costs a network
 * trip, so this count, not the number of statements, is what latency budgets are written in.
 *
 * The header carries only the count (no SQL, no timing of individual queries, nothing about the
 * data). Work a handler leaves running after the response is sent (`waitUntil`) is not counted.
 */
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "./app-env";

export const ROUND_TRIPS_METRIC = "d1";

/** One round trip: how it was made and the statements it carried (one unless a batch). */
export interface D1Call {
  method: "all" | "first" | "run" | "raw" | "batch" | "exec" | "dump";
  statements: { sql: string; params: readonly unknown[] }[];
}

export type D1CallObserver = (call: D1Call) => void;

/**
 * What an observer may also want of each answer: D1's `meta` of every statement answered with one
 * (`run`, `all`, `first` run as `all`, each statement of a `batch`), and a call for each round trip
 * whose answer has none (`raw`, `exec`, `dump`). Used by the bill's meter (src/http/d1-meter.ts).
 */
export interface D1ResultObserver {
  meta(meta: D1Meta): void;
  unmetered(): void;
}

/**
 * A prepared statement that reports its executions. It keeps the statement it wraps so that
 * `batch()` can hand the runtime's own statements back to the runtime, which reads their
 * internals and would reject a wrapper.
 */
class ObservedStatement implements D1PreparedStatement {
  constructor(
    readonly inner: D1PreparedStatement,
    private readonly observer: D1CallObserver,
    readonly sql: string,
    readonly params: readonly unknown[] = [],
    private readonly results?: D1ResultObserver,
  ) {}

  private metered<R extends D1Result>(answer: Promise<R>): Promise<R> {
    const results = this.results;
    if (!results) return answer;
    return answer.then((result) => {
      results.meta(result.meta);
      return result;
    });
  }

  private executed(method: D1Call["method"]): void {
    this.observer({ method, statements: [{ sql: this.sql, params: this.params }] });
  }

  bind(...values: unknown[]): D1PreparedStatement {
    return new ObservedStatement(this.inner.bind(...values), this.observer, this.sql, values, this.results);
  }

  first<T = unknown>(colName: string): Promise<T | null>;
  first<T = Record<string, unknown>>(): Promise<T | null>;
  first<T>(colName?: string): Promise<T | null> {
    this.executed("first");
    if (this.results) {
      // D1's first() is all() and its first row; run as all() its rows are counted.
      return this.metered(this.inner.all<Record<string, unknown>>()).then(({ results }) => {
        const row = results[0];
        if (row === undefined) return null;
        if (colName === undefined) return row as T;
        if (!(colName in row)) throw new Error(`D1_COLUMN_NOTFOUND: Column not found (${colName})`);
        return row[colName] as T;
      });
    }
    return colName === undefined ? this.inner.first<T>() : this.inner.first<T>(colName);
  }

  run<T = Record<string, unknown>>(): Promise<D1Result<T>> {
    this.executed("run");
    return this.metered(this.inner.run<T>());
  }

  all<T = Record<string, unknown>>(): Promise<D1Result<T>> {
    this.executed("all");
    return this.metered(this.inner.all<T>());
  }

  raw<T = unknown[]>(options: { columnNames: true }): Promise<[string[], ...T[]]>;
  raw<T = unknown[]>(options?: { columnNames?: false }): Promise<T[]>;
  raw<T = unknown[]>(options?: { columnNames?: boolean }): Promise<[string[], ...T[]] | T[]> {
    this.executed("raw");
    this.results?.unmetered();
    return options?.columnNames ? this.inner.raw<T>({ columnNames: true }) : this.inner.raw<T>({ columnNames: false });
  }
}

/** Reports a batch and returns the statements it wraps (one layer: wrappers may be stacked). */
function observedBatch(statements: D1PreparedStatement[], observer: D1CallObserver): D1PreparedStatement[] {
  observer({
    method: "batch",
    statements: statements.map((s) => (s instanceof ObservedStatement ? { sql: s.sql, params: s.params } : { sql: "<unobserved statement>", params: [] })),
  });
  return statements.map((s) => (s instanceof ObservedStatement ? s.inner : s));
}

/** A batch's answers, each statement's `meta` told to the result observer. */
function meteredBatch<T>(answer: Promise<D1Result<T>[]>, results: D1ResultObserver | undefined): Promise<D1Result<T>[]> {
  if (!results) return answer;
  return answer.then((all) => {
    for (const result of all) results.meta(result.meta);
    return all;
  });
}

class ObservedSession implements D1DatabaseSession {
  constructor(
    private readonly inner: D1DatabaseSession,
    private readonly observer: D1CallObserver,
    private readonly results?: D1ResultObserver,
  ) {}

  prepare(query: string): D1PreparedStatement {
    return new ObservedStatement(this.inner.prepare(query), this.observer, query, [], this.results);
  }

  batch<T = unknown>(statements: D1PreparedStatement[]): Promise<D1Result<T>[]> {
    return meteredBatch(this.inner.batch<T>(observedBatch(statements, this.observer)), this.results);
  }

  getBookmark(): D1SessionBookmark | null {
    return this.inner.getBookmark();
  }
}

class ObservedDatabase implements D1Database {
  constructor(
    private readonly inner: D1Database,
    private readonly observer: D1CallObserver,
    private readonly results?: D1ResultObserver,
  ) {}

  prepare(query: string): D1PreparedStatement {
    return new ObservedStatement(this.inner.prepare(query), this.observer, query, [], this.results);
  }

  batch<T = unknown>(statements: D1PreparedStatement[]): Promise<D1Result<T>[]> {
    return meteredBatch(this.inner.batch<T>(observedBatch(statements, this.observer)), this.results);
  }

  exec(query: string): Promise<D1ExecResult> {
    this.observer({ method: "exec", statements: [{ sql: query, params: [] }] });
    this.results?.unmetered();
    return this.inner.exec(query);
  }

  withSession(constraintOrBookmark?: D1SessionBookmark | D1SessionConstraint): D1DatabaseSession {
    return new ObservedSession(this.inner.withSession(constraintOrBookmark), this.observer, this.results);
  }

  dump(): Promise<ArrayBuffer> {
    this.observer({ method: "dump", statements: [] });
    this.results?.unmetered();
    return this.inner.dump();
  }
}

/**
 * A D1 binding that tells `observer` about every round trip made through it, with the
 * statements it carried, and `results` (when given) about each answer's `meta`. The statements
 * are the caller's own objects: nothing is copied.
 */
export function observeD1(db: D1Database, observer: D1CallObserver, results?: D1ResultObserver): D1Database {
  return new ObservedDatabase(db, observer, results);
}

export interface RoundTripCounter {
  count: number;
}

/** A D1 binding that adds one to `counter.count` for every round trip made through it. */
export function countingD1(db: D1Database, counter: RoundTripCounter): D1Database {
  return observeD1(db, () => {
    counter.count += 1;
  });
}

export function roundTripsHeader(count: number): string {
  return `${ROUND_TRIPS_METRIC};desc="round trips";dur=${count}`;
}

// A service binding (the explorer's ASSETS) is an RPC stub that answers a function for any
// property name, `prepare` and `batch` included: its `fetch` tells it apart (a D1Database has none).
export const isD1 = (value: unknown): value is D1Database =>
  typeof (value as D1Database | undefined)?.prepare === "function" &&
  typeof (value as D1Database).batch === "function" &&
  typeof (value as Partial<Fetcher>).fetch !== "function";

/**
 * A view of a bindings object with each D1 binding replaced by `wrap(binding)` (made once per
 * binding and view). The bindings object itself is shared by the isolate and never modified.
 */
export function withD1Views<E extends object>(bindings: E, wrap: (db: D1Database) => D1Database): E {
  const views = new Map<PropertyKey, D1Database>();
  return new Proxy(bindings, {
    get: (target, property, receiver) => {
      const value = Reflect.get(target, property, receiver);
      if (!isD1(value)) return value;
      let view = views.get(property);
      if (!view) {
        view = wrap(value);
        views.set(property, view);
      }
      return view;
    },
  });
}

/**
 * A view of the bindings whose every D1 database (the catalog and the shards) counts its round
 * trips in `counter`; the bindings object itself is never modified. Also used by the cron's alert
 * evaluation (src/alerts/alert-cron.ts), which reports its count.
 */
export function countingEnv<E extends object>(bindings: E, counter: RoundTripCounter): E {
  return withD1Views(bindings, (db) => countingD1(db, counter));
}

/**
 * Gives the rest of the request a counting view of every D1 binding (the catalog `DB` and the
 * data shards) and reports the count on the response, error responses included. The bindings
 * object is shared by every request of the isolate, so it is never modified: the request gets
 * its own view of it with each database replaced.
 */
export const d1RoundTrips: MiddlewareHandler<AppEnv> = async (c, next) => {
  const counter: RoundTripCounter = { count: 0 };
  if (c.env?.DB) c.env = countingEnv(c.env, counter);
  await next();
  c.header("Server-Timing", roundTripsHeader(counter.count), { append: true });
};
