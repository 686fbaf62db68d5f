/**
 * The expiry's statements and a search with a retention cut-off stay index walks: expired records
 * are found by records_family_order (family_key, created_at, id) per run family of the project,
 * a trace's spans by records_trace, a session's children by records_session, held updates by
 * record_patches_run. SQLite's plan may scan only bounded intermediate sets (the JSON targets,
 * the chunk's expired traces), never a table.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { EXPIRY_CHUNK_STATEMENTS, PROJECTS_WITH_EXPIRED_DATA } from "../src/deletion/expiry-sql";
import { compileSearchQuery } from "../src/search/compile-search-query";
import { normalizeSearchRequest } from "../src/search/normalize-search-request";
import { withinRetention } from "../src/search/retention-window";

/** Scans allowed: the JSON list, the chunk's bounded CTEs and subqueries. */
const BOUNDED = /^SCAN (json_each VIRTUAL TABLE INDEX \d+:|t|tr|et|expired_traces|active|target_runs|\(subquery-\d+\)|CONSTANT ROW)$/;

async function plan(statement: string, params: unknown[]): Promise<string[]> {
  const { results } = await env.SHARD_0.prepare(`EXPLAIN QUERY PLAN ${statement}`).bind(...params).all<{ detail: string }>();
  return results.map((r) => r.detail);
}

const targets = JSON.stringify([["00000000-0000-0000-0000-000000000001", 1_700_000_000_000_000]]);

function expectIndexWalks(lines: string[], must: RegExp[]) {
  for (const line of lines) {
    if (/^SCAN /.test(line)) expect(line, lines.join("\n")).toMatch(BOUNDED);
  }
  for (const index of must) expect(lines.join("\n")).toMatch(index);
}

describe("retention query plans", () => {
  it("every expiry chunk statement walks indexes only", async () => {
    for (const statement of EXPIRY_CHUNK_STATEMENTS) {
      const highest = Math.max(0, ...[...statement.matchAll(/\?(\d+)/g)].map((m) => Number(m[1])));
      const lines = await plan(statement, [targets, "job", 10, 50, 1].slice(0, highest));
      const must: RegExp[] = [];
      if (/r\.family_key = tr\.trace_family AND r\.created_at < tr\.cutoff/.test(statement)) must.push(/records_family_order/);
      if (/s\.trace_id = et\.id/.test(statement)) must.push(/records_trace/);
      if (/c\.session_id = se\.id/.test(statement)) must.push(/records_session/);
      if (/record_patches AS p ON p\.run_id/.test(statement)) must.push(/record_patches_run/);
      expectIndexWalks(lines, must);
    }
  });

  it("the cron's question to each shard walks indexes only", async () => {
    expectIndexWalks(await plan(PROJECTS_WITH_EXPIRED_DATA, [targets]), [/records_family_order/, /record_patches_run/]);
  });

  it("a search of a project with retention walks the run's created_at index from the cut-off", async () => {
    const query = withinRetention(normalizeSearchRequest({ limit: 50 } as never, "trace", "partial"), 30, 1_700_000_000_000_000);
    const compiled = compileSearchQuery(query, { organizationId: "o", projectId: "p", runId: "r", runKind: "log_stream" });
    const lines = await plan(compiled.sql, compiled.params);
    expect(lines.join("\n")).toMatch(/SEARCH r USING INDEX records_family_order \(family_key=\? AND created_at>\?\)/);
    expect(lines.some((l) => /^SCAN records|^SCAN r$/.test(l))).toBe(false);
  });
});
