/**
 * The query plans of the benchmark's search shapes, on the SQLite inside workerd (the engine D1
 * runs): each is served by the index docs/search.md names, reads the page in index order (no sort
 * of the run: the only sort is of the page itself, outside), and keeps that plan after ANALYZE
 * (D1 runs it on `PRAGMA optimize`).
 */
import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { compileSearchQuery } from "../src/search/compile-search-query";
import { normalizeSearchRequest } from "../src/search/normalize-search-request";
import type { SearchRequestBody } from "../src/search/search-schemas";

const ORG = crypto.randomUUID();
const PROJECT = crypto.randomUUID();
const RUN = crypto.randomUUID();
const OTHER_RUN = crypto.randomUUID();
const T0 = 1_700_000_000_000_000;

interface Shape {
  family: "span" | "trace" | "session";
  body: Partial<SearchRequestBody>;
  /** Plan lines that must appear, in this order. */
  plan: RegExp[];
  /** Whether the run may be sorted (a scan shape sorted on a column no index orders). */
  sorts?: boolean;
  /**
   * Compiled with the text index (src/search/text-driver.ts): "drives" when it serves the page
   * (its bounded candidates are then sorted), "scans" when the search has no needle it can use.
   */
  textIndex?: "drives" | "scans";
}

const leaf = (type: string, column_id: string, operator: string, value: unknown) => ({ type, column_id, operator, value });
const iso = (micros: number) => new Date(micros / 1000).toISOString();

const SHAPES: Record<string, Shape> = {
  "first page": { family: "span", body: {}, plan: [/SEARCH r USING INDEX records_family_order \(family_key=\?\)/] },
  "date range": {
    family: "span",
    body: { filters: [leaf("date", "created_at", "gte", iso(T0 + 1e9)), leaf("date", "created_at", "lt", iso(T0 + 2e9))] },
    plan: [/SEARCH r USING (COVERING )?INDEX records_family_order \(family_key=\? AND created_at>\? AND created_at<\?\)/],
  },
  "type and model": {
    family: "span",
    body: { filters: [leaf("text", "type", "eq", "llm"), leaf("text", "model", "eq", "model-3")] },
    plan: [/SEARCH r USING INDEX records_family_(model|type)_order \(family_key=\? AND (model|type)=\?\)/],
  },
  "user_metadata eq": {
    family: "trace",
    body: { filters: [leaf("text", "user_metadata.customer", "eq", "c17")] },
    plan: [/SEARCH dd USING COVERING INDEX record_metadata_family_key_value_order \(family_key=\? AND key=\? AND value=\?\)/, /SEARCH r USING INTEGER PRIMARY KEY \(rowid=\?\)/],
  },
  "user_metadata eq and a date range": {
    family: "trace",
    body: { filters: [leaf("text", "user_metadata.customer", "eq", "c17"), leaf("date", "created_at", "gt", iso(T0))] },
    plan: [/SEARCH dd USING COVERING INDEX record_metadata_family_key_value_order \(family_key=\? AND key=\? AND value=\? AND created_at>\?\)/],
  },
  "tag contains": {
    family: "trace",
    body: { filters: [leaf("collection", "tags", "contains", "tag-7")] },
    plan: [/SEARCH dt USING COVERING INDEX record_tags_family_tag_order \(family_key=\? AND tag=\?\)/, /SEARCH r USING INTEGER PRIMARY KEY \(rowid=\?\)/],
  },
  "metric gt, sorted by it": {
    family: "span",
    body: { filters: [leaf("number", "metrics/toxicity", "gt", 0.9)], sort: { column_id: "metrics/toxicity", ascending: false } },
    plan: [/SEARCH dm USING PRIMARY KEY \(metric_key=\? AND value>\?\)/],
  },
  "metric sort, records without it last": {
    family: "trace",
    body: { sort: { column_id: "metrics/toxicity" } },
    plan: [/SEARCH dm USING PRIMARY KEY \(metric_key=\?\)/, /SEARCH r USING INDEX records_family_id_order \(family_key=\?\)/],
  },
  "not (or of two leaves)": {
    family: "span",
    body: { filter_tree: { not: { or: [{ filter: leaf("text", "type", "eq", "tool") }, { filter: leaf("number", "status_code", "gte", 500) }] } } },
    plan: [/SEARCH r USING INDEX records_family_order \(family_key=\?\)/],
  },
  "input contains (a scan of the run, in order: past the text index's bound)": {
    family: "span",
    body: { filters: [leaf("text", "input", "contains", "topic 4321")] },
    plan: [/SEARCH r USING INDEX records_family_order \(family_key=\?\)/],
  },
  "input contains, through the text index": {
    family: "span",
    body: { filters: [leaf("text", "input", "contains", "topic 4321"), leaf("number", "status_code", "eq", 200)] },
    // The candidates materialized once; few of them: each read by row key; many: the run's order index walked.
    plan: [
      /MATERIALIZE tcand/,
      /SCAN tx VIRTUAL TABLE INDEX 0:M/,
      /SEARCH tu USING (COVERING )?INDEX records_family_(id_)?order \(family_key=\?\)/,
      /SEARCH r USING INTEGER PRIMARY KEY \(rowid=\?\)/,
      /SEARCH r USING INDEX records_family_order \(family_key=\?\)/,
    ],
    textIndex: "drives",
  },
  "name contains, case-insensitive, sorted by name, through the text index": {
    family: "trace",
    body: { filters: [{ ...leaf("text", "name", "contains", "AME-4"), case_sensitive: false }], sort: { column_id: "name" } },
    plan: [/SCAN tx VIRTUAL TABLE INDEX 0:M/, /SEARCH r USING INTEGER PRIMARY KEY \(rowid=\?\)/],
    textIndex: "drives",
  },
  "the explorer's search box (input, output or name contains, case-insensitive) ANDed with a filter, through the text index": {
    family: "trace",
    body: {
      filter_tree: {
        and: [
          { or: ["input", "output", "name"].map((column) => ({ ...leaf("text", column, "contains", "Topic 43"), case_sensitive: false })) },
          leaf("number", "status_code", "eq", 200),
        ],
      },
    },
    plan: [/MATERIALIZE tcand/, /SCAN tx VIRTUAL TABLE INDEX 0:M/, /SEARCH r USING INTEGER PRIMARY KEY \(rowid=\?\)/],
    textIndex: "drives",
  },
  "input contains two characters (no trigram: a scan)": {
    family: "span",
    body: { filters: [leaf("text", "input", "contains", "43")] },
    plan: [/SEARCH r USING INDEX records_family_order \(family_key=\?\)/],
    textIndex: "scans",
  },
  "deep page": { family: "span", body: { starting_token: 5_000 }, plan: [/SEARCH r USING INDEX records_family_order \(family_key=\?\)/] },
  "sorted by id": { family: "span", body: { sort: { column_id: "id", ascending: false } }, plan: [/SEARCH r USING (COVERING )?INDEX records_family_id_order \(family_key=\?\)/] },
  "traces with span counts": {
    family: "trace",
    body: { include_counts: true },
    plan: [/SEARCH r USING INDEX records_family_order/, /SEARCH c USING INDEX records_trace \(trace_id=\? AND record_type=\?\)/],
  },
  "sessions with trace counts": {
    family: "session",
    body: { include_counts: true },
    plan: [/SEARCH r USING INDEX records_family_order/, /SEARCH c USING INDEX records_session \(session_id=\? AND record_type=\?\)/],
  },
};

