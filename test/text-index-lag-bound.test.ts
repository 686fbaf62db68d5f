/**
 * No substring search scans without bound while the text index lags (issue 29, point 3;
 * src/search/text-driver.ts, docs/search.md "The text index"): with more records not yet indexed
 * than the candidate bound, a search (and a count) the index would serve answers 503 with
 * Retry-After and says the index is catching up when answering without the index would scan more
 * than TEXT_INDEX_LAG_SCAN_MAX_RECORDS records of the run; a small run of the same database is
 * still answered (by its scan), and once the upkeep caught up the index answers the big run
 * exactly. The backlog is written by SQL (copies of one ingested trace) while the upkeep is held
 * off, so the test's data costs seconds, not an ingest.
 */
import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { requestUpkeep } from "../src/upkeep/upkeep-request";
import { addLogStream, createRun, postTraces, type Run } from "./deletion-fixtures";
import { call } from "./support/client";
import { copyRecordBySql } from "./support/record-copies";
import { recordsOf } from "./support/record-dbs";
import { createTenant, type Tenant } from "./support/tenants";
import { catchUpTextIndexesEverywhere } from "./support/text-index";
import { withUpkeepPaused } from "./support/upkeep-paused";

const LAG_SCAN_MAX = Number(env.TEXT_INDEX_LAG_SCAN_MAX_RECORDS);
const CANDIDATES = Number(env.TEXT_INDEX_MAX_CANDIDATES);
const BACKLOG = LAG_SCAN_MAX + 1_000;
const NEEDLE = "quokkamarine";
const T0 = Date.UTC(2026, 6, 1, 0, 0);

let tenant: Tenant;
let big: Run;
let small: Run;
let db: D1Database;
let shard: string;
const FILLER_ID = crypto.randomUUID();
const HIT_ID = crypto.randomUUID();
const SMALL_HIT_ID = crypto.randomUUID();

const at = (ms: number) => new Date(T0 + ms).toISOString();

beforeAll(async () => {
  expect(BACKLOG).toBeGreaterThan(CANDIDATES);
  tenant = await createTenant();
  big = await createRun(tenant);
  small = await addLogStream(tenant, big, "small");
  await postTraces(tenant, big, [
    { id: FILLER_ID, name: "chat", input: "an ordinary question about shipping", output: "an ordinary answer", created_at: at(0), spans: [] },
    { id: HIT_ID, name: "chat", input: `the customer wrote ${NEEDLE} twice`, output: "noted", created_at: at(1_000), spans: [] },
  ]);
  await postTraces(tenant, small, [{ id: SMALL_HIT_ID, name: "chat", input: `small run: ${NEEDLE}`, output: "ok", created_at: at(2_000), spans: [] }]);
  db = await recordsOf(big.projectId);
  shard = db === env.SHARD_0 ? "SHARD_0" : db === env.SHARD_1 ? "SHARD_1" : "DB";
  await catchUpTextIndexesEverywhere();
});

/** BACKLOG copies of the filler trace in the big run, inserted by SQL in batches (not indexed: above the watermark). */
async function writeBacklog(): Promise<void> {
  await copyRecordBySql(db, { projectId: big.projectId, sourceId: FILLER_ID, copies: BACKLOG, spacingMs: 1000 });
}

const search = (run: Run, family = "traces") =>
  call(`/v2/projects/${run.projectId}/${family}/partial_search`, {
    as: tenant,
    body: { log_stream_id: run.logStreamId, limit: 10, filters: [{ type: "text", column_id: "input", operator: "contains", value: NEEDLE }] },
  });
const count = (run: Run) =>
  call(`/v2/projects/${run.projectId}/traces/count`, {
    as: tenant,
    body: { log_stream_id: run.logStreamId, filters: [{ type: "text", column_id: "input", operator: "contains", value: NEEDLE }] },
  });

describe("the text index's lag bound", () => {
  it("answers 503 with Retry-After while the unindexed tail would make the search scan past the bound, and from the index once caught up", async () => {
    await withUpkeepPaused(db, async () => {
      await writeBacklog();
      const tail = await db.prepare("SELECT (SELECT max(rid) FROM records) - indexed_through AS n FROM records_text_backfill").first<{ n: number }>();
      expect(tail!.n).toBeGreaterThanOrEqual(BACKLOG);

      const refused = await search(big);
      expect(refused.status, JSON.stringify(refused.body)).toBe(503);
      expect(refused.headers.get("Retry-After")).toBe("30");
      expect(refused.body.detail).toMatch(/text index .* is catching up/);
      expect(refused.body.detail).toContain(LAG_SCAN_MAX.toLocaleString("en-US"));
      const refusedCount = await count(big);
      expect(refusedCount.status, JSON.stringify(refusedCount.body)).toBe(503);
      expect(refusedCount.headers.get("Retry-After")).toBe("30");

      // A run of the same database whose scan is small is answered meanwhile, by that scan, exactly.
      const answered = await search(small);
      expect(answered.status, JSON.stringify(answered.body)).toBe(200);
      expect(answered.body.records.map((r: { id: string }) => r.id)).toEqual([SMALL_HIT_ID]);
      // A search the index does not drive (a needle under 3 characters) is scan-class as before, not this 503.
      const short = await call(`/v2/projects/${small.projectId}/traces/partial_search`, {
        as: tenant,
        body: { log_stream_id: small.logStreamId, limit: 10, filters: [{ type: "text", column_id: "input", operator: "contains", value: "qu" }] },
      });
      expect(short.status, JSON.stringify(short.body)).toBe(200);
    });

    // The upkeep catches up (started as a write would start it): then the index answers.
    await requestUpkeep(env, shard);
    let answer = await search(big);
    for (let i = 0; i < 300 && answer.status !== 200; i += 1) {
      await new Promise((r) => setTimeout(r, 100));
      answer = await search(big);
    }
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body.records.map((r: { id: string }) => r.id)).toEqual([HIT_ID]);
    const counted = await count(big);
    expect(counted.status, JSON.stringify(counted.body)).toBe(200);
    expect(counted.body.total_count).toBe(1);
  }, 120_000);
});
