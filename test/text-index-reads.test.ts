/**
 * What a search through the text index reads (src/search/text-driver.ts; docs/search.md, "The
 * text index"): the needle's candidates and the rows they name, not the run, whatever the run
 * holds; and which trigrams its FTS5 query matches: the needle's rarest when it has rare ones
 * (the common trigrams' doclists are the longest reads), all of them when none is rare. Answers
 * stay the scan's either way.
 */
import { env } from "cloudflare:test";
import { sql } from "drizzle-orm";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import { describe, expect, it } from "vitest";
import { compileSearchQuery } from "../src/search/compile-search-query";
import { normalizeSearchRequest } from "../src/search/normalize-search-request";
import type { SearchRequestBody } from "../src/search/search-schemas";
import { SqlParamPack } from "../src/search/sql-param-pack";
import { trigramMatchQuery } from "../src/search/text-driver";
import { backfillChunk } from "../src/text-index/backfill";
import { needleTrigrams, quotedTrigram, RARE_TRIGRAM_DOCS, RAREST_TRIGRAMS } from "../src/text-index/needle-trigrams";
import { createRun, postTraces, type Run } from "./deletion-fixtures";
import { call } from "./support/client";
import { recordsOf } from "./support/record-dbs";
import { createTenant, type Tenant } from "./support/tenants";
import { catchUpTextIndexesEverywhere } from "./support/text-index";

const BOUND = Number(env.TEXT_INDEX_MAX_CANDIDATES);
/** More records of one run than the bound, the rare-trigram cap and a page together. */
const FILLER = 600;

function trace(input: string, output = "done") {
  return { id: crypto.randomUUID(), input, output, name: "support chat", created_at: new Date(Date.UTC(2026, 0, 1) + Math.floor(Math.random() * 1e9)).toISOString(), spans: [] };
}

const contains = (column: string, value: string, case_sensitive = true) => ({ type: "text", column_id: column, operator: "contains", value, case_sensitive });

/** A run of FILLER records that all hold "routine order", plus `extra`, fully indexed. */
async function indexedRun(tenant: Tenant, extra: ReturnType<typeof trace>[]): Promise<{ run: Run; db: D1Database }> {
  const run = await createRun(tenant);
  const filler = Array.from({ length: FILLER }, (_, i) => trace(`routine order ${i}: shipped to the usual address`));
  for (let i = 0; i < filler.length; i += 200) await postTraces(tenant, run, filler.slice(i, i + 200));
  await postTraces(tenant, run, extra);
  const db = await recordsOf(run.projectId);
  await catchUpTextIndexesEverywhere();
  while ((await backfillChunk(db)) > 0);
  return { run, db };
}

async function searchIds(tenant: Tenant, run: Run, body: Record<string, unknown>): Promise<string[]> {
  const answer = await call(`/v2/projects/${run.projectId}/traces/partial_search`, { as: tenant, body: { log_stream_id: run.logStreamId, limit: 100, ...body } });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  expect(answer.body.next_starting_token).toBeNull();
  return answer.body.records.map((r: { id: string }) => r.id).sort();
}

/** The FTS5 query the statement builds for a needle's trigrams, as the database evaluates it. */
async function chosenTerms(db: D1Database, needle: string): Promise<string[]> {
  const pack = new SqlParamPack();
  const query = trigramMatchQuery(needleTrigrams(needle)!, pack);
  const text = new SQLiteAsyncDialect().sqlToQuery(sql`SELECT ${query} AS "q"`).sql;
  const row = await db.prepare(text).bind(pack.toParameter()).first<{ q: string }>();
  return row!.q.split(" AND ").sort();
}

