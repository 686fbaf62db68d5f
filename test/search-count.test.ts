/**
 * `POST /v2/projects/{pid}/{traces|spans|sessions}/count` (src/search/count-handler.ts): for
 * random datasets and random filter trees it answers exactly how many records the search walks
 * through; it stops at COUNT_CAP and says so; it validates like a search (the 422 points at the
 * leaf) and keeps to the caller's organization. Also `GET /v2/current_user`.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { COUNT_CAP } from "../src/search/count-routes";
import { call } from "./support/client";
import { addUser, createTenant } from "./support/tenants";
import { createRun, datasetArbitrary, ingestDataset, POOLS } from "./search-dataset";

const FAMILIES = ["traces", "spans", "sessions"] as const;

const pick = <T>(values: readonly T[]) => fc.constantFrom(...values);

/** Leaves on columns every family has, and metric and metadata leaves, in and/or/not trees. */
const leaf = fc.oneof(
  pick(POOLS.names).map((value) => ({ type: "text", column_id: "name", operator: "eq", value })),
  pick(["a", "e", "needle"]).map((value) => ({ type: "text", column_id: "input", operator: "contains", value, case_sensitive: false })),
  pick(POOLS.toxicity).map((value) => ({ type: "number", column_id: "metrics/toxicity", operator: "gte", value })),
  pick(POOLS.env).map((value) => ({ type: "text", column_id: "user_metadata.env", operator: "eq", value })),
  fc.integer({ min: 0, max: 12 }).map((s) => ({ type: "date", column_id: "created_at", operator: "gte", value: new Date(Date.parse("2026-01-01T00:00:00Z") + s * 1000).toISOString() })),
);
const tree = fc.letrec((tie) => ({
  node: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    leaf,
    fc.array(tie("node"), { maxLength: 3 }).map((and) => ({ and })),
    fc.array(tie("node"), { maxLength: 3 }).map((or) => ({ or })),
    tie("node").map((not) => ({ not })),
  ),
})).node;

async function searchTotal(tenant: Awaited<ReturnType<typeof createTenant>>, path: string, body: Record<string, unknown>): Promise<number> {
  let total = 0;
  for (let offset = 0; ; offset += 1000) {
    const page = await call(`${path}/partial_search`, { as: tenant, body: { ...body, select_columns: { column_ids: ["id"] }, pagination: { limit: 1000, starting_token: offset } } });
    expect(page.status, JSON.stringify(page.body)).toBe(200);
    total += page.body.num_rows;
    if (!page.body.paginated) return total;
  }
}

describe("count", () => {
  it("counts exactly the records a search of the same filter returns", async () => {
    const tenant = await createTenant();
    await fc.assert(
      fc.asyncProperty(datasetArbitrary, fc.array(fc.tuple(pick(FAMILIES), fc.option(tree, { nil: undefined })), { minLength: 4, maxLength: 8 }), async (dataset, queries) => {
        const fixture = await createRun(tenant);
        await ingestDataset(tenant, fixture, dataset);
        for (const [family, filterTree] of queries) {
          const path = `/v2/projects/${fixture.projectId}/${family}`;
          const body = { log_stream_id: fixture.runId, ...(filterTree ? { filter_tree: filterTree } : {}), sort: { column_id: "name" }, pagination: { limit: 1 } };
          const counted = await call(`${path}/count`, { as: tenant, body });
          expect(counted.status, JSON.stringify(counted.body)).toBe(200);
          expect(counted.body).toEqual({ total_count: await searchTotal(tenant, path, body), capped: false });
        }
      }),
      { numRuns: 6 },
    );
    // Most random trees are scan-class (search-cost.ts): each count and search asks the
    // organization's scan slots, twice, on top of its statement.
  }, 30_000);

  it(`stops at ${COUNT_CAP} and says the count is capped`, async () => {
    const tenant = await createTenant();
    const fixture = await createRun(tenant);
    const path = `/v2/projects/${fixture.projectId}/traces`;
    for (let batch = 0; batch * 1000 < COUNT_CAP + 1; batch++) {
      const size = Math.min(1000, COUNT_CAP + 1 - batch * 1000);
      const traces = Array.from({ length: size }, (_, i) => ({ name: `t${batch * 1000 + i}`, tags: i % 2 ? ["odd"] : [] }));
      const ingested = await call(path, { as: tenant, body: { log_stream_id: fixture.runId, traces } });
      expect(ingested.status).toBe(200);
    }
    expect((await call(`${path}/count`, { as: tenant, body: { log_stream_id: fixture.runId } })).body).toEqual({ total_count: COUNT_CAP, capped: true });
    // Under the cap the count is exact again.
    const odd = await call(`${path}/count`, { as: tenant, body: { log_stream_id: fixture.runId, filters: [{ column_id: "tags", operator: "contains", value: "odd" }] } });
    expect(odd.body).toEqual({ total_count: Math.floor((COUNT_CAP + 1) / 2), capped: false });
  }, 120_000);

  it("validates like a search: a 422 at the faulty leaf, before the run is looked up", async () => {
    const tenant = await createTenant();
    const answer = await call(`/v2/projects/${crypto.randomUUID()}/spans/count`, {
      as: tenant,
      body: { log_stream_id: crypto.randomUUID(), filter_tree: { and: [{ column_id: "name", operator: "eq", value: "x" }, { type: "number", column_id: "name", operator: "gt", value: 1 }] } },
    });
    expect(answer.status).toBe(422);
    expect(answer.body.detail[0].loc.slice(0, 4)).toEqual(["body", "filter_tree", "and", 1]);
    const noRun = await call(`/v2/projects/${crypto.randomUUID()}/spans/count`, { as: tenant, body: {} });
    expect(noRun.status).toBe(422);
  });

  it("keeps to the caller's organization: another organization's run is a 404", async () => {
    const owner = await createTenant();
    const fixture = await createRun(owner);
    await call(`/v2/projects/${fixture.projectId}/traces`, { as: owner, body: { log_stream_id: fixture.runId, traces: [{ name: "mine" }] } });
    const stranger = await createTenant();
    const answer = await call(`/v2/projects/${fixture.projectId}/traces/count`, { as: stranger, body: { log_stream_id: fixture.runId } });
    expect(answer.status).toBe(404);
    expect((await call(`/v2/projects/${fixture.projectId}/traces/count`, { as: owner, body: { log_stream_id: fixture.runId } })).body.total_count).toBe(1);
  });
});

describe("current_user", () => {
  it("names the caller, their organization and role, whatever the credentials", async () => {
    const admin = await createTenant("admin");
    const member = await addUser(admin, "member");
    for (const user of [admin, member]) {
      const answer = await call("/v2/current_user", { as: user });
      expect(answer.status).toBe(200);
      // Galileo's role names (its Python SDK validates them): a member is a "user".
      expect(answer.body).toEqual({ id: user.userId, email: user.email, organization_id: admin.organizationId, role: user.role === "admin" ? "admin" : "user" });
    }
    const basic = await call("/v2/current_user", { headers: { Authorization: `Basic ${btoa(`${member.email}:${member.password}`)}` } });
    expect(basic.body.role).toBe("user");
    expect((await call("/v2/current_user")).status).toBe(401);
  });
});
