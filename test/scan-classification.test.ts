/**
 * Scans the limits used to think were cheap (issue 19, point 9): a search is classified by the
 * access path its statement really gets (src/search/search-cost.ts), so a filter that no index
 * narrows, checked on every row of the run until the page fills, is scan-class, and so is a
 * deletion dry run. For each shape: the classification names it, the query plan shows the walk
 * (or the narrowing index, for the shapes that stay indexed), and with the organization's scan
 * slots taken the shape is refused with a 429 on every route that runs it (search, count, dry run)
 * while an indexed search still goes through.
 */
import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { limitSetting, scanPolicy } from "../src/limits/limit-settings";
import { compileSearchQuery } from "../src/search/compile-search-query";
import { normalizeSearchRequest } from "../src/search/normalize-search-request";
import { classifySearchCost } from "../src/search/search-cost";
import type { SearchRequestBody } from "../src/search/search-schemas";
import { call } from "./support/client";
import { type Tenant, createTenant } from "./support/tenants";

type Family = "span" | "trace" | "session";
const RUN = crypto.randomUUID();

const leaf = (type: string, column_id: string, operator: string, value: unknown) => ({ type, column_id, operator, value });
const query = (body: Record<string, unknown>, family: Family) => normalizeSearchRequest({ log_stream_id: RUN, ...body } as SearchRequestBody, family, "partial");
const cost = (body: Record<string, unknown>, family: Family = "span") => classifySearchCost(query(body, family));

interface Shape {
  family: Family;
  body: Record<string, unknown>;
  reasons: string[];
  /** The line of the plan that reads the run: a whole run family walked in order. */
  walk: RegExp;
}

const WHOLE_RUN = /^SEARCH r USING INDEX records_family_order \(family_key=\?\)$/;

/** The shapes of the issue, each the access path it really gets. */
const SCANS: Record<string, Shape> = {
  "an eq on name (no index: every row until the page fills, the whole run when nothing matches)": {
    family: "span",
    // Two characters: no trigram, so the text index cannot serve it (src/search/text-driver.ts).
    body: { filters: [leaf("text", "name", "eq", "nx")] },
    reasons: ["filter on name that no index serves"],
    walk: WHOLE_RUN,
  },
  "a dataset_metadata leaf (every row's JSON read)": {
    family: "trace",
    body: { filters: [leaf("text", "dataset_metadata.split", "eq", "test")] },
    reasons: ["dataset_metadata.split read from every record's JSON"],
    walk: WHOLE_RUN,
  },
  "a metric comparison without a sort on that metric": {
    family: "span",
    body: { filters: [leaf("number", "metrics/toxicity", "gt", 0.99)] },
    reasons: ["filter on metrics/toxicity without a sort on it"],
    walk: WHOLE_RUN,
  },
  "a metric comparison sorted by another metric": {
    family: "span",
    body: { filters: [leaf("number", "metrics/toxicity", "gt", 0.99)], sort: { column_id: "metrics/latency" } },
    reasons: ["filter on metrics/toxicity without a sort on it"],
    walk: /^SEARCH dm USING PRIMARY KEY \(metric_key=\?\)$/,
  },
  "a user_metadata eq under or": {
    family: "trace",
    body: { filter_tree: { or: [{ filter: leaf("text", "user_metadata.customer", "eq", "acme") }, { filter: leaf("text", "user_metadata.customer", "eq", "globex") }] } },
    reasons: ["filter on user_metadata.customer under or/not"],
    walk: WHOLE_RUN,
  },
  "a user_metadata eq under not": {
    family: "trace",
    body: { filter_tree: { not: { filter: leaf("text", "user_metadata.customer", "eq", "acme") } } },
    reasons: ["filter on user_metadata.customer under or/not"],
    walk: WHOLE_RUN,
  },
  "a second user_metadata eq beside the one that drives": {
    family: "trace",
    body: { filters: [leaf("text", "user_metadata.env", "eq", "prod"), leaf("text", "user_metadata.customer", "eq", "acme")] },
    reasons: ["filter on user_metadata.customer that no index serves"],
    walk: /^SEARCH dd USING COVERING INDEX record_metadata_family_key_value_order \(family_key=\? AND key=\? AND value=\?\)$/,
  },
  "a tag filter under not": {
    family: "span",
    body: { filter_tree: { not: { filter: leaf("collection", "tags", "contains", "prod") } } },
    reasons: ["filter on tags under or/not"],
    walk: WHOLE_RUN,
  },
  "a status_code range (checked per row)": {
    family: "span",
    body: { filters: [leaf("number", "status_code", "gte", 500)] },
    reasons: ["filter on status_code that no index serves"],
    walk: WHOLE_RUN,
  },
  "a type eq beside a model eq (one index drives, the other is checked per row)": {
    family: "span",
    body: { filters: [leaf("text", "type", "eq", "tool"), leaf("text", "model", "eq", "gpt-4o")] },
    reasons: ["filter on type that no index serves"],
    walk: /^SEARCH r USING INDEX records_family_(model|type)_order \(family_key=\? AND (model|type)=\?\)$/,
  },
  "a created_at range under a sort by id": {
    family: "span",
    body: { filters: [leaf("date", "created_at", "gt", "2026-01-01T00:00:00Z")], sort: { column_id: "id" } },
    reasons: ["filter on created_at that no index serves"],
    walk: /^SEARCH r USING INDEX records_family_(id_order \(family_key=\?\)|order \(family_key=\? AND created_at>\?\))$/,
  },
};

