import { env } from "cloudflare:test";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { database } from "../src/db/client";
import { organizations } from "../src/db/schema";
import type { AppEnv } from "../src/http/app-env";
import { countingD1, type D1Call, d1RoundTrips, observeD1, type RoundTripCounter } from "../src/http/d1-round-trips";
import { call } from "./support/client";
import { createTenant } from "./support/tenants";

const HEADER = /^d1;desc="round trips";dur=(\d+)$/;

function roundTripsOf(headers: Headers): number {
  const match = HEADER.exec(headers.get("Server-Timing") ?? "");
  if (!match) throw new Error(`no round-trip count in Server-Timing: ${headers.get("Server-Timing")}`);
  return Number(match[1]);
}

function counted(): { db: D1Database; counter: RoundTripCounter } {
  const counter = { count: 0 };
  return { db: countingD1(env.DB, counter), counter };
}

describe("countingD1", () => {
  it("counts each execution of a prepared statement, not its preparation or binding", async () => {
    const { db, counter } = counted();
    const statement = db.prepare("SELECT ?1 AS a, ?2 AS b").bind(1, "x");
    expect(counter.count).toBe(0);
    expect(await statement.first()).toEqual({ a: 1, b: "x" });
    expect(await statement.first("b")).toBe("x");
    expect((await statement.all()).results).toEqual([{ a: 1, b: "x" }]);
    expect((await statement.run()).success).toBe(true);
    expect(await statement.raw()).toEqual([[1, "x"]]);
    expect(await statement.raw({ columnNames: true })).toEqual([["a", "b"], [1, "x"]]);
    expect(counter.count).toBe(6);
  });

  it("counts a batch of several statements as one round trip and returns every result", async () => {
    const { db, counter } = counted();
    const results = await db.batch([
      db.prepare("SELECT 1 AS n"),
      db.prepare("SELECT ?1 AS n").bind(2),
      db.prepare("SELECT ?1 + ?2 AS n").bind(1, 2),
    ]);
    expect(results.map((r) => r.results)).toEqual([[{ n: 1 }], [{ n: 2 }], [{ n: 3 }]]);
    expect(counter.count).toBe(1);
  });

  it("accepts statements prepared on the raw binding in a batch", async () => {
    const { db, counter } = counted();
    const results = await db.batch([env.DB.prepare("SELECT 7 AS n"), db.prepare("SELECT 8 AS n")]);
    expect(results.map((r) => r.results)).toEqual([[{ n: 7 }], [{ n: 8 }]]);
    expect(counter.count).toBe(1);
  });

  it("counts exec and session calls", async () => {
    const { db, counter } = counted();
    await db.exec("SELECT 1");
    expect(counter.count).toBe(1);
    const session = db.withSession("first-primary");
    expect(await session.prepare("SELECT 1 AS n").first("n")).toBe(1);
    await session.batch([session.prepare("SELECT 1"), session.prepare("SELECT 2")]);
    expect(counter.count).toBe(3);
  });

  it("counts drizzle queries and drizzle batches as D1 sees them", async () => {
    const { db, counter } = counted();
    const orm = database(db);
    await orm.select().from(organizations).limit(1);
    expect(counter.count).toBe(1);
    await orm.batch([orm.select().from(organizations).limit(1), orm.select({ id: organizations.id }).from(organizations).limit(2)]);
    expect(counter.count).toBe(2);
  });

  it("counts a failing call too: it reached the database", async () => {
    const { db, counter } = counted();
    await expect(db.prepare("SELECT * FROM no_such_table").all()).rejects.toThrow();
    await expect(db.batch([db.prepare("SELECT 1"), db.prepare("SELECT * FROM no_such_table")])).rejects.toThrow();
    expect(counter.count).toBe(2);
  });
});

