/**
 * The compiler on its own: every leaf of every type and operator is 0, never NULL, on a record
 * that has no value for its column (so NOT of it is 1); every statement binds exactly one
 * parameter; the largest request the limits allow compiles to a statement D1 accepts.
 */
import { env } from "cloudflare:test";
import { getTableColumns, sql } from "drizzle-orm";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import { beforeAll, describe, expect, it } from "vitest";
import { STANDARD_COLUMNS } from "../src/columns/standard-columns";
import { records } from "../src/db/schema";
import { compileFilter } from "../src/search/compile-filter-tree";
import { compileSearchQuery, type SearchScope } from "../src/search/compile-search-query";
import { OPERATORS_BY_TYPE } from "../src/search/filter-operators";
import { normalizeSearchRequest } from "../src/search/normalize-search-request";
import { bindAnnotationColumns } from "../src/search/bind-annotation-columns";
import { SEARCH_LIMITS } from "../src/search/search-limits";
import type { SearchRequestBody } from "../src/search/search-schemas";
import { from, r } from "../src/search/search-tables";
import { SqlParamPack } from "../src/search/sql-param-pack";

const ORG = crypto.randomUUID();
const PROJECT = crypto.randomUUID();
const RUN = crypto.randomUUID();
const BARE = crypto.randomUUID();
const scope: SearchScope = { organizationId: ORG, projectId: PROJECT, runId: RUN, runKind: "log_stream" };
const dialect = new SQLiteAsyncDialect();

/** A value of the right shape for a leaf of `type` with `operator`. */
function sampleValue(type: string, operator: string): unknown {
  if (operator === "one_of" || operator === "not_in") return type === "id" ? [crypto.randomUUID()] : ["x"];
  if (operator === "between") return [0, 10];
  switch (type) {
    case "id":
      return operator === "contains" ? "ab" : crypto.randomUUID();
    case "date":
      return "2026-01-01T00:00:00Z";
    case "number":
      return 1;
    case "boolean":
      return true;
    default:
      return "x";
  }
}

const body = (extra: Partial<SearchRequestBody>): SearchRequestBody => ({ log_stream_id: RUN, ...extra }) as SearchRequestBody;

/** Evaluates a filter element on the bare record: [value, value IS NULL]. */
async function evaluateOnBare(element: unknown): Promise<[unknown, unknown]> {
  const query = normalizeSearchRequest(body({ filters: [element] }), "span", "partial");
  // fully_annotated reads the project's templates (it has none here).
  await bindAnnotationColumns(env.DB, PROJECT, query);
  const pack = new SqlParamPack();
  const test = compileFilter(query.filter, pack);
  const statement = dialect.sqlToQuery(sql`SELECT (${test}) AS "v", (${test}) IS NULL AS "n" FROM ${from(r)} WHERE ${r.id} = ${pack.value(BARE)}`);
  const row = await env.DB.prepare(statement.sql).bind(pack.toParameter()).first<{ v: unknown; n: unknown }>();
  return [row?.v, row?.n];
}

