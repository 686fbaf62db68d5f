/**
 * What a failure from D1 (or from a Durable Object the limits use) means for the client.
 *
 * - The database was unavailable for a moment: overloaded, reset, unreachable, locked, timed
 *   out. Nothing is wrong with the request; the same request will succeed later. 503 with
 *   `Retry-After`, and the worker logs a warning with the request id.
 * - The request asked for something impossible (a record id owned by another run, a value too
 *   big for a row): 409 or 413.
 * - Anything else is a bug: 500, logged with the request id.
 *
 * The messages are D1's own ("List of D1_ERRORs" in Cloudflare's D1 documentation, "Debug D1"),
 * SQLite's, and the Durable Object runtime's. They are matched on the error and its `cause`
 * chain, never on drizzle's "Failed query: ... params: ..." wrapper text, which carries the
 * request's own values (a client could otherwise make a bug look like an outage).
 */
interface Transient {
  pattern: RegExp;
  retryAfterSeconds: number;
  what: string;
}

/** Seconds a client should wait: longer when the database said it has too much to do. */
const OVERLOAD_RETRY_SECONDS = 5;
const RESET_RETRY_SECONDS = 1;
const FULL_RETRY_SECONDS = 60;

const TRANSIENT: readonly Transient[] = [
  // "D1 DB is overloaded. Requests queued for too long." / "... Too many requests queued."
  { pattern: /\bD1 DB is overloaded\b|\bD1 is overloaded\b|too many requests queued|requests queued for too long/i, retryAfterSeconds: OVERLOAD_RETRY_SECONDS, what: "overloaded" },
  // "Durable Object is overloaded. Too many requests queued." (the limits' objects)
  { pattern: /\bDurable Object is overloaded\b|\bobject is overloaded\b/i, retryAfterSeconds: OVERLOAD_RETRY_SECONDS, what: "overloaded" },
  // "D1 DB storage operation exceeded timeout which caused object to be reset.", a statement
  // over D1's 30 s, "D1 DB's isolate exceeded its memory limit and was reset.", "D1 DB exceeded
  // its CPU time limit and was reset.", "D1 DB reset because its code was updated.", "Internal
  // error (while starting up|in) D1 DB storage caused object to be reset."
  { pattern: /exceeded timeout|timed out|\btimeout\b.*\bquery\b|\bquery\b.*\btimeout\b/i, retryAfterSeconds: OVERLOAD_RETRY_SECONDS, what: "timed out" },
  { pattern: /caused object to be reset|was reset\b|reset because its code was updated|object to be reset/i, retryAfterSeconds: RESET_RETRY_SECONDS, what: "restarting" },
  // "Network connection lost.", "Cannot resolve D1 DB due to transient issue on remote node.",
  // "Can't read from request stream because client disconnected."
  { pattern: /network connection lost|transient issue|connection reset|client disconnected|\bECONNRESET\b/i, retryAfterSeconds: RESET_RETRY_SECONDS, what: "unreachable" },
  // SQLite's own contention codes (a local database shared with the admin command line).
  { pattern: /\bSQLITE_BUSY\b|\bSQLITE_LOCKED\b|database is locked|database table is locked|database is busy/i, retryAfterSeconds: RESET_RETRY_SECONDS, what: "busy" },
  // 10 GB per database: not a bug, and not the client's fault; operators must act (logged).
  { pattern: /\bSQLITE_FULL\b|database or disk is full/i, retryAfterSeconds: FULL_RETRY_SECONDS, what: "full" },
];

/** drizzle's wrapper: its message holds the SQL and the bound values, so it is never matched. */
const QUERY_WRAPPER = /^Failed query:/;

/** The messages of an error and of its causes, outermost first (drizzle's wrapper left out). */
export function errorMessages(error: unknown): string[] {
  const messages: string[] = [];
  let current: unknown = error;
  for (let depth = 0; depth < 6 && current !== undefined && current !== null; depth++) {
    const message = current instanceof Error ? current.message : String(current);
    if (!QUERY_WRAPPER.test(message)) messages.push(message);
    current = current instanceof Error ? current.cause : undefined;
  }
  return messages;
}

export interface Unavailable {
  status: 503;
  retryAfterSeconds: number;
  /** For the log line: which kind of unavailability (never the message, which may hold SQL). */
  what: string;
}

/** A transient database (or Durable Object) failure, or undefined when the error is not one. */
export function unavailability(error: unknown): Unavailable | undefined {
  for (const message of errorMessages(error)) {
    const hit = TRANSIENT.find((t) => t.pattern.test(message));
    if (hit) return { status: 503, retryAfterSeconds: hit.retryAfterSeconds, what: hit.what };
  }
  return undefined;
}

/** SQLite messages that mean the client asked for something impossible, not that we failed. */
export function clientFaultFromDatabase(error: unknown): { status: 409 | 413; detail: string } | undefined {
  const text = errorMessages(error).join("\n");
  if (text.includes("record_ownership_conflict")) {
    return {
      status: 409,
      detail: "a record with this id already exists in another run of this project, or as another kind of record (session, trace or span); nothing of this request was written",
    };
  }
  if (text.includes("SQLITE_TOOBIG") || text.includes("string or blob too big")) {
    return { status: 413, detail: "request too large: send fewer or smaller records per request" };
  }
  return undefined;
}

/**
 * An error for the log: each message of the chain (drizzle's wrapper cut before its bound
 * values) and the stack frames, so a bug can be found without logging what clients sent.
 */
export function describeForLog(error: unknown): string {
  const lines: string[] = [];
  let current: unknown = error;
  for (let depth = 0; depth < 6 && current !== undefined && current !== null; depth++) {
    const name = current instanceof Error ? current.name : typeof current;
    const message = current instanceof Error ? current.message : String(current);
    lines.push(`${depth === 0 ? "" : "caused by "}${name}: ${message.split(/\nparams:/)[0]}`);
    current = current instanceof Error ? current.cause : undefined;
  }
  const frames = error instanceof Error ? (error.stack ?? "").split("\n").filter((l) => /^\s+at /.test(l)).slice(0, 12) : [];
  return [...lines, ...frames].join("\n");
}
