/**
 * Every sortable column of every route, both directions and both spellings, on one random
 * dataset: the order must be the reference evaluator's (missing values last, ties by id in the
 * sort's direction), and the default order created_at then id, descending.
 */
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { STANDARD_COLUMNS } from "../src/columns/standard-columns";
import { call } from "./support/client";
import { createTenant, type Tenant } from "./support/tenants";
import { createRun, datasetArbitrary, ingestDataset, type SearchFixture } from "./search-dataset";
import { evaluate, type Family, type RefRecord } from "./search-reference-evaluator";

const ROUTE: Record<Family, string> = { session: "sessions", trace: "traces", span: "spans" };
const KINDS: Record<Family, string[]> = { session: ["session"], trace: ["trace"], span: ["agent", "workflow", "llm", "tool", "retriever", "control"] };

let tenant: Tenant;
let fixture: SearchFixture;
let records: RefRecord[];

function sortableColumns(family: Family): string[] {
  const standard = STANDARD_COLUMNS.filter((c) => c.sortable && c.applicable_types.some((k) => KINDS[family].includes(k))).map((c) => c.id);
  const extra = ["metrics/toxicity", "metrics/duration_ns", "metrics/absent", "user_metadata.env", "user_metadata.absent"];
  return [...standard, ...extra, ...(family === "session" ? [] : ["dataset_metadata.split"])];
}

async function ids(family: Family, body: Record<string, unknown>): Promise<string[]> {
  const res = await call(`/v2/projects/${fixture.projectId}/${ROUTE[family]}/partial_search`, {
    as: tenant,
    body: { log_stream_id: fixture.runId, limit: 1000, select_columns: { column_ids: ["name"] }, ...body },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.records.map((r: { id: string }) => r.id);
}

beforeAll(async () => {
  tenant = await createTenant();
  fixture = await createRun(tenant);
  // A fixed dataset: several sessions, traces and nested spans of every kind, values that tie.
  const [dataset] = fc.sample(datasetArbitrary.filter((d) => d.sessions.length >= 2 && d.traces.length >= 6), { seed: 20261122, numRuns: 1 });
  records = await ingestDataset(tenant, fixture, dataset!);
});

describe("search sort", () => {
  for (const family of ["span", "trace", "session"] as const) {
    it(`orders ${ROUTE[family]} by every sortable column, both ways`, async () => {
      expect(records.filter((r) => r.family === family).length).toBeGreaterThan(1);
      expect(await ids(family, {}), "native order").toEqual(evaluate(records, family, {}).map((r) => r.id));
      for (const column of sortableColumns(family)) {
        for (const ascending of [true, false]) {
          const expected = evaluate(records, family, { sort: { column_id: column, ascending } }).map((r) => r.id);
          expect(await ids(family, { sort: { column_id: column, ascending, sort_type: "column" } }), `${column} ${ascending ? "asc" : "desc"}`).toEqual(expected);
        }
        const seedStyle = evaluate(records, family, { sort: { name: column } }).map((r) => r.id);
        expect(await ids(family, { sort: { name: column } }), `${column} (sort.name, default ascending)`).toEqual(seedStyle);
      }
    }, 60_000);
  }
});