async function planOf(shape: Shape): Promise<{ id: number; detail: string; parent: number }[]> {
  const query = normalizeSearchRequest({ log_stream_id: RUN, ...shape.body } as SearchRequestBody, shape.family, "partial");
  const compiled = compileSearchQuery(query, { organizationId: ORG, projectId: PROJECT, runId: RUN, runKind: "log_stream" }, { textIndexBound: shape.textIndex ? 20_000 : null });
  expect(compiled.candidateCount !== undefined, "whether the text index drives the page").toBe(shape.textIndex === "drives");
  const { results } = await env.DB.prepare(`EXPLAIN QUERY PLAN ${compiled.sql}`).bind(...compiled.params).all<{ id: number; detail: string; parent: number }>();
  return results;
}

function expectServed(name: string, shape: Shape, plan: { id: number; detail: string; parent: number }[]) {
  const lines = plan.map((p) => p.detail);
  let from = 0;
  for (const wanted of shape.plan) {
    const at = lines.findIndex((line, i) => i >= from && wanted.test(line));
    expect(at, `${name}: ${wanted} in\n${lines.join("\n")}`).toBeGreaterThanOrEqual(0);
    from = at + 1;
  }
  // The page (at most limit + 1 rows) is sorted outside the statement that reads it (by the
  // byte budget's window and the final order); nothing that reads the run (the "arms"
  // co-routine and everything below it) sorts.
  const readingRun = new Set<number>();
  for (const p of plan) {
    if (p.detail === "CO-ROUTINE arms" || readingRun.has(p.parent)) readingRun.add(p.id);
  }
  // (A text-index page is a compound of its two arms, which SQLite flattens: no "arms" co-routine.)
  if (shape.textIndex !== "drives") expect(readingRun.size, `${name}: no "arms" co-routine in\n${lines.join("\n")}`).toBeGreaterThan(0);
  // The text index's candidates (at most its bound) are sorted; nothing else is.
  const innerSorts = plan.filter((p) => /USE TEMP B-TREE/.test(p.detail) && readingRun.has(p.id));
  if (shape.textIndex !== "drives") expect(innerSorts, `${name}: sorts inside\n${lines.join("\n")}`).toEqual([]);
  expect(lines.filter((l) => /^SCAN (r|records)\b/.test(l)), `${name}: table scans\n${lines.join("\n")}`).toEqual([]);
}

