import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { database } from "../src/db/client";
import { organizations } from "../src/db/schema";
import { type D1MeterReading, meterDifference, meteredEnv, meterReading } from "../src/http/d1-meter";
import { countingD1 } from "../src/http/d1-round-trips";

/** What `body` added to the meter. */
async function metered(body: (db: D1Database) => Promise<unknown>): Promise<D1MeterReading> {
  const before = meterReading();
  await body(meteredEnv({ DB: env.DB }).DB);
  return meterDifference(before, meterReading());
}

describe("the bill's meter", () => {
  it("counts the rows D1 reports written and read, per statement and per statement of a batch", async () => {
    await env.DB.exec("CREATE TABLE IF NOT EXISTS meter_probe (id INTEGER PRIMARY KEY, v TEXT)");
    const wrote = await metered((db) => db.batch([db.prepare("INSERT INTO meter_probe (v) VALUES ('a'), ('b'), ('c')"), db.prepare("INSERT INTO meter_probe (v) VALUES ('d')")]));
    expect(wrote.roundTrips).toBe(1);
    expect(wrote.rowsWritten).toBeGreaterThanOrEqual(4);
    expect(wrote.unmetered).toBe(0);

    const read = await metered((db) => db.prepare("SELECT count(*) AS n FROM meter_probe WHERE v >= 'a'").all());
    expect(read.rowsRead).toBeGreaterThanOrEqual(4);
    expect(read.rowsWritten).toBe(0);
  });

  it("counts first() as the all() it is, with the same answers, and raw() as unmetered", async () => {
    const db = meteredEnv({ DB: env.DB }).DB;
    expect(await db.prepare("SELECT 1 AS a, 'x' AS b").first()).toEqual({ a: 1, b: "x" });
    expect(await db.prepare("SELECT 1 AS a, 'x' AS b").first("b")).toBe("x");
    expect(await db.prepare("SELECT 1 AS a WHERE 0").first()).toBeNull();
    await expect(db.prepare("SELECT 1 AS a").first("missing")).rejects.toThrow(/D1_COLUMN_NOTFOUND/);

    const raw = await metered((d) => d.prepare("SELECT 1 AS a").raw());
    expect(raw).toMatchObject({ roundTrips: 1, unmetered: 1, rowsRead: 0 });
    const first = await metered((d) => d.prepare("SELECT 1 AS a").first());
    expect(first).toMatchObject({ roundTrips: 1, unmetered: 0 });
  });

  it("meters drizzle's queries through a stacked round-trip counter and keeps one view per bindings object", async () => {
    const bindings = { DB: env.DB };
    expect(meteredEnv(bindings)).toBe(meteredEnv(bindings));
    const counter = { count: 0 };
    const reading = await metered((db) => database(countingD1(db, counter)).insert(organizations).values({ id: crypto.randomUUID(), name: "metered org", createdAt: Date.now() * 1000 }).run());
    expect(counter.count).toBe(1);
    expect(reading.rowsWritten).toBeGreaterThanOrEqual(1);
  });

  it("is not served when the meter is off (the tests' and the deployed worker's default)", async () => {
    const response = await SELF.fetch("http://example.com/__meter");
    expect(response.status).toBe(404);
  });
});
