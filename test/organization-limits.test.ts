/**
 * Fair sharing of the database (issue 9, point 8): each organization has a request rate, and a
 * bound on the scan-class searches it runs at once (src/search/search-cost.ts); past either, 429
 * with Retry-After, and other organizations are not affected. The scan slots are the real
 * Durable Object (one per organization), the rate the real rate-limiting binding of wrangler.toml.
 */
import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import wranglerToml from "../wrangler.toml?raw";
import { LIMIT_DEFAULTS, limitSetting, SCAN_WINDOW_MS, scanPolicy } from "../src/limits/limit-settings";
import { ORG_RATE_PERIOD_SECONDS } from "../src/limits/organization-rate";
import { normalizeSearchRequest } from "../src/search/normalize-search-request";
import { classifySearchCost, DEEP_OFFSET } from "../src/search/search-cost";
import type { SearchRequestBody } from "../src/search/search-schemas";
import { type CallResult, call } from "./support/client";
import { type Tenant, createTenant } from "./support/tenants";
import { callWorkerWith } from "./support/worker-call";

const RUN = "3f1c2a1e-8f4d-4e6a-9c1b-2d3e4f5a6b7c";
const cost = (body: Record<string, unknown>, family: "trace" | "span" | "session" = "span") =>
  classifySearchCost(normalizeSearchRequest({ log_stream_id: RUN, ...body } as SearchRequestBody, family, "partial"));

const text = (column: string, operator: string, value: unknown, extra: Record<string, unknown> = {}) => ({ type: "text", column_id: column, operator, value, ...extra });

describe("cost classes of a search", () => {
  it("indexed: native order, filters that narrow the index driving the statement, metric and id sorts, shallow pages", () => {
    const indexed = [
      {},
      { filters: [{ type: "date", column_id: "created_at", operator: "gte", value: "2026-01-01T00:00:00Z" }] },
      { filters: [text("model", "eq", "gpt-4o")] },
      { filters: [text("type", "eq", "llm"), { type: "date", column_id: "created_at", operator: "lt", value: "2026-01-01T00:00:00Z" }] },
      { filters: [text("user_metadata.customer", "eq", "acme")] },
      { filters: [{ type: "collection", column_id: "tags", operator: "contains", value: "prod" }] },
      { filters: [{ type: "number", column_id: "metrics/toxicity", operator: "gt", value: 0.5 }], sort: { column_id: "metrics/toxicity", ascending: false } },
      { sort: { column_id: "id" } },
      { sort: { column_id: "created_at", ascending: true } },
      { pagination: { limit: 1000, starting_token: DEEP_OFFSET - 1 } },
      { filters: [{ type: "id", column_id: "trace_id", operator: "one_of", value: [RUN] }] },
      // A key lookup bounds the statement by the key's records, whatever is checked beside it.
      { filters: [{ type: "id", column_id: "trace_id", operator: "eq", value: RUN }, text("name", "eq", "x")] },
    ];
    for (const body of indexed) expect(cost(body), JSON.stringify(body)).toEqual({ class: "indexed" });
  });

  it("scan-class: substrings, case-insensitive matches, unindexed sorts, deep offsets; each named", () => {
    expect(cost({ filters: [text("input", "contains", "needle")] })).toEqual({ class: "scan", reasons: ["substring match on input"] });
    expect(cost({ filters: [text("user_metadata.customer", "contains", "acm")] })).toEqual({ class: "scan", reasons: ["substring match on user_metadata.customer"] });
    expect(cost({ filters: [{ type: "id", column_id: "id", operator: "contains", value: "3f1c" }] })).toEqual({ class: "scan", reasons: ["substring match on id"] });
    expect(cost({ filters: [text("name", "eq", "Alpha", { case_sensitive: false })] })).toEqual({ class: "scan", reasons: ["case-insensitive match on name"] });
    expect(cost({ filters: [{ type: "collection", column_id: "tags", operator: "contains", value: "Prod", case_sensitive: false }] })).toEqual({
      class: "scan",
      reasons: ["case-insensitive match on tags"],
    });
    expect(cost({ sort: { column_id: "name" } })).toEqual({ class: "scan", reasons: ["sort on name"] });
    expect(cost({ sort: { column_id: "user_metadata.customer" } })).toEqual({ class: "scan", reasons: ["sort on user_metadata.customer"] });
    expect(cost({ pagination: { starting_token: DEEP_OFFSET } })).toEqual({ class: "scan", reasons: [`offset ${DEEP_OFFSET}`] });
  });

  it("a leaf that does not narrow the driving index is scan-class: it is checked on every row until the page fills (test/scan-classification.test.ts has each shape with its plan)", () => {
    expect(cost({ filters: [text("type", "eq", "llm"), text("model", "eq", "gpt-4o")] })).toEqual({ class: "scan", reasons: ["filter on type that no index serves"] });
    const notOr = { filter_tree: { not: { or: [{ filter: text("type", "eq", "tool") }, { filter: { type: "number", column_id: "status_code", operator: "gte", value: 500 } }] } } };
    expect(cost(notOr)).toEqual({ class: "scan", reasons: ["filter on type under or/not", "filter on status_code under or/not"] });
  });

  it("a scan leaf anywhere in the tree makes the search scan-class, whatever surrounds it", () => {
    const deep = { filter_tree: { and: [{ filter: text("type", "eq", "llm") }, { not: { or: [{ filter: text("output", "contains", "x") }] } }] } };
    expect(cost(deep)).toEqual({ class: "scan", reasons: ["substring match on output"] });
    const several = cost({ filters: [text("input", "contains", "a"), text("output", "contains", "b")], sort: { column_id: "status_code" }, pagination: { starting_token: 60_000 } });
    expect(several).toEqual({ class: "scan", reasons: ["substring match on input", "substring match on output", "sort on status_code", "offset 60000"] });
  });
});

