/**
 * A database that is briefly unavailable is a 503 with Retry-After, never a 500 (issue 9,
 * point 6); only bugs are 500s, logged with the request id and without the values of the query.
 *
 * The messages are D1's own, as its documentation lists them ("Debug D1", List of D1_ERRORs) and
 * as the runtime throws them (`D1_ERROR: <message>`, with drizzle's "Failed query" wrapper around
 * them when the query went through drizzle).
 */
import { env } from "cloudflare:test";
import { DrizzleQueryError } from "drizzle-orm/errors";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { describeForLog, unavailability } from "../src/http/database-errors";
import { type Tenant, createTenant } from "./support/tenants";
import { failingDatabase } from "./support/failing-database";
import { callWorkerWith } from "./support/worker-call";

/** An error as the D1 binding throws it: the D1_ERROR line, the SQL engine's message as cause. */
function d1Error(message: string): Error {
  return new Error(`D1_ERROR: ${message}`, { cause: new Error(message) });
}

/** The same error after drizzle wrapped it with the query and its values. */
function viaDrizzle(error: Error, params: unknown[] = ["secret-value@example.com"]): Error {
  return new DrizzleQueryError("select * from users where email = ?", params, error);
}

const TRANSIENT_MESSAGES = [
  "D1 DB reset because its code was updated.",
  "Internal error while starting up D1 DB storage caused object to be reset.",
  "Network connection lost.",
  "Internal error in D1 DB storage caused object to be reset.",
  "Cannot resolve D1 DB due to transient issue on remote node.",
  "Can't read from request stream because client disconnected.",
  "D1 DB storage operation exceeded timeout which caused object to be reset.",
  "D1 DB is overloaded. Requests queued for too long.",
  "D1 DB is overloaded. Too many requests queued.",
  "D1 DB's isolate exceeded its memory limit and was reset.",
  "D1 DB exceeded its CPU time limit and was reset.",
  "database is locked: SQLITE_BUSY",
  "database table is locked: SQLITE_LOCKED",
  "database or disk is full: SQLITE_FULL",
  "Durable Object is overloaded. Too many requests queued.",
];

const BUG_MESSAGES = [
  "no such table: recordz: SQLITE_ERROR",
  "near \"SELEC\": syntax error at offset 0: SQLITE_ERROR",
  "too many SQL variables at offset 412: SQLITE_ERROR",
  "NOT NULL constraint failed: records.run_id: SQLITE_CONSTRAINT",
  "Too many API requests by single Worker invocation.",
];

describe("classification of real-looking messages", () => {
  it("every transient message of D1's list, bare, as D1_ERROR, or inside drizzle's wrapper, is a 503", () => {
    for (const message of TRANSIENT_MESSAGES) {
      for (const error of [new Error(message), d1Error(message), viaDrizzle(d1Error(message))]) {
        const verdict = unavailability(error);
        expect(verdict, message).toMatchObject({ status: 503 });
        expect(verdict!.retryAfterSeconds).toBeGreaterThanOrEqual(1);
      }
    }
  });

  it("overload asks for a longer wait than a reset", () => {
    expect(unavailability(d1Error("D1 DB is overloaded. Requests queued for too long."))!.retryAfterSeconds).toBeGreaterThan(
      unavailability(d1Error("Network connection lost."))!.retryAfterSeconds,
    );
  });

  it("bugs stay bugs", () => {
    for (const message of BUG_MESSAGES) {
      expect(unavailability(d1Error(message)), message).toBeUndefined();
      expect(unavailability(viaDrizzle(d1Error(message))), message).toBeUndefined();
    }
    expect(unavailability(new TypeError("Cannot read properties of undefined (reading 'id')"))).toBeUndefined();
  });

  it("a client's value inside drizzle's wrapper cannot make a bug look like an outage", () => {
    const error = viaDrizzle(d1Error("no such column: x: SQLITE_ERROR"), ["database is locked", "D1 DB is overloaded. Too many requests queued."]);
    expect(unavailability(error)).toBeUndefined();
  });

  it("a real error from the local D1 is classified as a bug", async () => {
    const error = await env.DB.prepare("SELECT * FROM no_such_table").all().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(unavailability(error)).toBeUndefined();
  });

  it("the log description keeps the query but drops its values", () => {
    const text = describeForLog(viaDrizzle(d1Error("no such table: recordz: SQLITE_ERROR"), ["ada@example.com", "tsk_secret"]));
    expect(text).toContain("select * from users where email = ?");
    expect(text).toContain("no such table: recordz");
    expect(text).not.toContain("ada@example.com");
    expect(text).not.toContain("tsk_secret");
  });
});

function callWith(db: D1Database, path: string, init: RequestInit) {
  return callWorkerWith({ DB: db }, path, init);
}

describe("through the worker", () => {
  let tenant: Tenant;
  beforeAll(async () => {
    tenant = await createTenant();
  });
  afterEach(() => vi.restoreAllMocks());

  const requests = (t: Tenant): [string, RequestInit][] => [
    ["/v2/projects", { headers: { "Service-API-Key": t.apiKey } }],
    ["/v2/projects", { method: "POST", headers: { "Service-API-Key": t.apiKey, "content-type": "application/json" }, body: '{"name":"p"}' }],
    ["/login", { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: `username=${encodeURIComponent(t.email)}&password=x` }],
  ];

  it("an overloaded database is a 503 with Retry-After on every kind of route", async () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
    for (const message of TRANSIENT_MESSAGES) {
      for (const [path, init] of requests(tenant)) {
        const response = await callWith(failingDatabase(() => viaDrizzle(d1Error(message))), path, init);
        expect(response.status, `${message} at ${path}: ${JSON.stringify(response.body)}`).toBe(503);
        expect(Number(response.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
        expect(response.body.detail).toMatch(/^Database unavailable \([\w ]+\); retry in \d+ s\.$/);
        expect(response.headers.get("x-request-id")).toBeTruthy();
      }
    }
    // Logged as a warning with the request id, without the query's values.
    const lines = warn.mock.calls.map((args) => args.map(String).join(" "));
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) {
      expect(line).toMatch(/^request [\w.-]+: database [\w ]+, answered 503/);
      expect(line).not.toContain("secret-value@example.com");
    }
  });

  it("a bug is a 500 with a generic message, logged with the request id", async () => {
    const log = vi.spyOn(console, "error").mockImplementation(() => undefined);
    const response = await callWith(failingDatabase(() => viaDrizzle(d1Error("no such table: users: SQLITE_ERROR"))), "/v2/projects", {
      headers: { "Service-API-Key": `${tenant.apiKey}-not-cached` },
    });
    expect(response.status).toBe(500);
    const requestId = response.headers.get("x-request-id")!;
    expect(response.body.detail).toBe(`Internal server error (request id ${requestId})`);
    const line = log.mock.calls.map((args) => args.map(String).join(" ")).find((l) => l.includes(requestId));
    expect(line).toMatch(/no such table: users/);
    expect(line).not.toContain("secret-value@example.com");
  });
});
