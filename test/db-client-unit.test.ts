/**
 * `database(d1)` (src/db/client.ts) builds drizzle's relational schema once per isolate and the
 * drizzle database once per binding object: a request asks for the same binding several times.
 * What it returns still serves the query builder and the relational queries alike.
 */
import { env } from "cloudflare:test";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { database } from "../src/db/client";
import { organizations } from "../src/db/schema";

describe("database(d1)", () => {
  it("returns one drizzle database per binding object, and another for another binding", () => {
    expect(database(env.DB)).toBe(database(env.DB));
    const wrapper = env.DB.withSession("first-unconstrained") as unknown as D1Database;
    expect(database(wrapper)).not.toBe(database(env.DB));
    expect(database(wrapper)).toBe(database(wrapper));
  });

  it("serves the query builder and the relational queries over the binding it was built for", async () => {
    const id = `org-db-client-${crypto.randomUUID()}`;
    await database(env.DB).insert(organizations).values({ id, name: "db client", createdAt: 1 });
    expect(await database(env.DB).select({ name: organizations.name }).from(organizations).where(eq(organizations.id, id))).toEqual([{ name: "db client" }]);
    expect(await database(env.DB).query.organizations.findFirst({ where: eq(organizations.id, id), columns: { name: true } })).toEqual({ name: "db client" });
  });
});