/** Shapes that stay indexed: every leaf narrows the index that drives the statement. */
const INDEXED: Record<string, Omit<Shape, "reasons">> = {
  "native order": { family: "span", body: {}, walk: WHOLE_RUN },
  "a created_at window": {
    family: "span",
    body: { filters: [leaf("date", "created_at", "gte", "2026-01-01T00:00:00Z"), leaf("date", "created_at", "lt", "2026-02-01T00:00:00Z")] },
    walk: /^SEARCH r USING (COVERING )?INDEX records_family_order \(family_key=\? AND created_at>\? AND created_at<\?\)$/,
  },
  "a type eq and a created_at range": {
    family: "span",
    body: { filters: [leaf("text", "type", "eq", "llm"), leaf("date", "created_at", "gt", "2026-01-01T00:00:00Z")] },
    walk: /^SEARCH r USING INDEX records_family_type_order \(family_key=\? AND type=\? AND created_at>\?\)$/,
  },
  "a model eq": { family: "span", body: { filters: [leaf("text", "model", "eq", "gpt-4o")] }, walk: /^SEARCH r USING INDEX records_family_model_order \(family_key=\? AND model=\?\)$/ },
  "a user_metadata eq and a created_at range": {
    family: "trace",
    body: { filters: [leaf("text", "user_metadata.customer", "eq", "acme"), leaf("date", "created_at", "gt", "2026-01-01T00:00:00Z")] },
    walk: /^SEARCH dd USING COVERING INDEX record_metadata_family_key_value_order \(family_key=\? AND key=\? AND value=\? AND created_at>\?\)$/,
  },
  "a tag contains": { family: "trace", body: { filters: [leaf("collection", "tags", "contains", "prod")] }, walk: /^SEARCH dt USING COVERING INDEX record_tags_family_tag_order \(family_key=\? AND tag=\?\)$/ },
  "a metric range sorted by that metric": {
    family: "span",
    body: { filters: [leaf("number", "metrics/toxicity", "gt", 0.9)], sort: { column_id: "metrics/toxicity", ascending: false } },
    walk: /^SEARCH dm USING PRIMARY KEY \(metric_key=\? AND value>\?\)$/,
  },
};

async function planLines(body: Record<string, unknown>, family: Family): Promise<string[]> {
  const compiled = compileSearchQuery(query(body, family), { organizationId: crypto.randomUUID(), projectId: crypto.randomUUID(), runId: RUN, runKind: "log_stream" });
  const { results } = await env.DB.prepare(`EXPLAIN QUERY PLAN ${compiled.sql}`).bind(...compiled.params).all<{ detail: string }>();
  return results.map((row) => row.detail);
}

describe("classification by the access path the statement gets", () => {
  for (const [name, shape] of Object.entries(SCANS)) {
    it(`scan-class: ${name}`, async () => {
      expect(cost(shape.body, shape.family)).toEqual({ class: "scan", reasons: shape.reasons });
      const lines = await planLines(shape.body, shape.family);
      expect(lines.some((line) => shape.walk.test(line)), lines.join("\n")).toBe(true);
    });
  }

  for (const [name, shape] of Object.entries(INDEXED)) {
    it(`indexed: ${name}`, async () => {
      expect(cost(shape.body, shape.family)).toEqual({ class: "indexed" });
      const lines = await planLines(shape.body, shape.family);
      expect(lines.some((line) => shape.walk.test(line)), lines.join("\n")).toBe(true);
    });
  }

  it("fully_annotated is scan-class: since annotations (issue 20) each record's ratings decide it", () => {
    expect(cost({ filters: [{ type: "fully_annotated" }] }, "span")).toEqual({ class: "scan", reasons: ["fully_annotated reads every record's ratings"] });
  });

  it("every leaf of an or names its reason", () => {
    const answer = cost({ filter_tree: { or: [{ filter: { type: "fully_annotated" } }, { filter: leaf("text", "name", "eq", "x") }] } });
    expect(answer.class).toBe("scan");
    expect(answer.class === "scan" && answer.reasons).toEqual(expect.arrayContaining(["fully_annotated reads every record's ratings", "filter on name under or/not"]));
  });
});

