/**
 * Every way a search request can be refused: FastAPI-shaped 422s whose `loc` points into the
 * request (at the offending leaf's own field where there is one), never a 5xx, whatever is sent.
 */
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { SEARCH_LIMITS } from "../src/search/search-limits";
import { call } from "./support/client";
import { createTenant, type Tenant } from "./support/tenants";
import { createRun, type SearchFixture } from "./search-dataset";

let tenant: Tenant;
let fixture: SearchFixture;

async function search(route: string, body: Record<string, unknown>, selector: Record<string, unknown> = { log_stream_id: fixture.runId }) {
  return call(`/v2/projects/${fixture.projectId}/${route}/partial_search`, { as: tenant, body: { ...selector, ...body } });
}

/** The single 422 item of a request that has exactly one fault. */
async function fault(route: string, body: Record<string, unknown>, selector?: Record<string, unknown>) {
  const res = await search(route, body, selector);
  expect(res.status, JSON.stringify(res.body)).toBe(422);
  expect(res.body.detail, JSON.stringify(res.body)).toHaveLength(1);
  return res.body.detail[0] as { loc: (string | number)[]; type: string; msg: string; input?: unknown; ctx?: Record<string, unknown> };
}

const leaf = (extra: Record<string, unknown>) => ({ type: "text", column_id: "name", operator: "eq", value: "x", ...extra });

beforeAll(async () => {
  tenant = await createTenant();
  fixture = await createRun(tenant);
});

describe("search validation: columns", () => {
  it("an unknown column is a 422 at the leaf's column_id (or name, the seed's spelling)", async () => {
    const item = await fault("traces", { filters: [leaf({}), leaf({ column_id: "no_such_column" })] });
    expect(item).toMatchObject({ loc: ["body", "filters", 1, "column_id"], type: "value_error", input: "no_such_column" });
    expect(item.msg).toContain("unknown column 'no_such_column'");
    const seed = await fault("traces", { filters: [{ type: "text", name: "nope", operator: "eq", value: "x" }] });
    expect(seed.loc).toEqual(["body", "filters", 0, "name"]);
  });

  it("a column that does not apply to the searched kind is a 422", async () => {
    expect((await fault("traces", { filters: [leaf({ column_id: "model" })] })).msg).toContain("column 'model' does not apply to traces");
    expect((await fault("sessions", { filters: [{ type: "collection", column_id: "tags", operator: "contains", value: "x" }] })).loc).toEqual(["body", "filters", 0, "column_id"]);
    expect((await fault("sessions", { filters: [leaf({ column_id: "dataset_metadata.split" })] })).msg).toContain("does not apply to sessions");
    expect((await fault("traces", { filters: [{ type: "id", column_id: "trace_id", value: crypto.randomUUID() }] })).loc).toEqual(["body", "filters", 0, "column_id"]);
  });

  it("an empty metric name or metadata key is a 422", async () => {
    expect((await fault("spans", { filters: [{ type: "number", column_id: "metrics/", operator: "gt", value: 1 }] })).loc).toEqual(["body", "filters", 0, "column_id"]);
    expect((await fault("spans", { filters: [leaf({ column_id: "user_metadata." })] })).msg).toContain("names no metadata key");
  });

  it("a missing column is a 422 'missing' at column_id", async () => {
    expect(await fault("spans", { filters: [{ type: "text", operator: "eq", value: "x" }] })).toMatchObject({ loc: ["body", "filters", 0, "column_id"], type: "missing" });
  });
});