let tenant: Tenant;
let other: Tenant;
let projectId: string;
let logStreamId: string;
let otherProjectId: string;
let otherLogStreamId: string;

async function runOf(t: Tenant): Promise<[string, string]> {
  const project = (await call("/v2/projects", { as: t, body: { name: "limits" } })).body.id;
  const run = (await call(`/v2/projects/${project}/log_streams`, { as: t, body: { name: "ls" } })).body.id;
  const ingest = await call(`/v2/projects/${project}/traces`, {
    as: t,
    body: { log_stream_id: run, traces: [{ name: "t", input: "find the needle", output: "o", spans: [{ type: "llm", name: "s", input: "needle", output: "x" }] }] },
  });
  expect(ingest.status).toBe(200);
  return [project, run];
}

beforeAll(async () => {
  tenant = await createTenant();
  other = await createTenant();
  [projectId, logStreamId] = await runOf(tenant);
  [otherProjectId, otherLogStreamId] = await runOf(other);
});

// Two characters: too short for the text index (src/search/text-driver.ts), so a scan.
const SCAN = (run: string) => ({ log_stream_id: run, filters: [text("input", "contains", "ee")] });
const INDEXED = (run: string) => ({ log_stream_id: run, filters: [text("type", "eq", "llm")] });

function slotsOf(t: Tenant) {
  return env.SCAN_SLOTS.get(env.SCAN_SLOTS.idFromName(t.organizationId));
}

async function fillSlots(t: Tenant, leaseMs?: number): Promise<string[]> {
  const leases: string[] = [];
  for (let i = 0; i < limitSetting(env, "ORG_CONCURRENT_SCANS"); i++) {
    const verdict = await slotsOf(t).acquire({ ...scanPolicy(env), leaseMs });
    expect(verdict.granted).toBe(true);
    if (verdict.granted) leases.push(verdict.lease);
  }
  return leases;
}

