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

export interface RoundTripCounter {
  count: number;
}

/**
 * A prepared statement that counts its executions. It keeps the statement it wraps so that
 * `batch()` can hand the runtime's own statements back to the runtime, which reads their
 * internals and would reject a wrapper.
 */
class CountingStatement implements D1PreparedStatement {
  constructor(
    readonly inner: D1PreparedStatement,
    private readonly counter: RoundTripCounter,
  ) {}

  bind(...values: unknown[]): D1PreparedStatement {
    return new CountingStatement(this.inner.bind(...values), this.counter);
  }

  first<T = unknown>(colName: string): Promise<T | null>;
  first<T = Record<string, unknown>>(): Promise<T | null>;
  first<T>(colName?: string): Promise<T | null> {
    this.counter.count += 1;
    return colName === undefined ? this.inner.first<T>() : this.inner.first<T>(colName);
  }

  run<T = Record<string, unknown>>(): Promise<D1Result<T>> {
    this.counter.count += 1;
    return this.inner.run<T>();
  }

  all<T = Record<string, unknown>>(): Promise<D1Result<T>> {
    this.counter.count += 1;
    return this.inner.all<T>();
  }

  raw<T = unknown[]>(options: { columnNames: true }): Promise<[string[], ...T[]]>;
  raw<T = unknown[]>(options?: { columnNames?: false }): Promise<T[]>;
  raw<T = unknown[]>(options?: { columnNames?: boolean }): Promise<[string[], ...T[]] | T[]> {
    this.counter.count += 1;
    return options?.columnNames ? this.inner.raw<T>({ columnNames: true }) : this.inner.raw<T>({ columnNames: false });
  }
}

function unwrap(statements: D1PreparedStatement[]): D1PreparedStatement[] {
  return statements.map((s) => (s instanceof CountingStatement ? s.inner : s));
}

class CountingSession implements D1DatabaseSession {
  constructor(
    private readonly inner: D1DatabaseSession,
    private readonly counter: RoundTripCounter,
  ) {}

  prepare(query: string): D1PreparedStatement {
    return new CountingStatement(this.inner.prepare(query), this.counter);
  }

  batch<T = unknown>(statements: D1PreparedStatement[]): Promise<D1Result<T>[]> {
    this.counter.count += 1;
    return this.inner.batch<T>(unwrap(statements));
  }

  getBookmark(): D1SessionBookmark | null {
    return this.inner.getBookmark();
  }
}

class CountingDatabase implements D1Database {
  constructor(
    private readonly inner: D1Database,
    private readonly counter: RoundTripCounter,
  ) {}

  prepare(query: string): D1PreparedStatement {
    return new CountingStatement(this.inner.prepare(query), this.counter);
  }

  batch<T = unknown>(statements: D1PreparedStatement[]): Promise<D1Result<T>[]> {
    this.counter.count += 1;
    return this.inner.batch<T>(unwrap(statements));
  }

  exec(query: string): Promise<D1ExecResult> {
    this.counter.count += 1;
    return this.inner.exec(query);
  }

  withSession(constraintOrBookmark?: D1SessionBookmark | D1SessionConstraint): D1DatabaseSession {
    return new CountingSession(this.inner.withSession(constraintOrBookmark), this.counter);
  }

  dump(): Promise<ArrayBuffer> {
    this.counter.count += 1;
    return this.inner.dump();
  }
}

/** A D1 binding that adds one to `counter.count` for every round trip made through it. */
export function countingD1(db: D1Database, counter: RoundTripCounter): D1Database {
  return new CountingDatabase(db, counter);
}

export function roundTripsHeader(count: number): string {
  return `${ROUND_TRIPS_METRIC};desc="round trips";dur=${count}`;
}

/**
 * Gives the rest of the request a counting view of `DB` and reports the count on the response,
 * error responses included. The bindings object is shared by every request of the isolate, so it
 * is never modified: the request gets its own view of it with `DB` replaced.
 */
export const d1RoundTrips: MiddlewareHandler<AppEnv> = async (c, next) => {
  const counter: RoundTripCounter = { count: 0 };
  const bindings = c.env;
  if (bindings?.DB) {
    const db = countingD1(bindings.DB, counter);
    c.env = new Proxy(bindings, {
      get: (target, property, receiver) => (property === "DB" ? db : Reflect.get(target, property, receiver)),
    });
  }
  await next();
  c.header("Server-Timing", roundTripsHeader(counter.count), { append: true });
};
