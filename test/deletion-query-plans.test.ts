/**
 * Every deletion statement is driven by an index: SQLite's plan (in workerd's own SQLite) may
 * scan only the small, bounded intermediate sets (the chunk's roots, the dry run's page), never a
 * table. Matches come from record_metadata_family_key_value_order per family of the
 * organization (run_families_organization_type), children from records_trace and
 * records_session, side rows through their primary keys.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import * as sql from "../src/deletion/deletion-sql";
import { COMPLETE_FILTER_PART, FILTER_CHUNK_STATEMENTS } from "../src/deletion/filter-deletion-sql";

/**
 * Names that stand for bounded intermediate results in the plans: CTEs, their aliases,
 * subqueries, and deletion by filter's list of root ids (`json_each(?1) AS j`, one chunk's roots).
 */
const BOUNDED =
  /^SCAN (roots|root_sessions|candidate_traces|seeds|subtree|ancestors|counted_roots|active|examined|last_examined|page|page_traces|rs|ct|p|pt|m|a|\(subquery-\d+\)|CONSTANT ROW|j VIRTUAL TABLE INDEX \d+:)$/;

async function planRows(statement: string): Promise<{ id: number; parent: number; detail: string }[]> {
  const parameters = Math.max(0, ...[...statement.matchAll(/\?(\d+)/g)].map((m) => Number(m[1])));
  const { results } = await env.DB.prepare(`EXPLAIN QUERY PLAN ${statement}`)
    .bind(...Array.from({ length: parameters }, () => "x"))
    .all<{ id: number; parent: number; detail: string }>();
  return results;
}

async function plan(statement: string): Promise<string[]> {
  return (await planRows(statement)).map((r) => r.detail);
}

/** What drives each kind of statement: matches, children, tombstones. */
function expectedIndexes(statement: string): RegExp[] {
  const expected: RegExp[] = [];
  if (/FROM run_families AS f\s+CROSS JOIN record_metadata/.test(statement)) expected.push(/run_families_organization_type/, /record_metadata_family_key_value_order/);
  if (/s\.trace_id = ct\.id/.test(statement)) expected.push(/records_trace/);
  if (/\.session_id = rs\.id/.test(statement)) expected.push(/records_session/);
  if (/c\.parent_id = subtree\.id/.test(statement)) expected.push(/records_parent/);
  if (/gt\.deleted_at = \?1/.test(statement)) expected.push(/record_tombstones_deleted/);
  if (/json_each\(\?1\) AS j CROSS JOIN records AS r ON r\.project_id = \?3 AND r\.id = j\.value/.test(statement)) expected.push(/records_project_record_id/);
  return expected;
}

const STATEMENTS: [string, string][] = [
  ...sql.CHUNK_STATEMENTS.map((s, i): [string, string] => [`chunk statement ${i + 1} (${s.sql.trim().split(/\s+/).slice(0, 6).join(" ")})`, s.sql]),
  ["ANY_MATCH", sql.ANY_MATCH],
  ["COUNT_SESSION_PAGE", sql.COUNT_SESSION_PAGE],
  ["COUNT_TRACE_PAGE", sql.COUNT_TRACE_PAGE],
  ["COUNT_SPAN_PAGE", sql.COUNT_SPAN_PAGE],
  // Deletion by filter: its roots are a JSON list of ids, looked up by records_project_record_id.
  ...FILTER_CHUNK_STATEMENTS.map((s, i): [string, string] => [`filter chunk statement ${i + 1} (${s.sql.trim().split(/\s+/).slice(0, 6).join(" ")})`, s.sql]),
  ...COMPLETE_FILTER_PART.map((s, i): [string, string] => [`filter part completion ${i + 1}`, s]),
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

  it("reads the matching records' pages in index order (keyset on the family and the metadata index)", async () => {
    for (const statement of [sql.COUNT_SESSION_PAGE, sql.COUNT_TRACE_PAGE, sql.COUNT_SPAN_PAGE]) {
      const details = await plan(statement);
      // The rest of the last page's family: a range of the index from the last row seen ...
      expect(details.some((d) => /record_metadata_family_key_value_order \(family_key=\? AND key=\? AND value=\? AND \(created_at,record_id\)>\(\?,\?\)\)/.test(d)), details.join("\n")).toBe(true);
      // ... then the families after it, in key order, with no sort of the matches.
      expect(details.some((d) => /run_families_organization_type \(organization_id=\? AND record_type=\? AND rowid>\?\)/.test(d)), details.join("\n")).toBe(true);
      // The only sort is of the page's own rows, for its last keyset (at most a page of them).
      const rows = await planRows(statement);
      const pageEnd = rows.find((r) => r.detail === "MATERIALIZE last_examined")!;
      expect(rows.filter((r) => /USE TEMP B-TREE/.test(r.detail) && r.parent !== pageEnd.id), details.join("\n")).toEqual([]);
    }
  });

  it("removes metadata and tag rows through their primary keys (the cascade)", async () => {
    const deleteSpans = sql.CHUNK_STATEMENTS.find((s) => /^DELETE FROM records/.test(s.sql.trim()))!.sql;
    const details = await plan(deleteSpans);
    for (const table of ["record_metadata", "record_tags"]) {
      expect(details.some((d) => d.startsWith(`SEARCH ${table} USING PRIMARY KEY (record_rid=?)`)), details.join("\n")).toBe(true);
    }
  });

  it("removes metric rows through their primary key (the record_metrics_on_delete trigger)", async () => {
    const trigger = await env.DB.prepare("SELECT sql FROM sqlite_master WHERE name = 'record_metrics_on_delete'").first<{ sql: string }>();
    const body = trigger!.sql.slice(trigger!.sql.indexOf("BEGIN") + 5, trigger!.sql.lastIndexOf("END")).trim().replace(/;$/, "");
    const details = await plan(body.replace(/OLD\.`metrics`/g, `'{"a":1}'`).replace(/OLD\.`family_key`/g, "1").replace(/OLD\.`id`/g, "'x'"));
    expect(details.some((d) => /^SEARCH record_metrics USING PRIMARY KEY \(metric_key=\? AND value=\? AND record_id=\?\)/.test(d)), details.join("\n")).toBe(true);
    expect(details.filter((d) => d.startsWith("SCAN ") && !/^SCAN m VIRTUAL TABLE|CONSTANT ROW|subquery/.test(d)), details.join("\n")).toEqual([]);
  });
});