describe("a search through the text index", () => {
  it("reads the needle's candidates, not the run's records or index entries", { timeout: 120_000 }, async () => {
    const tenant = await createTenant();
    const hits = [trace("customer wrote: zanzibarite in the box"), trace("ZANZIBARITE, again")];
    const { run, db } = await indexedRun(tenant, [...hits, trace("zanzibar only")]);
    const query = normalizeSearchRequest({ log_stream_id: run.logStreamId, limit: 25, filters: [contains("input", "zanzibarite", false)] } as SearchRequestBody, "trace", "partial");
    const compiled = compileSearchQuery(query, { organizationId: tenant.organizationId, projectId: run.projectId, runId: run.logStreamId, runKind: "log_stream" }, { textIndexBound: BOUND });
    const page = await db.prepare(compiled.sql).bind(...compiled.params).all<{ id: string }>();
    expect(page.results.map((r) => r.id).sort()).toEqual(hits.map((t) => t.id).sort());
    const counted = await db.prepare(compiled.candidateCount!.sql).bind(...compiled.candidateCount!.params).all<{ candidates: number }>();
    expect(counted.results[0]!.candidates).toBe(2);
    // Rows of the trigram probes, the candidates and the page's own steps (about 140 for the page
    // here, whatever the run's size; 1,244 before onlyWhen); walking the run's index is FILLER more.
    expect(page.meta.rows_read, "rows read by the page").toBeLessThan(FILLER / 2);
    expect(counted.meta.rows_read, "rows read by the candidate count").toBeLessThan(FILLER / 2);
  });

  it("matches a needle's rarest trigrams when it has rare ones, all of them when not, and answers as the scan", { timeout: 120_000 }, async () => {
    const tenant = await createTenant();
    const texts = [
      "Routine Order zanzibarite", // the needle, folded
      "routine order zanzibarite and more", // the needle
      "zanzibarite then routine order", // its words the other way round: not it
      "routine order zanzibar", // part of it
      "ROUTINE ORDER ZANZIBARITE", // the needle, upper case
    ];
    const extra = texts.map((t) => trace(t, `echo ${t.toLowerCase()}`));
    const { run, db } = await indexedRun(tenant, extra);
    const needle = "routine order zanzibarite";
    const trigrams = needleTrigrams(needle)!;
    // The database's records hold "routine order" FILLER times: its trigrams are common, those of
    // "zanzibarite" rare (fewer than RARE_TRIGRAM_DOCS records hold them), so the query keeps
    // RAREST_TRIGRAMS of the rare ones only.
    const common = new Set(needleTrigrams("routine order ")!.map(quotedTrigram));
    const chosen = await chosenTerms(db, needle);
    expect(chosen).toHaveLength(RAREST_TRIGRAMS);
    expect(chosen.filter((t) => common.has(t))).toEqual([]);
    expect(trigrams.length).toBeGreaterThan(RAREST_TRIGRAMS);
    expect(FILLER).toBeGreaterThan(RARE_TRIGRAM_DOCS);
    // A needle of common trigrams only: every one of them (their overlap narrows).
    expect(await chosenTerms(db, "routine order 5")).toEqual(needleTrigrams("routine order 5")!.map(quotedTrigram).sort());
    // A needle of three trigrams or fewer: as it is.
    expect(await chosenTerms(db, "zanzi")).toEqual(needleTrigrams("zanzi")!.map(quotedTrigram).sort());

    const fold = (s: string) => s.replace(/[A-Z]/g, (c) => c.toLowerCase());
    const expected = (column: "input" | "output", n: string, caseSensitive: boolean) =>
      extra.filter((t) => (caseSensitive ? t[column].includes(n) : fold(t[column]).includes(fold(n)))).map((t) => t.id).sort();
    for (const [n, cs] of [[needle, false], [needle, true], ["ROUTINE ORDER ZANZIBARITE", true], ["order zanzibar", false], ["zanzibarite", false]] as const) {
      expect(await searchIds(tenant, run, { filters: [contains("input", n, cs)] }), `${n} ${cs}`).toEqual(expected("input", n, cs));
    }
    // Two needles ORed (two trigram sets, each narrowed on its own), as the search box and a tree send them.
    const either = await searchIds(tenant, run, { filter_tree: { or: [{ filter: contains("input", "Routine Order zanzibarite") }, { filter: contains("output", "echo zanzibarite then", false) }] } });
    expect(either).toEqual([...new Set([...expected("input", "Routine Order zanzibarite", true), ...expected("output", "echo zanzibarite then", false)])].sort());
  });
});
