/**
 * Every deletion statement is driven by an index: SQLite's plan (in workerd's own SQLite) may
 * scan only the small, bounded intermediate sets (the chunk's roots, the dry run's page), never a
 * table. Matches come from record_metadata_org_key_value, children from records_trace and
 * records_session, side rows through their primary keys.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import * as sql from "../src/deletion/deletion-sql";

/** Names that stand for bounded intermediate results in the plans: CTEs, their aliases, subqueries. */
const BOUNDED =
  /^SCAN (roots|root_sessions|candidate_traces|seeds|subtree|ancestors|counted_roots|active|examined|page|page_traces|rs|ct|p|pt|m|a|\(subquery-\d+\)|CONSTANT ROW)$/;

async function plan(statement: string): Promise<string[]> {
  const parameters = Math.max(0, ...[...statement.matchAll(/\?(\d+)/g)].map((m) => Number(m[1])));
  const { results } = await env.DB.prepare(`EXPLAIN QUERY PLAN ${statement}`)
    .bind(...Array.from({ length: parameters }, () => "x"))
    .all<{ detail: string }>();
  return results.map((r) => r.detail);
}

/** What drives each kind of statement: matches, children, tombstones. */
function expectedIndexes(statement: string): RegExp[] {
  const expected: RegExp[] = [];
  if (/FROM record_metadata\s+WHERE organization_id = \?1/.test(statement)) expected.push(/record_metadata_org_key_value/);
  if (/s\.trace_id = ct\.id/.test(statement)) expected.push(/records_trace/);
  if (/\.session_id = rs\.id/.test(statement)) expected.push(/records_session/);
  if (/c\.parent_id = subtree\.id/.test(statement)) expected.push(/records_parent/);
  if (/gt\.deleted_at = \?1/.test(statement)) expected.push(/record_tombstones_deleted/);
  return expected;
}

const STATEMENTS: [string, string][] = [
  ...sql.CHUNK_STATEMENTS.map((s, i): [string, string] => [`chunk statement ${i + 1} (${s.sql.trim().split(/\s+/).slice(0, 6).join(" ")})`, s.sql]),
  ["ANY_MATCH", sql.ANY_MATCH],
  ["COUNT_SESSION_PAGE", sql.COUNT_SESSION_PAGE],
  ["COUNT_TRACE_PAGE", sql.COUNT_TRACE_PAGE],
  ["COUNT_SPAN_PAGE", sql.COUNT_SPAN_PAGE],
];

describe("deletion query plans", () => {
  for (const [name, statement] of STATEMENTS) {
    it(`${name} searches by index and scans no table`, async () => {
      const details = await plan(statement);
      const scans = details.filter((d) => d.startsWith("SCAN ") && !BOUNDED.test(d));
      expect(scans, details.join("\n")).toEqual([]);
      for (const index of expectedIndexes(statement)) expect(details.some((d) => index.test(d)), `${index} in\n${details.join("\n")}`).toBe(true);
    });
  }

  it("reads the matching records' pages in index order (keyset on record_rid)", async () => {
    for (const statement of [sql.COUNT_SESSION_PAGE, sql.COUNT_TRACE_PAGE, sql.COUNT_SPAN_PAGE]) {
      const details = await plan(statement);
      expect(details.some((d) => /record_metadata_org_key_value .*record_rid>\?/.test(d)), details.join("\n")).toBe(true);
    }
  });

  it("removes side rows through their primary keys (the cascade)", async () => {
    const deleteSpans = sql.CHUNK_STATEMENTS.find((s) => /^DELETE FROM records/.test(s.sql.trim()))!.sql;
    const details = await plan(deleteSpans);
    for (const table of ["record_metadata", "record_tags", "record_metrics"]) {
      expect(details.some((d) => d.startsWith(`SEARCH ${table} USING PRIMARY KEY (record_rid=?)`)), details.join("\n")).toBe(true);
    }
  });
});