beforeAll(async () => {
  const traces = 3000;
  await env.DB.batch([
    env.DB.prepare("INSERT INTO organizations (id, name, created_at) VALUES (?, 'o', 0)").bind(ORG),
    env.DB.prepare("INSERT INTO projects (id, organization_id, name, type, created_at, updated_at) VALUES (?, ?, 'p', 'gen_ai', 0, 0)").bind(PROJECT, ORG),
    env.DB.prepare("INSERT INTO runs (id, organization_id, project_id, kind, name, created_at, updated_at) VALUES (?, ?, ?, 'log_stream', 'a', 0, 0), (?, ?, ?, 'log_stream', 'b', 0, 0)").bind(RUN, ORG, PROJECT, OTHER_RUN, ORG, PROJECT),
    // The catalog serves as the shard of these records: it must hold the project for writing.
    env.DB.prepare("INSERT INTO shard_projects (project_id, organization_id, state, updated_at) VALUES (?, ?, 'active', 0)").bind(PROJECT, ORG),
    // Sessions, traces (ten per session) and spans (nine per trace) of two runs, kinds and values mixed.
    env.DB.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ?1 * 11 - 1)
       INSERT INTO records (id, organization_id, project_id, run_id, record_type, type, name, created_at, input, status_code, session_id, trace_id, parent_id, model)
       SELECT printf('r-%07d', i), ?2, ?3, CASE WHEN i % 7 = 0 THEN ?5 ELSE ?4 END,
         CASE WHEN i % 110 = 0 THEN 'session' WHEN i % 11 = 0 THEN 'trace' ELSE 'span' END,
         CASE WHEN i % 110 = 0 THEN 'session' WHEN i % 11 = 0 THEN 'trace' ELSE (CASE (i * 7) % 6 WHEN 0 THEN 'tool' WHEN 1 THEN 'agent' WHEN 2 THEN 'retriever' ELSE 'llm' END) END,
         'name-' || (i % 97), ?6 + i * 1000000, 'input about topic ' || (i * 31 % 5000), CASE WHEN i % 10 = 0 THEN 500 ELSE 200 END,
         printf('r-%07d', i - i % 110), printf('r-%07d', i - i % 11), printf('r-%07d', i - i % 11),
         CASE WHEN i % 11 <> 0 AND (i * 7) % 6 >= 3 THEN 'model-' || (i % 8) END
       FROM n`,
    ).bind(traces, ORG, PROJECT, RUN, OTHER_RUN, T0),
    // Each record in its run's family (what the ingest upsert sets).
    env.DB.prepare("UPDATE records SET family_key = (SELECT f.key FROM run_families AS f WHERE f.run_id = records.run_id AND f.record_type = records.record_type) WHERE organization_id = ?").bind(ORG),
    env.DB.prepare("INSERT INTO record_metadata (record_rid, record_id, key, value, family_key, created_at) SELECT rid, id, 'customer', 'c' || (rid * 13 % 100), family_key, created_at FROM records WHERE record_type <> 'session' AND organization_id = ?").bind(ORG),
    env.DB.prepare("INSERT INTO record_tags (record_rid, record_id, tag, family_key, created_at) SELECT rid, id, 'tag-' || (rid * 17 % 20), family_key, created_at FROM records WHERE record_type <> 'session' AND rid % 3 <> 0 AND run_id IN (?, ?)").bind(RUN, OTHER_RUN),
    // Metric rows follow the metrics JSON (record_metrics_on_update).
    env.DB.prepare("UPDATE records SET metrics = json_object('toxicity', (rid * 37 % 1000) / 1000.0) WHERE type IN ('llm', 'trace') AND rid % 2 = 0 AND run_id IN (?, ?)").bind(RUN, OTHER_RUN),
  ]);
});

describe("search query plans", () => {
  it("runs on a SQLite with the JSON operators the statements use", async () => {
    const row = await env.DB.prepare(`SELECT ('[1,"a",[2]]' ->> 1) AS x, ('[1,"a",[2]]' -> 2) AS y`).first<{ x: string; y: string }>();
    expect(row).toEqual({ x: "a", y: "[2]" });
  });

  for (const [name, shape] of Object.entries(SHAPES)) {
    it(`serves "${name}" from its index, in order`, async () => {
      expectServed(name, shape, await planOf(shape));
    });
  }

  it("keeps every plan once the tables are analyzed", async () => {
    await env.DB.prepare("ANALYZE").run();
    for (const [name, shape] of Object.entries(SHAPES)) expectServed(`${name} (analyzed)`, shape, await planOf(shape));
  });
});