let tenant: Tenant;
let projectId: string;
let runId: string;

beforeAll(async () => {
  tenant = await createTenant();
  projectId = (await call("/v2/projects", { as: tenant, body: { name: "scans" } })).body.id;
  runId = (await call(`/v2/projects/${projectId}/log_streams`, { as: tenant, body: { name: "ls" } })).body.id;
  const ingest = await call(`/v2/projects/${projectId}/traces`, {
    as: tenant,
    body: {
      log_stream_id: runId,
      traces: [{ name: "t", input: "i", output: "o", user_metadata: { customer: "acme" }, spans: [{ type: "llm", name: "s", input: "i", output: "o", model: "gpt-4o", metrics: { toxicity: 0.5 } }] }],
    },
  });
  expect(ingest.status).toBe(200);
});

function slotsOf(t: Tenant) {
  return env.SCAN_SLOTS.get(env.SCAN_SLOTS.idFromName(t.organizationId));
}

/** Takes every scan slot of the organization for the duration of `check`. */
async function withSlotsTaken(t: Tenant, check: () => Promise<void>): Promise<void> {
  const leases: string[] = [];
  for (let i = 0; i < limitSetting(env, "ORG_CONCURRENT_SCANS"); i++) {
    const verdict = await slotsOf(t).acquire(scanPolicy(env));
    expect(verdict.granted).toBe(true);
    if (verdict.granted) leases.push(verdict.lease);
  }
  try {
    await check();
  } finally {
    for (const lease of leases) await slotsOf(t).release(lease);
  }
}

function expectRefusedAsScan(answer: { status: number; body: any; headers: Headers }, reason?: string) {
  expect(answer.status, JSON.stringify(answer.body)).toBe(429);
  expect(Number(answer.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
  expect(answer.body.detail).toMatch(/^Too many scan-class searches at once for this organization/);
  if (reason) expect(answer.body.detail).toContain(reason);
}

const ROUTES: Record<Family, string> = { span: "spans", trace: "traces", session: "sessions" };

describe("the limits see these scans (every scan slot of the organization taken)", () => {
  for (const [name, shape] of Object.entries(SCANS)) {
    it(`refuses ${name}, as a search and (when its unsorted query is one) as a count`, async () => {
      await withSlotsTaken(tenant, async () => {
        const body = { log_stream_id: runId, ...shape.body };
        expectRefusedAsScan(await call(`/v2/projects/${projectId}/${ROUTES[shape.family]}/partial_search`, { as: tenant, body }), shape.reasons[0]);
        // A count drops the sort (it counts in the native order): it is refused when its own query is scan-class.
        const counted = await call(`/v2/projects/${projectId}/${ROUTES[shape.family]}/count`, { as: tenant, body });
        const { sort: _sort, ...unsorted } = shape.body;
        if (cost(unsorted, shape.family).class === "scan") expectRefusedAsScan(counted, shape.reasons[0]);
        else expect(counted.status, JSON.stringify(counted.body)).toBe(200);
      });
    });
  }

  it("still serves the indexed shapes at once", async () => {
    await withSlotsTaken(tenant, async () => {
      for (const [name, shape] of Object.entries(INDEXED)) {
        const answer = await call(`/v2/projects/${projectId}/${ROUTES[shape.family]}/partial_search`, { as: tenant, body: { log_stream_id: runId, ...shape.body } });
        expect(answer.status, `${name}: ${JSON.stringify(answer.body)}`).toBe(200);
      }
    });
  });

  it("serves the scans again once a slot is free, and gives it back", async () => {
    const answer = await call(`/v2/projects/${projectId}/spans/partial_search`, { as: tenant, body: { log_stream_id: runId, ...SCANS["a metric comparison without a sort on that metric"]!.body } });
    expect(answer.status).toBe(200);
    expect(await slotsOf(tenant).inUse()).toBe(0);
  });

  it("refuses a deletion dry run, which counts every record below each match, and serves it with a free slot", async () => {
    const dryRun = () => call("/v2/org-jobs/delete-by-metadata?dry_run=true", { as: tenant, body: { metadata_key: "customer", metadata_value: "acme" } });
    await withSlotsTaken(tenant, async () => expectRefusedAsScan(await dryRun(), "dry run"));
    const served = await dryRun();
    expect(served.status, JSON.stringify(served.body)).toBe(200);
    expect(served.body.would_delete).toEqual({ sessions: 0, traces: 1, spans: 1 });
    expect(await slotsOf(tenant).inUse()).toBe(0);
  });
});
