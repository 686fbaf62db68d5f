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
const BOUNDED = /^SCAN (roots|root_sessions|candidate_traces|going|g|active|page|page_traces|rs|ct|p|pt|\(subquery-\d+\)|CONSTANT ROW)$/;

async function plan(statement: string): Promise<string[]> {
  const parameters = Math.max(...[...statement.matchAll(/\?(\d+)/g)].map((m) => Number(m[1])));
  const { results } = await env.DB.prepare(`EXPLAIN QUERY PLAN ${statement}`)
    .bind(...Array.from({ length: parameters }, () => "x"))
    .all<{ detail: string }>();
  return results.map((r) => r.detail);
}

const STATEMENTS: [string, string, RegExp[]][] = [
  ["DELETE_SPANS", sql.DELETE_SPANS, [/record_metadata_org_key_value/, /records_trace/, /records_session/]],
  ["REFRESH_PARENTS", sql.REFRESH_PARENTS, [/record_metadata_org_key_value/, /records_session/, /records_trace/, /records_parent/]],
  ["DELETE_TRACES", sql.DELETE_TRACES, [/record_metadata_org_key_value/, /records_session/, /records_trace/]],
  ["DELETE_SESSIONS", sql.DELETE_SESSIONS, [/record_metadata_org_key_value/, /records_session/]],
  ["COMPLETE_IF_DONE", sql.COMPLETE_IF_DONE, [/record_metadata_org_key_value/]],
  ["ANY_MATCH", sql.ANY_MATCH, [/record_metadata_org_key_value/]],
  ["COUNT_SESSION_PAGE", sql.COUNT_SESSION_PAGE, [/record_metadata_org_key_value .*rowid>\?/, /records_session/, /records_trace/]],
  ["COUNT_TRACE_PAGE", sql.COUNT_TRACE_PAGE, [/record_metadata_org_key_value .*rowid>\?/, /records_trace/]],
];

describe("deletion query plans", () => {
  for (const [name, statement, indexes] of STATEMENTS) {
    it(`${name} searches by index and scans no table`, async () => {
      const details = await plan(statement);
      const scans = details.filter((d) => d.startsWith("SCAN ") && !BOUNDED.test(d));
      expect(scans, details.join("\n")).toEqual([]);
      for (const index of indexes) expect(details.some((d) => index.test(d)), `${index} in\n${details.join("\n")}`).toBe(true);
    });
  }

  it("removes side rows through their primary keys (the cascade)", async () => {
    const details = await plan(sql.DELETE_SPANS);
    for (const table of ["record_metadata", "record_tags", "record_metrics"]) {
      expect(details).toContain(`SEARCH ${table} USING COVERING INDEX sqlite_autoindex_${table}_1 (record_id=?)`);
    }
  });
});