describe("observeD1", () => {
  it("reports each round trip with the statements and parameters it carried", async () => {
    const calls: D1Call[] = [];
    const db = observeD1(env.DB, (call) => calls.push(call));
    await db.prepare("SELECT ?1 AS a").bind("x").first();
    await db.batch([db.prepare("SELECT 1"), db.prepare("SELECT ?1, ?2").bind(2, null)]);
    await db.exec("SELECT 3");
    await db.prepare("SELECT 4").raw();
    expect(calls).toEqual([
      { method: "first", statements: [{ sql: "SELECT ?1 AS a", params: ["x"] }] },
      { method: "batch", statements: [{ sql: "SELECT 1", params: [] }, { sql: "SELECT ?1, ?2", params: [2, null] }] },
      { method: "exec", statements: [{ sql: "SELECT 3", params: [] }] },
      { method: "raw", statements: [{ sql: "SELECT 4", params: [] }] },
    ]);
  });

  it("stacks: a counting view over an observed view counts and reports the same calls", async () => {
    const calls: D1Call[] = [];
    const counter = { count: 0 };
    const db = countingD1(observeD1(env.DB, (call) => calls.push(call)), counter);
    const results = await db.batch([db.prepare("SELECT ?1 AS n").bind(4), db.prepare("SELECT 5 AS n")]);
    expect(results.map((r) => r.results)).toEqual([[{ n: 4 }], [{ n: 5 }]]);
    expect(await db.prepare("SELECT 6 AS n").first("n")).toBe(6);
    expect(counter.count).toBe(2);
    expect(calls.map((c) => c.statements.map((s) => s.sql))).toEqual([["SELECT ?1 AS n", "SELECT 5 AS n"], ["SELECT 6 AS n"]]);
  });
});

/** A minimal app with the middleware and handlers that make a known number of D1 calls. */
function probeApp() {
  const app = new Hono<AppEnv>();
  app.use("*", d1RoundTrips);
  app.get("/none", (c) => c.text("none"));
  app.get("/three", async (c) => {
    await c.env.DB.prepare("SELECT 1").first();
    await c.env.DB.batch([c.env.DB.prepare("SELECT 1"), c.env.DB.prepare("SELECT 2")]);
    await c.env.DB.exec("SELECT 3");
    return c.text("three");
  });
  app.get("/slow/:n", async (c) => {
    const n = Number(c.req.param("n"));
    for (let i = 0; i < n; i += 1) {
      await c.env.DB.prepare("SELECT ?1").bind(i).first();
      await scheduler.wait(1);
    }
    return c.text(String(n));
  });
  app.get("/timed", async (c) => {
    await c.env.DB.prepare("SELECT 1").first();
    c.header("Server-Timing", 'app;dur=1.5');
    return c.text("timed");
  });
  app.get("/fails", async (c) => {
    await c.env.DB.prepare("SELECT 1").first();
    await c.env.DB.prepare("SELECT * FROM no_such_table").all();
    return c.text("unreachable");
  });
  app.onError((_error, c) => c.text("failed", 500));
  return app;
}

describe("d1RoundTrips middleware", () => {
  const app = probeApp();
  // The isolate's bindings object: every request sees the same one.
  const bindings = { DB: env.DB };
  const get = (path: string) => app.request(path, {}, bindings);

  it("reports zero when the request never touches the database", async () => {
    const response = await get("/none");
    expect(response.headers.get("Server-Timing")).toBe('d1;desc="round trips";dur=0');
  });

  it("reports every round trip of the request", async () => {
    expect(roundTripsOf((await get("/three")).headers)).toBe(3);
  });

  it("keeps a handler's own Server-Timing entries", async () => {
    const response = await get("/timed");
    expect(response.headers.get("Server-Timing")).toBe('app;dur=1.5, d1;desc="round trips";dur=1');
  });

  it("reports the count on error responses", async () => {
    const response = await get("/fails");
    expect(response.status).toBe(500);
    expect(roundTripsOf(response.headers)).toBe(2);
  });

  it("counts each concurrent request on its own and leaves the shared binding untouched", async () => {
    const sizes = [1, 5, 2, 8, 3];
    const responses = await Promise.all(sizes.map((n) => get(`/slow/${n}`)));
    expect(responses.map((r) => roundTripsOf(r.headers))).toEqual(sizes);
    expect(bindings.DB).toBe(env.DB);
  });
});

describe("the service reports its round trips", () => {
  it("on a route without database work", async () => {
    const response = await call("/healthcheck");
    expect(response.status).toBe(200);
    expect(roundTripsOf(response.headers)).toBe(0);
  });

  it("on a refused request that never reached the database", async () => {
    const response = await call("/v2/projects");
    expect(response.status).toBe(401);
    expect(roundTripsOf(response.headers)).toBe(0);
  });

  it("on an authenticated request, matching the D1 calls it made", async () => {
    const tenant = await createTenant();
    const first = await call("/v2/projects", { as: tenant });
    expect(first.status).toBe(200);
    // At least the listing itself; the key lookup may be served from the principal cache.
    expect(roundTripsOf(first.headers)).toBeGreaterThanOrEqual(1);
    expect(roundTripsOf(first.headers)).toBeLessThanOrEqual(2);
  });
});