describe("search validation: types, operators and values", () => {
  it("a filter type that is not the column's is a 422 at the leaf's type", async () => {
    const item = await fault("spans", { filters: [{ type: "number", column_id: "name", operator: "gt", value: 1 }] });
    expect(item).toMatchObject({ loc: ["body", "filters", 0, "type"], type: "value_error" });
    expect(item.msg).toContain("column 'name' takes a text filter, not a number filter");
  });

  it("an unknown filter type is a union_tag_invalid", async () => {
    const item = await fault("spans", { filters: [leaf({ type: "regex" })] });
    expect(item).toMatchObject({ loc: ["body", "filters", 0, "type"], type: "union_tag_invalid", input: "regex" });
    expect(item.ctx).toMatchObject({ discriminator: "'type'", tag: "regex" });
  });

  const operatorCases: [string, Record<string, unknown>, string][] = [
    ["text gt", leaf({ operator: "gt" }), "'eq', 'ne', 'contains', 'one_of' or 'not_in'"],
    ["number contains", { type: "number", column_id: "metrics/toxicity", operator: "contains", value: 1 }, "'eq', 'ne', 'gt', 'gte', 'lt', 'lte' or 'between'"],
    ["date between", { type: "date", column_id: "created_at", operator: "between", value: ["2026-01-01T00:00:00Z"] }, "'eq', 'ne', 'gt', 'gte', 'lt' or 'lte'"],
    ["boolean gt", { type: "boolean", column_id: "is_complete", operator: "gt", value: true }, "'eq' or 'ne'"],
    ["collection ne", { type: "collection", column_id: "tags", operator: "ne", value: "x" }, "'eq', 'contains', 'one_of' or 'not_in'"],
    ["id gt", { type: "id", column_id: "id", operator: "gt", value: crypto.randomUUID() }, "'eq', 'ne', 'one_of', 'not_in' or 'contains'"],
  ];
  it.each(operatorCases)("an operator the filter type does not have (%s) is a literal_error at operator", async (_, filter, expected) => {
    const item = await fault("spans", { filters: [filter] });
    expect(item).toMatchObject({ loc: ["body", "filters", 0, "operator"], type: "literal_error", msg: `Input should be ${expected}` });
  });

  it("a text leaf without an operator is a 422 'missing'", async () => {
    expect(await fault("spans", { filters: [{ type: "text", column_id: "name", value: "x" }] })).toMatchObject({ loc: ["body", "filters", 0, "operator"], type: "missing" });
  });

  it("a leaf without a value is a 422 'missing'", async () => {
    expect(await fault("spans", { filters: [{ type: "text", column_id: "name", operator: "eq" }] })).toMatchObject({ loc: ["body", "filters", 0, "value"], type: "missing" });
  });

  const valueCases: [string, Record<string, unknown>, (string | number)[], string][] = [
    ["number from a word", { type: "number", column_id: "metrics/toxicity", operator: "gt", value: "high" }, ["value"], "float_parsing"],
    ["number from a list", { type: "number", column_id: "status_code", operator: "eq", value: [1] }, ["value"], "float_type"],
    ["number from a boolean", { type: "number", column_id: "status_code", operator: "eq", value: true }, ["value"], "float_type"],
    ["text from a number", leaf({ value: 5 }), ["value"], "string_type"],
    ["text eq from a list", leaf({ value: ["a"] }), ["value"], "string_type"],
    ["text one_of element", leaf({ operator: "one_of", value: ["a", 7] }), ["value", 1], "string_type"],
    ["text one_of from an object", leaf({ operator: "one_of", value: { a: 1 } }), ["value"], "list_type"],
    ["uuid", { type: "id", column_id: "id", value: "not-a-uuid" }, ["value"], "uuid_parsing"],
    ["uuid list element", { type: "id", column_id: "id", operator: "one_of", value: [crypto.randomUUID(), "x"] }, ["value", 1], "uuid_parsing"],
    ["uuid from a number", { type: "id", column_id: "id", value: 12 }, ["value"], "uuid_type"],
    ["date", { type: "date", column_id: "created_at", operator: "gt", value: "yesterday" }, ["value"], "datetime_from_date_parsing"],
    ["date out of range", { type: "date", column_id: "created_at", operator: "gt", value: "2026-13-45T00:00:00Z" }, ["value"], "datetime_from_date_parsing"],
    ["date from a number", { type: "date", column_id: "created_at", operator: "gt", value: 1 }, ["value"], "datetime_type"],
    ["boolean from a word", { type: "boolean", column_id: "is_complete", value: "maybe" }, ["value"], "bool_parsing"],
    ["boolean from a list", { type: "boolean", column_id: "is_complete", value: [] }, ["value"], "bool_type"],
    ["between with one bound", { type: "number", column_id: "status_code", operator: "between", value: [1] }, ["value"], "too_short"],
    ["between with three bounds", { type: "number", column_id: "status_code", operator: "between", value: [1, 2, 3] }, ["value"], "too_long"],
    ["between upside down", { type: "number", column_id: "status_code", operator: "between", value: [5, 1] }, ["value"], "value_error"],
    ["between from a number", { type: "number", column_id: "status_code", operator: "between", value: 5 }, ["value"], "list_type"],
    ["tags contains a list", { type: "collection", column_id: "tags", operator: "contains", value: ["a"] }, ["value"], "string_type"],
    ["case_sensitive not a boolean", leaf({ case_sensitive: "no" }), ["case_sensitive"], "bool_type"],
    ["fully_annotated user id", { type: "fully_annotated", user_ids: ["x"] }, ["user_ids", 0], "uuid_parsing"],
  ];
  it.each(valueCases)("a wrong value (%s) is a 422 at the value", async (_, filter, at, type) => {
    expect(await fault("spans", { filters: [filter] })).toMatchObject({ loc: ["body", "filters", 0, ...at], type });
  });

  it("points into nested nodes", async () => {
    const item = await fault("spans", { filter_tree: { and: [leaf({}), { not: { or: [leaf({}), { filter: leaf({ column_id: "nope" }) }] } }] } });
    expect(item.loc).toEqual(["body", "filter_tree", "and", 1, "not", "or", 1, "filter", "column_id"]);
  });

  it("refuses elements that are no node or leaf", async () => {
    expect(await fault("spans", { filters: [5] })).toMatchObject({ loc: ["body", "filters", 0], type: "model_attributes_type" });
    expect(await fault("spans", { filter_tree: { and: leaf({}) } })).toMatchObject({ loc: ["body", "filter_tree", "and"], type: "list_type" });
    expect(await fault("spans", { filter_tree: { and: [], or: [] } })).toMatchObject({ loc: ["body", "filter_tree"], type: "value_error" });
    expect(await fault("spans", { filter_tree: { filter: "name" } })).toMatchObject({ loc: ["body", "filter_tree", "filter"], type: "model_attributes_type" });
    expect(await fault("spans", { filters: { and: [] } })).toMatchObject({ loc: ["body", "filters"], type: "list_type" });
  });

  it("reports every fault of a request, not only the first", async () => {
    const res = await search("spans", { filters: [leaf({ column_id: "nope" }), leaf({ operator: "gt" })], sort: { column_id: "tags" } });
    expect(res.status).toBe(422);
    expect(res.body.detail.map((d: { loc: unknown }) => d.loc)).toEqual([
      ["body", "filters", 0, "column_id"],
      ["body", "filters", 1, "operator"],
      ["body", "sort", "column_id"],
    ]);
  });
});

