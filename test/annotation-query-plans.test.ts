/**
 * The statements that write ratings and queue entries for a list of record ids (one JSON
 * parameter) find each record through records_project_record_id by (project_id, id): the list is
 * the outer loop. A plan that walks the project's records and probes the list for each costs the
 * project's size times the list's length: with 1,000 ids a chunk on a 1,000,000-record project
 * that is a billion comparisons per statement, and every search on the shard waits behind it
 * (docs/benchmarks.md, "Annotations (issue 20)").
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { addIdsStatement, addMatchesStatement, lastMatchStatement, listedIdsStatement, removeIdsStatement } from "../src/annotation-queues/queue-entries";
import { normalizeFilters } from "../src/search/normalize-search-request";
import { deleteRatingsStatement, ratingStatement, upsertRatingsStatement } from "../src/annotations/rating-store";

interface Captured {
  sql: string;
  params: unknown[];
}

/** A D1Database stand-in that hands back the statement a builder prepared, to be explained. */
const capture = {
  prepare: (sql: string) => ({ bind: (...params: unknown[]) => ({ sql, params }) }),
} as unknown as D1Database;

const ids = Array.from({ length: 3 }, (_, i) => `00000000-0000-0000-0000-00000000000${i}`);
const target = { projectId: "p", templateId: "t", annotatorId: "u", recordIds: ids, family: null };
const rating = { json: "true", num: 1 } as never;

const STATEMENTS: [string, Captured][] = [
  ["queue add by ids", addIdsStatement(capture, "q", "p", "run", ids, 1, 1) as unknown as Captured],
  ["queue add by ids, any run", addIdsStatement(capture, "q", "p", null, ids, 1, 1) as unknown as Captured],
  ["queue listed ids", listedIdsStatement(capture, "q", "p", ids) as unknown as Captured],
  ["queue remove by ids", removeIdsStatement(capture, "q", "p", ids) as unknown as Captured],
  ["rating upsert", upsertRatingsStatement(capture, target, rating, null, 1) as unknown as Captured],
  ["rating read", ratingStatement(capture, target) as unknown as Captured],
  ["rating delete", deleteRatingsStatement(capture, target) as unknown as Captured],
];

async function plan(db: D1Database, statement: Captured): Promise<string[]> {
  const { results } = await db.prepare(`EXPLAIN QUERY PLAN ${statement.sql}`).bind(...statement.params).all<{ detail: string }>();
  return results.map((row) => row.detail);
}

describe("annotation write plans: records looked up by (project_id, id), the id list outermost", () => {
  for (const [name, statement] of STATEMENTS) {
    for (const binding of ["DB", "SHARD_0"] as const) {
      it(`${name} (${binding})`, async () => {
        const lines = await plan(env[binding], statement);
        const text = lines.join("\n");
        // No table is scanned, and records (when read) only by a full key of the unique index.
        expect(lines.filter((line) => /^SCAN (?!json_each|j |\(subquery|CONSTANT ROW)/.test(line)), text).toEqual([]);
        for (const line of lines.filter((l) => /^SEARCH r /.test(l))) {
          expect(line, text).toMatch(/records_project_record_id \(project_id=\? AND id=\?\)|PRIMARY KEY|rid=\?/);
        }
        // The entries of a queue by their unique (queue_id, record_id) index, never by the queue alone.
        for (const line of lines.filter((l) => /annotation_queue_entries/.test(l) && /^SEARCH /.test(l))) {
          expect(line, text).toMatch(/record_id=\?|record_rid=\?/);
        }
      });
    }
  }
});

/** An add by filter: `created_at >=` (the benchmark's), after a chunk's last key. */
const since = normalizeFilters({ filter_tree: { filter: { type: "date", column_id: "created_at", operator: "gte", value: "2026-11-01T00:00:00Z" } }, filters: null } as never, "trace");
const after = { createdAt: 1_790_000_000_000_000, id: ids[0]! };
const CHUNK_STATEMENTS: [string, Captured][] = [
  ["queue add of a chunk of matches", addMatchesStatement(capture, "q", "p", "run", "trace", since, after, 125, 1, 1) as unknown as Captured],
  ["the last key of that chunk", lastMatchStatement(capture, "p", "run", "trace", since, after, 125) as unknown as Captured],
];

describe("the add by filter: a chunk is the run's next matches in native order, by index", () => {
  for (const [name, statement] of CHUNK_STATEMENTS) {
    for (const binding of ["DB", "SHARD_0"] as const) {
      it(`${name} (${binding})`, async () => {
        const lines = await plan(env[binding], statement);
        const text = lines.join("\n");
        // records walked from the chunk's key by the run family's order index, never scanned;
        // only the chunk itself (at most its LIMIT of rows) is scanned or sorted again.
        expect(lines.filter((line) => /^SCAN (?!m\b|\(subquery)/.test(line)), text).toEqual([]);
        expect(lines.filter((line) => /^SEARCH r /.test(line)), text).toEqual([expect.stringMatching(/^SEARCH r USING INDEX records_family_order \(family_key=\? AND created_at[<>]/)]);
      });
    }
  }
});
