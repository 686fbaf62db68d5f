/**
 * Request normalisation on its own (no HTTP, no database): both request shapes mean the same
 * query, defaults, and values converted to their stored form.
 */
import { describe, expect, it } from "vitest";
import { normalizeSearchRequest } from "../src/search/normalize-search-request";
import type { SearchRequestBody } from "../src/search/search-schemas";

const RUN = "3f1c2a1e-8f4d-4e6a-9c1b-2d3e4f5a6b7c";
const normalize = (body: Record<string, unknown>, family: "trace" | "span" | "session" = "span", mode: "partial" | "full" = "partial") =>
  normalizeSearchRequest({ log_stream_id: RUN, ...body } as SearchRequestBody, family, mode);

describe("search request normalisation", () => {
  it("reads the interface's shape and the SDK's shape as the same query", () => {
    const seed = normalize({
      pagination: { limit: 5, starting_token: 10 },
      sort: { name: "name", ascending: false, sort_type: "column" },
      filters: [{ type: "text", name: "name", operator: "eq", value: "x" }],
    });
    const sdk = normalize({
      limit: 5,
      starting_token: 10,
      sort: { column_id: "name", ascending: false },
      filter_tree: { filter: { column_id: "name", operator: "eq", value: "x" } },
    });
    expect(sdk).toEqual(seed);
    expect(seed).toMatchObject({ limit: 5, offset: 10, sort: { ascending: false, column: { kind: "standard", id: "name" } } });
  });

  it("applies the defaults: page of 100 from 0, native order, every field, no metrics", () => {
    const query = normalize({});
    expect(query).toMatchObject({ limit: 100, offset: 0, sort: null, includeCounts: false, includeMetricInfo: false, truncateFields: false });
    expect(query.projection).toEqual({ columns: null, metrics: new Set(), feedback: false });
    expect(query.filter).toEqual({ kind: "and", children: [] });
    expect(normalize({ sort: { column_id: "created_at" } }).sort?.ascending).toBe(true);
  });

  it("lets pagination win over the top-level keys when both are sent", () => {
    expect(normalize({ pagination: { limit: 7 }, limit: 9, starting_token: 3 })).toMatchObject({ limit: 7, offset: 3 });
  });

  it("returns full records from the search routes whatever select_columns says", () => {
    expect(normalize({ select_columns: { column_ids: ["name"] } }, "trace", "full").projection).toEqual({ columns: null, metrics: "all", feedback: true });
  });

  it("converts values to their stored form", () => {
    const leaves = normalize({
      filters: [
        { type: "id", column_id: "id", value: RUN.toUpperCase() },
        { type: "date", column_id: "created_at", operator: "gt", value: "2026-01-01T01:00:00.123456+01:00" },
        { type: "date", column_id: "created_at", operator: "lt", value: "2026-01-02" },
        { type: "boolean", column_id: "is_complete", value: false },
        { type: "number", column_id: "metrics/toxicity", operator: "gte", value: "0.5" },
        { type: "text", column_id: "name", operator: "one_of", value: "solo" },
        { column_id: "tags", operator: "contains", value: "t" },
      ],
    }).filter;
    expect(leaves).toEqual({
      kind: "and",
      children: [
        { kind: "leaf", leaf: expect.objectContaining({ kind: "compare", operator: "eq", value: RUN }) },
        { kind: "leaf", leaf: expect.objectContaining({ kind: "compare", operator: "gt", value: Date.parse("2026-01-01T00:00:00.123Z") * 1000 + 456 }) },
        { kind: "leaf", leaf: expect.objectContaining({ kind: "compare", operator: "lt", value: Date.parse("2026-01-02T00:00:00Z") * 1000 }) },
        { kind: "leaf", leaf: expect.objectContaining({ kind: "compare", operator: "eq", value: 0 }) },
        { kind: "leaf", leaf: expect.objectContaining({ kind: "compare", operator: "gte", value: 0.5 }) },
        { kind: "leaf", leaf: expect.objectContaining({ kind: "in", negated: false, values: ["solo"] }) },
        { kind: "leaf", leaf: expect.objectContaining({ kind: "contains", value: "t", column: expect.objectContaining({ id: "tags" }) }) },
      ],
    });
  });

  it("resolves metric, user metadata and dataset metadata columns, keys with dots included", () => {
    const query = normalize({
      filters: [
        { type: "number", column_id: "metrics/answer.relevance", operator: "gt", value: 1 },
        { type: "text", column_id: "user_metadata.a.b", operator: "eq", value: "x" },
        { type: "text", column_id: "dataset_metadata.split", operator: "eq", value: "x" },
      ],
      sort: { column_id: "metrics/answer.relevance" },
    });
    const columns = query.filter.kind === "and" ? query.filter.children.map((c) => (c.kind === "leaf" && c.leaf.kind !== "fully_annotated" ? c.leaf.column : null)) : [];
    expect(columns).toEqual([
      { kind: "metric", id: "metrics/answer.relevance", name: "answer.relevance" },
      { kind: "user_metadata", id: "user_metadata.a.b", key: "a.b" },
      { kind: "dataset_metadata", id: "dataset_metadata.split", key: "split" },
    ]);
    expect(query.sort?.column).toEqual({ kind: "metric", id: "metrics/answer.relevance", name: "answer.relevance" });
  });

  it("ignores case_sensitive where it has no meaning, and reads it where it has", () => {
    const query = normalize({
      filters: [
        { type: "id", column_id: "id", value: RUN, case_sensitive: "whatever" },
        { type: "text", column_id: "name", operator: "eq", value: "x", case_sensitive: false },
      ],
    });
    expect(query.filter).toMatchObject({ children: [{ leaf: { caseSensitive: true } }, { leaf: { caseSensitive: false } }] });
  });
});