describe("search validation: published limits", () => {
  const deep = (levels: number) => {
    let node: unknown = leaf({});
    for (let i = 1; i < levels; i++) node = { not: node };
    return node;
  };

  it(`accepts depth ${SEARCH_LIMITS.maxTreeDepth} and refuses one more level`, async () => {
    expect((await search("spans", { filter_tree: deep(SEARCH_LIMITS.maxTreeDepth) })).status).toBe(200);
    const item = await fault("spans", { filter_tree: deep(SEARCH_LIMITS.maxTreeDepth + 1) });
    expect(item.type).toBe("value_error");
    expect(item.loc).toEqual(["body", "filter_tree", ...Array(SEARCH_LIMITS.maxTreeDepth).fill("not")]);
    expect(item.msg).toContain(`at most ${SEARCH_LIMITS.maxTreeDepth} levels`);
  });

  it(`accepts ${SEARCH_LIMITS.maxLeaves} leaves and refuses one more, pointing at it`, async () => {
    const leaves = (n: number) => Array.from({ length: n }, (_, i) => leaf({ value: `v${i}` }));
    expect((await search("spans", { filters: leaves(SEARCH_LIMITS.maxLeaves - 1), filter_tree: leaf({}) })).status).toBe(200);
    const item = await fault("spans", { filters: leaves(SEARCH_LIMITS.maxLeaves), filter_tree: { filter: leaf({}) } });
    expect(item.loc).toEqual(["body", "filter_tree", "filter"]);
    expect(item.msg).toContain(`at most ${SEARCH_LIMITS.maxLeaves} filter leaves`);
  });

  it(`refuses more than ${SEARCH_LIMITS.maxNodes} nodes, without walking huge lists`, async () => {
    const item = await fault("spans", { filters: Array.from({ length: SEARCH_LIMITS.maxNodes + 1 }, () => ({ and: [] })) });
    expect(item).toMatchObject({ loc: ["body", "filters"], type: "value_error" });
    expect(item.msg).toContain(`at most ${SEARCH_LIMITS.maxNodes} filter nodes`);
    // Wide, but under the route's count of JSON values (past it the body is a 413 before any parse).
    const wide = await fault("spans", { filter_tree: { not: { or: Array.from({ length: 40_000 }, (_, i) => i) } } });
    expect(wide.loc).toEqual(["body", "filter_tree", "not", "or"]);
  });

  it(`refuses a list of more than ${SEARCH_LIMITS.maxListLength} values`, async () => {
    const item = await fault("spans", { filters: [leaf({ operator: "one_of", value: Array.from({ length: SEARCH_LIMITS.maxListLength + 1 }, (_, i) => `v${i}`) })] });
    expect(item).toMatchObject({ loc: ["body", "filters", 0, "value"], type: "too_long", ctx: { max_length: SEARCH_LIMITS.maxListLength } });
  });

  it(`refuses a value longer than ${SEARCH_LIMITS.maxTextValueLength} characters`, async () => {
    const item = await fault("spans", { filters: [leaf({ value: "x".repeat(SEARCH_LIMITS.maxTextValueLength + 1) })] });
    expect(item).toMatchObject({ loc: ["body", "filters", 0, "value"], type: "string_too_long" });
  });

  it("refuses filter values that would not fit in one parameter", async () => {
    const big = Array.from({ length: 300 }, (_, i) => `${i}`.padEnd(4000, "x"));
    const item = await fault("spans", { filters: [leaf({ operator: "one_of", value: big })] });
    expect(item).toMatchObject({ loc: ["body"], type: "value_error" });
  });

  const pageCases: [Record<string, unknown>, (string | number)[], string][] = [
    [{ pagination: { limit: 1001 } }, ["body", "pagination", "limit"], "less_than_equal"],
    [{ limit: 1001 }, ["body", "limit"], "less_than_equal"],
    [{ limit: 0 }, ["body", "limit"], "greater_than_equal"],
    [{ pagination: { starting_token: -1 } }, ["body", "pagination", "starting_token"], "greater_than_equal"],
    [{ starting_token: 1.5 }, ["body", "starting_token"], "int_from_float"],
    [{ limit: "ten" }, ["body", "limit"], "int_parsing"],
  ];
  it.each(pageCases)("refuses page %j", async (body, loc, type) => {
    expect(await fault("spans", body)).toMatchObject({ loc, type });
  });

  it("accepts a page of 1000", async () => {
    expect((await search("spans", { pagination: { limit: 1000 } })).status).toBe(200);
  });
});