function expectTooManyScans(response: { status: number; body: any; headers: Headers }, reason: "concurrency" | "time" = "concurrency"): number {
  expect(response.status, JSON.stringify(response.body)).toBe(429);
  const retryAfter = Number(response.headers.get("retry-after"));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(response.body.detail).toMatch(
    reason === "concurrency" ? /^Too many scan-class searches at once for this organization \(at most \d+/ : /^This organization's scan-class searches .* used their share of the database \(\d+\.\d s per 10 s\); retry in \d+ s/,
  );
  expect(response.body.detail).toContain(`retry in ${retryAfter} s`);
  return retryAfter;
}

describe("concurrent scan-class searches per organization", () => {
  it("with every slot taken, a scan is a 429; indexed searches and other organizations go on; a freed slot serves again", async () => {
    const leases = await fillSlots(tenant);
    for (const route of ["spans/partial_search", "traces/search", "sessions/partial_search"]) {
      expectTooManyScans(await call(`/v2/projects/${projectId}/${route}`, { as: tenant, body: SCAN(logStreamId) }));
    }
    const indexed = await call(`/v2/projects/${projectId}/spans/partial_search`, { as: tenant, body: INDEXED(logStreamId) });
    expect(indexed.status).toBe(200);
    expect(indexed.body.records).toHaveLength(1);
    const elsewhere = await call(`/v2/projects/${otherProjectId}/spans/partial_search`, { as: other, body: SCAN(otherLogStreamId) });
    expect(elsewhere.status).toBe(200);
    expect(elsewhere.body.records).toHaveLength(1);

    await slotsOf(tenant).release(leases[0]!);
    const served = await call(`/v2/projects/${projectId}/spans/partial_search`, { as: tenant, body: SCAN(logStreamId) });
    expect(served.status).toBe(200);
    expect(served.body.records).toHaveLength(1);
    // The search gave its slot back: one is still free.
    expect(await slotsOf(tenant).inUse()).toBe(leases.length - 1);
    await slotsOf(tenant).release(leases[1]!);
    expect(await slotsOf(tenant).inUse()).toBe(0);
  });

  it("a lease that is never released expires (a crashed isolate does not hold a slot for ever)", async () => {
    await fillSlots(tenant, 200);
    expectTooManyScans(await call(`/v2/projects/${projectId}/spans/partial_search`, { as: tenant, body: SCAN(logStreamId) }));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await call(`/v2/projects/${projectId}/spans/partial_search`, { as: tenant, body: SCAN(logStreamId) })).status).toBe(200);
    expect(await slotsOf(tenant).inUse()).toBe(0);
  });

  it("an organization whose scans held the database for their share of the window waits, whatever the concurrency", async () => {
    // The default share of wrangler.toml (vitest.config.ts lifts it for the search tests).
    const percent = Number(/^ORG_SCAN_TIME_PERCENT = "(\d+)"/m.exec(wranglerToml)![1]);
    const bindings = { ORG_SCAN_TIME_PERCENT: String(percent) };
    const policy = scanPolicy({ ...env, ...bindings });
    expect(policy.budgetMs).toBe((SCAN_WINDOW_MS * percent) / 100);
    const busy = await createTenant();
    const [project, run] = await runOf(busy);
    const scan = () => callWorkerWith(bindings, `/v2/projects/${project}/spans/partial_search`, { method: "POST", headers: { "Service-API-Key": busy.apiKey, "content-type": "application/json" }, body: JSON.stringify(SCAN(run)) });
    expect((await scan()).status).toBe(200);
    // One lease that lived as long as the whole budget (a scan that ran that long, or died).
    const verdict = await slotsOf(busy).acquire({ ...policy, leaseMs: policy.budgetMs });
    expect(verdict.granted).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, policy.budgetMs + 50));
    expect(await slotsOf(busy).inUse()).toBe(0);
    const retryAfter = expectTooManyScans(await scan(), "time");
    // Until that lease's time leaves the window.
    expect(retryAfter).toBeGreaterThan((SCAN_WINDOW_MS - policy.budgetMs) / 1000 - 2);
    expect(retryAfter).toBeLessThanOrEqual(SCAN_WINDOW_MS / 1000);
    // Indexed searches, and other organizations' scans, go on.
    expect((await call(`/v2/projects/${project}/spans/partial_search`, { as: busy, body: INDEXED(run) })).status).toBe(200);
    expect((await call(`/v2/projects/${otherProjectId}/spans/partial_search`, { as: other, body: SCAN(otherLogStreamId) })).status).toBe(200);
  });

  it("a share above 100% counts the time of concurrent scans, so an operator can lift the time budget", () => {
    // Two scans running for 1 s use 2 s of the window: 100% would still refuse an organization
    // whose one client sends scans back to back (the budget is used up as soon as it is reached),
    // so the share is not capped at 100.
    const policy = scanPolicy({ ...env, ORG_CONCURRENT_SCANS: "4", ORG_SCAN_TIME_PERCENT: "400" });
    expect(policy.maxConcurrent).toBe(4);
    expect(policy.budgetMs).toBe(4 * SCAN_WINDOW_MS);
    expect(scanPolicy({ ...env, ORG_SCAN_TIME_PERCENT: "0" }).budgetMs).toBe((SCAN_WINDOW_MS * LIMIT_DEFAULTS.ORG_SCAN_TIME_PERCENT) / 100);
  });

  it("a scan that fails gives its slot back", async () => {
    const missing = await call(`/v2/projects/${crypto.randomUUID()}/spans/partial_search`, { as: tenant, body: SCAN(logStreamId) });
    expect(missing.status).toBe(404);
    expect(await slotsOf(tenant).inUse()).toBe(0);
  });

  it("parallel scans of one organization never hold more slots than allowed", async () => {
    const limit = limitSetting(env, "ORG_CONCURRENT_SCANS");
    const answers = await Promise.all(Array.from({ length: 12 }, () => call(`/v2/projects/${projectId}/spans/partial_search`, { as: tenant, body: SCAN(logStreamId) })));
    const statuses = answers.map((a) => a.status);
    expect(statuses.every((s) => s === 200 || s === 429), JSON.stringify(statuses)).toBe(true);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(1);
    for (const answer of answers.filter((a) => a.status === 429)) expectTooManyScans(answer);
    expect(limit).toBeGreaterThanOrEqual(1);
    expect(await slotsOf(tenant).inUse()).toBe(0);
  });
});

