/**
 * Substring search by the text index (docs/search.md, "The text index"; src/search/text-driver.ts,
 * migration 0016): the index narrows, the scan's expression decides, so answers are the scan's
 * whichever path answers; a needle with more candidates than the bound (TEXT_INDEX_MAX_CANDIDATES,
 * 40 in the tests: vitest.config.ts) is answered by the scan; records written before the index
 * existed are found while the backfill runs and after; records just ingested (inserts do not
 * index) are found before the cron's catch-up and after it; PATCH and re-ingest keep the index exact.
 * (The other write paths check the index in their own property tests: deletion, expiry, moves,
 * streaming, OTLP.)
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { classifySearchCost } from "../src/search/search-cost";
import { normalizeSearchRequest } from "../src/search/normalize-search-request";
import type { SearchRequestBody } from "../src/search/search-schemas";
import { backfillChunk, catchUpChunk } from "../src/text-index/backfill";
import { createRun, postTraces, type Run } from "./deletion-fixtures";
import { call } from "./support/client";
import { recordsOf } from "./support/record-dbs";
import { createTenant, type Tenant } from "./support/tenants";
import { withUpkeepPaused } from "./support/upkeep-paused";
import { catchUpTextIndexesEverywhere, textIndexDifferences } from "./support/text-index";

const BOUND = Number(env.TEXT_INDEX_MAX_CANDIDATES);

function trace(input: string, extra: Record<string, unknown> = {}) {
  return { id: crypto.randomUUID(), input, output: `out of ${input}`, name: `trace ${input.slice(0, 12)}`, created_at: new Date(Date.UTC(2026, 0, 1) + Math.floor(Math.random() * 1e9)).toISOString(), spans: [], ...extra };
}

async function search(tenant: Tenant, run: Run, filter: Record<string, unknown>): Promise<string[]> {
  const ids: string[] = [];
  for (let offset = 0; ; ) {
    const answer = await call(`/v2/projects/${run.projectId}/traces/partial_search`, {
      as: tenant,
      body: { log_stream_id: run.logStreamId, filters: [filter], limit: 25, starting_token: offset, select_columns: { column_ids: ["id"] } },
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    ids.push(...answer.body.records.map((r: { id: string }) => r.id));
    if (answer.body.next_starting_token === null) return ids.sort();
    offset = answer.body.next_starting_token;
  }
}

const contains = (column: string, value: string, case_sensitive = true) => ({ type: "text", column_id: column, operator: "contains", value, case_sensitive });

describe("substring search through the text index", () => {
  it("answers as the scan does: case, Unicode, JSON text, other runs and organizations, short needles", { timeout: 60_000 }, async () => {
    const tenant = await createTenant();
    const run = await createRun(tenant);
    const otherRun = await createRun(tenant);
    const stranger = await createTenant();
    const strangerRun = await createRun(stranger);
    const texts = ["Refund for order KX7-QV2-ZP9W", "refund please", "REFUND NOW", "l'ÉCOLE est fermée", "école", "\u212Aelvin scale", "kelvin", "tabs\tand \"quotes\"", "x"];
    const traces = texts.map((t) => trace(t));
    await postTraces(tenant, run, traces);
    await postTraces(tenant, otherRun, texts.map((t) => trace(t)));
    await postTraces(stranger, strangerRun, texts.map((t) => trace(t)));
    const ids = (pred: (text: string) => boolean) => traces.filter((t) => pred(t.input)).map((t) => t.id).sort();
    const fold = (s: string) => s.replace(/[A-Z]/g, (c) => c.toLowerCase());

    const cases: [string, boolean][] = [["refund", true], ["refund", false], ["REFUND", false], ["QV2-ZP", true], ["qv2-zp", true], ["qv2-zp", false], ["ÉCOLE", false], ["école", false], ["ÉCO", true], ["kel", false], ["\u212Ael", false], ["\"quotes\"", true], ["re", false], ["zz top", false]];
    for (const [needle, cs] of cases) {
      const expected = ids((text) => (cs ? text.includes(needle) : fold(text).includes(fold(needle))));
      expect(await search(tenant, run, contains("input", needle, cs)), `${needle} ${cs}`).toEqual(expected);
    }
    expect(await search(tenant, run, contains("output", "out of refund", true))).toEqual(ids((t) => t.startsWith("refund")));
    expect(await search(tenant, run, contains("name", "TRACE RE", false))).toEqual(ids((t) => /^re/i.test(t)));
    expect(await search(tenant, run, { type: "text", column_id: "input", operator: "eq", value: "REFUND NOW" })).toEqual(ids((t) => t === "REFUND NOW"));
    expect(await search(tenant, run, { type: "text", column_id: "input", operator: "eq", value: "refund now", case_sensitive: false })).toEqual(ids((t) => t === "REFUND NOW"));
    const db = await recordsOf(run.projectId);
    expect(await textIndexDifferences(db)).toEqual([]);
  });

  it("is an indexed search for scan admission, unless the needle is short or the index is past its bound", () => {
    const classify = (filter: Record<string, unknown>, sort?: unknown) =>
      classifySearchCost(normalizeSearchRequest({ log_stream_id: crypto.randomUUID(), filters: [filter], ...(sort ? { sort } : {}) } as SearchRequestBody, "trace", "partial"), { textIndex: true });
    expect(classify(contains("input", "refund", false))).toEqual({ class: "indexed" });
    expect(classify(contains("input", "refund"), { column_id: "name" })).toEqual({ class: "indexed" });
    expect(classify(contains("input", "re")).class).toBe("scan");
    expect(classify(contains("error_message", "refund")).class).toBe("scan");
    // The explorer's search box: one needle in input, output or name, ORed (ANDed with a tree).
    expect(classify({ or: [contains("input", "refund", false), contains("output", "refund", false), contains("name", "refund", false)] })).toEqual({ class: "indexed" });
    expect(classify({ or: [contains("input", "refund"), contains("error_message", "refund")] }).class).toBe("scan");
    expect(classify({ or: [contains("input", "refund"), contains("output", "re")] }).class).toBe("scan");
    expect(classify({ not: contains("input", "refund") }).class).toBe("scan");
    const query = normalizeSearchRequest({ log_stream_id: crypto.randomUUID(), filters: [contains("input", "refund")] } as SearchRequestBody, "trace", "partial");
    expect(classifySearchCost(query).class).toBe("scan");
  });

  it("answers the search box's OR of input, output and name, ANDed with a filter, as the scan does", { timeout: 60_000 }, async () => {
    const tenant = await createTenant();
    const run = await createRun(tenant);
    const traces = [
      trace("Where is my REFUND?"),
      { ...trace("hello"), output: "your refund is on its way" },
      { ...trace("hi"), name: "Refund flow" },
      trace("refund again", { tags: ["vip"] }),
      trace("nothing to see"),
      { ...trace("re-fund"), output: "ref und" },
    ];
    await postTraces(tenant, run, traces);
    const box = (needle: string) => ({ or: ["input", "output", "name"].map((column) => contains(column, needle, false)) });
    const searchTree = async (tree: unknown) => {
      const answer = await call(`/v2/projects/${run.projectId}/traces/partial_search`, { as: tenant, body: { log_stream_id: run.logStreamId, filter_tree: tree, limit: 100 } });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      return answer.body.records.map((r: { id: string }) => r.id).sort();
    };
    const ids = (...picked: number[]) => picked.map((i) => traces[i]!.id).sort();
    expect(await searchTree(box("refund"))).toEqual(ids(0, 1, 2, 3));
    expect(await searchTree({ and: [box("REFUND"), { type: "collection", column_id: "tags", operator: "contains", value: "vip" }] })).toEqual(ids(3));
    expect(await searchTree({ and: [box("refund"), { not: contains("input", "again") }] })).toEqual(ids(0, 1, 2));
    const count = await call(`/v2/projects/${run.projectId}/traces/count`, { as: tenant, body: { log_stream_id: run.logStreamId, filter_tree: box("refund") } });
    expect(count.body).toEqual({ total_count: 4, capped: false });
  });

  it("answers a needle with more candidates than the bound by the scan, with every match", { timeout: 60_000 }, async () => {
    const tenant = await createTenant();
    const run = await createRun(tenant);
    const common = Array.from({ length: BOUND + 5 }, (_, i) => trace(`common words ${i}`));
    await postTraces(tenant, run, common);
    expect(await search(tenant, run, contains("input", "common words"))).toEqual(common.map((t) => t.id).sort());
    const count = await call(`/v2/projects/${run.projectId}/traces/count`, { as: tenant, body: { log_stream_id: run.logStreamId, filters: [contains("input", "COMMON", false)] } });
    expect(count.body).toEqual({ total_count: BOUND + 5, capped: false });
    // Within the bound, the index answers (and its count too).
    const few = await call(`/v2/projects/${run.projectId}/traces/count`, { as: tenant, body: { log_stream_id: run.logStreamId, filters: [contains("input", "words 1")] } });
    expect(few.body.total_count).toBe(common.filter((t) => t.input.includes("words 1")).length);
  });

  it("follows PATCH and re-ingest: old text is no longer found, new text is", { timeout: 60_000 }, async () => {
    const tenant = await createTenant();
    const run = await createRun(tenant);
    const t = trace("before the change");
    await postTraces(tenant, run, [t]);
    await catchUpTextIndexesEverywhere();
    const patched = await call(`/v2/projects/${run.projectId}/traces/${t.id}`, { as: tenant, method: "PATCH", body: { trace_id: t.id, log_stream_id: run.logStreamId, output: "patched output" } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(await search(tenant, run, contains("output", "patched"))).toEqual([t.id]);
    expect(await search(tenant, run, contains("output", "out of before"))).toEqual([]);
    await postTraces(tenant, run, [{ ...t, input: "after the change", updated_at: new Date().toISOString() }]);
    expect(await search(tenant, run, contains("input", "before the"))).toEqual([]);
    expect(await search(tenant, run, contains("input", "after the"))).toEqual([t.id]);
    expect(await textIndexDifferences(await recordsOf(run.projectId))).toEqual([]);
  });

  it("finds records written before the index existed, while the backfill runs and after it", { timeout: 60_000 }, async () => {
    const tenant = await createTenant();
    const run = await createRun(tenant);
    const old = Array.from({ length: 30 }, (_, i) => trace(`archived ticket ${i}`));
    await postTraces(tenant, run, old);
    const db = await recordsOf(run.projectId);
    // The database as migration 0016 leaves one that already held these records: nothing indexed,
    // every existing rid waiting for the backfill.
    // (Raising indexed_through indexes the rows it passes: the index is emptied after.)
    await db.batch([
      db.prepare(`UPDATE records_text_backfill SET pending_through = (SELECT max(rid) FROM records), indexed_through = (SELECT max(rid) FROM records)`),
      db.prepare(`INSERT INTO records_text (records_text) VALUES ('delete-all')`),
    ]);
    const waiting = (await db.prepare("SELECT pending_through AS p FROM records_text_backfill").first<{ p: number }>())!.p;
    expect(waiting).toBeGreaterThan(0);
    const expected = (pred: (i: number) => boolean) => old.filter((_, i) => pred(i)).map((t) => t.id).sort();
    expect(await search(tenant, run, contains("input", "ticket 1"))).toEqual(expected((i) => String(i).startsWith("1")));

    // Writes during the backfill: a new record (in the tail, until a catch-up), an old one changed and one deleted.
    const fresh = trace("archived ticket 99");
    await postTraces(tenant, run, [fresh, { ...old[0]!, input: "reopened ticket", updated_at: new Date().toISOString() }]);
    await db.prepare("DELETE FROM records WHERE id = ?").bind(old[1]!.id).run();
    const live = old.filter((_, i) => i > 1);
    const answer = async () => expect(await search(tenant, run, contains("input", "ARCHIVED TICKET", false))).toEqual([...live, fresh].map((t) => t.id).sort());

    // Small chunks, checking answers and the index after each.
    let pending = waiting;
    for (let guard = 0; pending > 0; guard++) {
      expect(guard).toBeLessThan(10_000);
      pending = await backfillChunk(db, Math.max(1, Math.ceil(waiting / 4)));
      await answer();
      expect(await textIndexDifferences(db)).toEqual([]);
    }
    expect(await search(tenant, run, contains("input", "reopened"))).toEqual([old[0]!.id]);
    expect(await backfillChunk(db)).toBe(0);
    await catchUpTextIndexesEverywhere();
    await answer();
    expect(await textIndexDifferences(db)).toEqual([]);
  });

  it("finds records right after ingest, before the catch-up indexes them, and after", { timeout: 60_000 }, async () => {
    const tenant = await createTenant();
    const run = await createRun(tenant);
    await catchUpTextIndexesEverywhere();
    const indexed = [trace("invoice overdue 1"), trace("invoice paid 2")];
    await postTraces(tenant, run, indexed);
    await catchUpTextIndexesEverywhere();
    const db = await recordsOf(run.projectId);
    const covered = async () => (await db.prepare("SELECT indexed_through AS i FROM records_text_backfill").first<{ i: number }>())!.i;
    const before = await covered();
    // The tail: written after the catch-up, not indexed (the insert wrote no index row). The
    // upkeep these writes start would index it at once (issue 29): it waits while the lease is held.
    const fresh = [trace("invoice overdue 3"), { ...trace("hello"), output: "INVOICE OVERDUE" }, trace("nothing")];
    const expected = [indexed[0]!, fresh[0]!, fresh[1]!].map((t) => t.id).sort();
    const box = { or: ["input", "output"].map((column) => contains(column, "invoice overdue", false)) };
    const boxSearch = async () => {
      const answer = await call(`/v2/projects/${run.projectId}/traces/partial_search`, { as: tenant, body: { log_stream_id: run.logStreamId, filter_tree: box, limit: 100 } });
      return answer.body.records.map((r: { id: string }) => r.id).sort();
    };
    await withUpkeepPaused(db, async () => {
      await postTraces(tenant, run, fresh);
      expect(await covered()).toBe(before);
      const tailRows = await db.prepare("SELECT count(*) AS n FROM records WHERE rid > ?").bind(before).first<{ n: number }>();
      expect(tailRows!.n).toBeGreaterThan(0);
      expect(await search(tenant, run, contains("input", "invoice overdue"))).toEqual([indexed[0]!.id, fresh[0]!.id].sort());
      expect(await boxSearch()).toEqual(expected);
      const count = await call(`/v2/projects/${run.projectId}/traces/count`, { as: tenant, body: { log_stream_id: run.logStreamId, filter_tree: box } });
      expect(count.body).toEqual({ total_count: 3, capped: false });
    });
    // The cron's catch-up indexes the tail; the answers do not change.
    expect(await catchUpChunk(db)).toBe(0);
    expect(await covered()).toBeGreaterThan(before);
    expect(await boxSearch()).toEqual(expected);
    expect(await textIndexDifferences(db)).toEqual([]);
  });

  it("answers exactly when the unindexed tail is longer than the bound (the search scans)", { timeout: 60_000 }, async () => {
    const tenant = await createTenant();
    const run = await createRun(tenant);
    const other = await createRun(tenant);
    await catchUpTextIndexesEverywhere();
    const mine = [trace("rare needle here"), trace("plain")];
    await postTraces(tenant, run, mine);
    await postTraces(tenant, other, Array.from({ length: BOUND + 5 }, (_, i) => trace(`rare needle ${i}`)));
    expect(await search(tenant, run, contains("input", "RARE NEEDLE", false))).toEqual([mine[0]!.id]);
    await catchUpTextIndexesEverywhere();
    expect(await search(tenant, run, contains("input", "RARE NEEDLE", false))).toEqual([mine[0]!.id]);
  });

  it("indexes a record that takes the rid of a deleted, indexed one (rid is not AUTOINCREMENT)", { timeout: 60_000 }, async () => {
    const tenant = await createTenant();
    const run = await createRun(tenant);
    const first = trace("reused slot one");
    await postTraces(tenant, run, [first]);
    await catchUpTextIndexesEverywhere();
    const db = await recordsOf(run.projectId);
    const top = await db.prepare("SELECT max(rid) AS rid FROM records").first<{ rid: number }>();
    await db.prepare("DELETE FROM records WHERE rid = ?").bind(top!.rid).run();
    const second = trace("reused slot two");
    await postTraces(tenant, run, [second]);
    const reused = await db.prepare("SELECT rid FROM records WHERE id = ?").bind(second.id).first<{ rid: number }>();
    expect(reused!.rid).toBe(top!.rid);
    expect(await search(tenant, run, contains("input", "reused slot"))).toEqual([second.id]);
    expect(await textIndexDifferences(db)).toEqual([]);
  });
});