describe("search validation: run selector, sort, projection, path", () => {
  it("refuses no run selector and two run selectors", async () => {
    expect((await fault("traces", {}, {})).msg).toContain("exactly one of log_stream_id, experiment_id or metrics_testing_id");
    const two = await fault("traces", {}, { log_stream_id: fixture.runId, experiment_id: crypto.randomUUID() });
    expect(two.loc).toEqual(["body", "experiment_id"]);
  });

  it("refuses a malformed run id and project id", async () => {
    expect(await fault("traces", {}, { log_stream_id: "nope" })).toMatchObject({ loc: ["body", "log_stream_id"], type: "uuid_parsing" });
    const res = await call("/v2/projects/nope/traces/partial_search", { as: tenant, body: { log_stream_id: fixture.runId } });
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc).toEqual(["path", "project_id"]);
  });

  it("refuses sorts on unknown, unsortable, inapplicable or missing columns", async () => {
    expect((await fault("traces", { sort: { column_id: "nope" } })).loc).toEqual(["body", "sort", "column_id"]);
    expect((await fault("traces", { sort: { name: "nope" } })).loc).toEqual(["body", "sort", "name"]);
    expect((await fault("traces", { sort: { column_id: "tags" } })).msg).toContain("column 'tags' is not sortable");
    expect((await fault("traces", { sort: { column_id: "model" } })).msg).toContain("does not apply to traces");
    expect(await fault("traces", { sort: { ascending: true } })).toMatchObject({ loc: ["body", "sort", "column_id"], type: "missing" });
    expect(await fault("traces", { sort: { column_id: "name", sort_type: "custom" } })).toMatchObject({ loc: ["body", "sort", "sort_type"], type: "literal_error" });
    expect(await fault("traces", { sort: { column_id: "name", ascending: "up" } })).toMatchObject({ loc: ["body", "sort", "ascending"], type: "bool_parsing" });
  });

  it("refuses unknown selected columns, and ignores columns of other kinds", async () => {
    expect(await fault("traces", { select_columns: { column_ids: ["name", "nope"] } })).toMatchObject({ loc: ["body", "select_columns", "column_ids", 1], type: "value_error" });
    expect((await search("traces", { select_columns: { column_ids: ["name", "model"] } })).status).toBe(200);
  });

  it("checks the request before the run: a bad filter on a foreign run is a 422, not a 404", async () => {
    expect((await fault("traces", { filters: [leaf({ column_id: "nope" })] }, { log_stream_id: crypto.randomUUID() })).loc).toEqual(["body", "filters", 0, "column_id"]);
  });
});