describe("search compiler", () => {
  beforeAll(async () => {
    await env.DB.batch([
      env.DB.prepare("INSERT INTO organizations (id, name, created_at) VALUES (?, 'o', 0)").bind(ORG),
      env.DB.prepare("INSERT INTO projects (id, organization_id, name, type, created_at, updated_at) VALUES (?, ?, 'p', 'gen_ai', 0, 0)").bind(PROJECT, ORG),
      env.DB.prepare("INSERT INTO runs (id, organization_id, project_id, kind, name, created_at, updated_at) VALUES (?, ?, ?, 'log_stream', 'r', 0, 0)").bind(RUN, ORG, PROJECT),
      // The catalog serves as the shard of these records: it must hold the project for writing.
    env.DB.prepare("INSERT INTO shard_projects (project_id, organization_id, state, updated_at) VALUES (?, ?, 'active', 0)").bind(PROJECT, ORG),
      // A span with no value in any nullable column, no metadata, tags, metrics or dataset metadata.
      env.DB.prepare("INSERT INTO records (id, organization_id, project_id, run_id, record_type, type, name, created_at) VALUES (?, ?, ?, ?, 'span', 'llm', '', 1)").bind(BARE, ORG, PROJECT, RUN),
    ]);
  });

  // Columns a record can lack a value for: stored in a nullable column (has_children, optional in
  // the catalogue, is stored as 0 or 1 and so always has one).
  const nullable = new Set(Object.values(getTableColumns(records)).filter((c) => !c.notNull).map((c) => c.name));
  const missing: [string, string, string][] = [];
  for (const column of STANDARD_COLUMNS) {
    if (column.id === "tags" || !nullable.has(column.storage)) continue;
    for (const operator of OPERATORS_BY_TYPE[column.filter_type]) missing.push([column.id, column.filter_type, operator]);
  }
  for (const operator of OPERATORS_BY_TYPE.number) missing.push(["metrics/toxicity", "number", operator]);
  for (const operator of OPERATORS_BY_TYPE.text) {
    missing.push(["user_metadata.env", "text", operator], ["dataset_metadata.split", "text", operator]);
  }

  it.each(missing)("a %s %s leaf with %s is 0, never NULL, on a record without a value, and NOT of it is 1", async (column, type, operator) => {
    const leaf = { type, column_id: column, operator, value: sampleValue(type, operator) };
    expect(await evaluateOnBare(leaf)).toEqual([0, 0]);
    expect(await evaluateOnBare({ not: leaf })).toEqual([1, 0]);
    if (type === "text") {
      expect(await evaluateOnBare({ ...leaf, case_sensitive: false })).toEqual([0, 0]);
      expect(await evaluateOnBare({ not: { ...leaf, case_sensitive: false } })).toEqual([1, 0]);
    }
  });

  it("treats the tag list as always present: a record without tags has none of any list and equals []", async () => {
    expect(await evaluateOnBare({ type: "collection", column_id: "tags", operator: "contains", value: "x" })).toEqual([0, 0]);
    expect(await evaluateOnBare({ type: "collection", column_id: "tags", operator: "one_of", value: ["x"] })).toEqual([0, 0]);
    expect(await evaluateOnBare({ type: "collection", column_id: "tags", operator: "not_in", value: ["x"] })).toEqual([1, 0]);
    expect(await evaluateOnBare({ type: "collection", column_id: "tags", operator: "eq", value: [] })).toEqual([1, 0]);
    expect(await evaluateOnBare({ type: "collection", column_id: "tags", operator: "eq", value: ["x"] })).toEqual([0, 0]);
  });

  it("compiles empty AND as true, empty OR as false and fully_annotated (a project without templates) as false", async () => {
    expect(await evaluateOnBare({ and: [] })).toEqual([1, 0]);
    expect(await evaluateOnBare({ or: [] })).toEqual([0, 0]);
    expect(await evaluateOnBare({ type: "fully_annotated", user_ids: [] })).toEqual([0, 0]);
    expect(await evaluateOnBare({ not: { type: "fully_annotated" } })).toEqual([1, 0]);
  });

  const shapes: [string, Partial<SearchRequestBody>][] = [
    ["native order", {}],
    ["a metadata driver", { filters: [{ type: "text", column_id: "user_metadata.env", operator: "eq", value: "prod" }] }],
    ["a tag driver and a date range", { filters: [{ type: "collection", column_id: "tags", operator: "contains", value: "a" }, { type: "date", column_id: "created_at", operator: "gte", value: "2026-01-01T00:00:00Z" }] }],
    ["a metric sort with its second arm", { sort: { column_id: "metrics/toxicity", ascending: false }, filters: [{ type: "text", column_id: "name", operator: "eq", value: "a" }] }],
    ["a metric sort with a range", { sort: { column_id: "metrics/toxicity" }, filters: [{ type: "number", column_id: "metrics/toxicity", operator: "gt", value: 0.5 }] }],
    ["a metadata sort", { sort: { column_id: "user_metadata.env" } }],
    ["a 5,000-element one_of", { filters: [{ type: "id", column_id: "id", operator: "one_of", value: Array.from({ length: 5000 }, () => crypto.randomUUID()) }] }],
  ];

  it.each(shapes)("binds exactly one parameter for %s", (_, extra) => {
    const compiled = compileSearchQuery(normalizeSearchRequest(body(extra), "span", "partial"), scope);
    expect(compiled.params).toHaveLength(1);
    expect(compiled.sql.match(/\?\d*/g)?.every((p) => p === "?1")).toBe(true);
  });

  it("keeps the largest request the limits allow under D1's 100 KB statement size, and runs it", async () => {
    const heaviest = (i: number) => ({ type: "collection", column_id: "tags", operator: "eq", value: [`t${i}`], case_sensitive: false });
    const leaves = Array.from({ length: SEARCH_LIMITS.maxLeaves }, (_, i) => heaviest(i));
    // Nested as deep as allowed, under a metric sort whose filter is repeated in three places.
    let tree: unknown = { or: leaves.slice(0, 10) };
    for (let depth = 2; depth < SEARCH_LIMITS.maxTreeDepth; depth++) tree = { not: tree };
    const query = normalizeSearchRequest(
      body({ filters: [...leaves.slice(10), tree], sort: { column_id: "metrics/toxicity" }, include_counts: true }),
      "trace",
      "partial",
    );
    const compiled = compileSearchQuery(query, scope);
    expect(compiled.sql.length).toBeLessThan(100_000);
    await expect(env.DB.prepare(compiled.sql).bind(...compiled.params).all()).resolves.toBeDefined();
  });
});
