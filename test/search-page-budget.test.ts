/**
 * A search page has a byte budget (SEARCH_LIMITS.maxPageBytes): a page of large records ends
 * before the record that would cross it, says more follow, and paging on returns every record
 * once, in order. Sizes are UTF-8 bytes: CJK text is three bytes a character.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { SEARCH_LIMITS } from "../src/search/search-limits";
import { createRun, postTraces, type Run } from "./deletion-fixtures";
import { call } from "./support/client";
import { type Tenant, createTenant } from "./support/tenants";

let tenant: Tenant;
let run: Run;
const ids: string[] = [];
/** 1.65 MB of UTF-8 each: 550,000 CJK characters (three bytes each). */
const BIG = "漢".repeat(550_000);

beforeAll(async () => {
  tenant = await createTenant();
  run = await createRun(tenant);
  for (let i = 0; i < 8; i++) {
    const id = crypto.randomUUID();
    ids.push(id);
    await postTraces(tenant, run, [{ id, name: `big-${i}`, input: BIG, created_at: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString() }]);
  }
  ids.reverse(); // native order: newest first
});

async function page(body: Record<string, unknown>) {
  const answer = await call(`/v2/projects/${run.projectId}/traces/partial_search`, { as: tenant, body: { log_stream_id: run.logStreamId, limit: 1000, ...body } });
  expect(answer.status, JSON.stringify(answer.body).slice(0, 300)).toBe(200);
  return answer.body as { records: { id: string; input?: string }[]; paginated: boolean; next_starting_token: number | null };
}

describe("the byte budget of a search page", () => {
  it("ends a page of large records before it passes the budget, counting UTF-8 bytes", async () => {
    const first = await page({});
    const perRecord = BIG.length * 3;
    expect(first.records.length).toBe(Math.ceil(SEARCH_LIMITS.maxPageBytes / perRecord));
    expect(first.records.length).toBeLessThan(8);
    expect(first.paginated).toBe(true);
    expect(first.next_starting_token).toBe(first.records.length);
    expect(first.records.every((r) => r.input === BIG)).toBe(true);
  });

  it("pages on to every record exactly once, in order", async () => {
    const seen: string[] = [];
    let token: number | null = 0;
    while (token !== null) {
      const next = await page({ starting_token: token });
      seen.push(...next.records.map((r) => r.id));
      token = next.paginated ? next.next_starting_token : null;
    }
    expect(seen).toEqual(ids);
  });

  it("counts only what the page carries: unselected or truncated text does not fill it", async () => {
    const names = await page({ select_columns: { column_ids: ["name"] } });
    expect(names.records.map((r) => r.id)).toEqual(ids);
    expect(names.paginated).toBe(false);
    const truncated = await page({ truncate_fields: true });
    expect(truncated.records.map((r) => r.id)).toEqual(ids);
    expect(truncated.paginated).toBe(false);
  });
});