describe("search validation: no input is a 5xx", () => {
  it("answers 200 or 422 to arbitrary filters, trees, sorts, pages and projections", { timeout: 60_000 }, async () => {
    const anything = fc.anything({ maxDepth: 4, withNullPrototype: false });
    const leafLike = fc.record(
      {
        type: fc.oneof(fc.constantFrom("id", "date", "number", "boolean", "collection", "text", "fully_annotated"), anything),
        column_id: fc.oneof(fc.constantFrom("name", "tags", "created_at", "metrics/x", "user_metadata.k", "dataset_metadata.k", "id", "is_complete"), anything),
        operator: fc.oneof(fc.constantFrom("eq", "ne", "gt", "between", "contains", "one_of", "not_in"), anything),
        value: anything,
        case_sensitive: anything,
      },
      { requiredKeys: [] },
    );
    const node = fc.oneof(leafLike, fc.record({ not: leafLike }), fc.record({ and: fc.array(leafLike, { maxLength: 3 }) }), fc.record({ or: fc.array(leafLike) }), anything);
    await fc.assert(
      fc.asyncProperty(
        fc.record(
          {
            filters: fc.oneof(fc.array(node, { maxLength: 3 }), anything),
            filter_tree: node,
            sort: fc.oneof(fc.record({ column_id: fc.oneof(fc.constantFrom("name", "metrics/x", "user_metadata.k"), anything), ascending: anything }, { requiredKeys: [] }), anything),
            pagination: fc.oneof(fc.record({ limit: anything, starting_token: anything }, { requiredKeys: [] }), anything),
            select_columns: anything,
            include_counts: anything,
          },
          { requiredKeys: [] },
        ),
        fc.constantFrom("traces", "spans", "sessions"),
        async (body, route) => {
          const res = await search(route, body as Record<string, unknown>);
          expect([200, 422], JSON.stringify({ body, response: res.body })).toContain(res.status);
        },
      ),
      { numRuns: 150 },
    );
  });
});