describe("request rate per organization", () => {
  it("wrangler.toml's period is the one the 429 announces", () => {
    const block = /\[\[ratelimits\]\]\s*\nname = "ORG_RATE_LIMITER"[\s\S]*?simple = \{ limit = (\d+), period = (\d+) \}/.exec(wranglerToml);
    expect(block, "ORG_RATE_LIMITER in wrangler.toml").not.toBeNull();
    expect(Number(block![2])).toBe(ORG_RATE_PERIOD_SECONDS);
  });

  it("past the limit an organization gets 429 with Retry-After, and nothing is done; others are not affected", async () => {
    const busy = await createTenant();
    const limit = Number(/name = "ORG_RATE_LIMITER"[\s\S]*?limit = (\d+)/.exec(wranglerToml)![1]);
    // Cheap requests (a 422 from the cached key) until refused, then at once a write: the window
    // may turn over in between on a loaded machine, so the round is repeated until the write
    // meets the refusal (a turned window serves it, as it should).
    let refusedWrite: { name: string; answer: CallResult } | undefined;
    for (let round = 0; round < 4 && !refusedWrite; round++) {
      let limited: CallResult | undefined;
      for (let sent = 0; sent < 2 * limit + 10 && !limited; sent += 50) {
        const answers = await Promise.all(Array.from({ length: 50 }, () => call("/v2/projects/not-a-uuid", { as: busy })));
        limited = answers.find((a) => a.status === 429);
        for (const answer of answers) expect([422, 429]).toContain(answer.status);
      }
      expect(limited, `no 429 after ${2 * limit + 10} requests`).toBeDefined();
      expect(limited!.headers.get("retry-after")).toBe(String(ORG_RATE_PERIOD_SECONDS));
      expect(limited!.body).toEqual({ detail: `Too many requests for this organization; retry in ${ORG_RATE_PERIOD_SECONDS} s.` });
      const name = `never-created-${round}`;
      const answer = await call("/v2/projects", { as: busy, body: { name } });
      if (answer.status === 429) refusedWrite = { name, answer };
    }
    // Refused before the body is read or anything written.
    expect(refusedWrite, "a write right after the 429s was served in every round").toBeDefined();
    const stored = await env.DB.prepare("SELECT count(*) AS n FROM projects WHERE organization_id = ? AND name = ?").bind(busy.organizationId, refusedWrite!.name).first<{ n: number }>();
    expect(stored!.n).toBe(0);
    // Another organization is served as usual.
    expect((await call("/v2/projects", { as: other })).status).toBe(200);
  }, 60_000);
});
