/**
 * What one record may carry (RECORD_LIMITS, README "Limits"): every cap is in UTF-8 bytes, is a
 * FastAPI-shaped 422 that points at the field over it, and writes nothing of the request. Keys
 * that name JavaScript's own properties are data like any other.
 */
import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { RECORD_LIMITS, utf8Bytes } from "../src/ingest/record-limits";
import { createRun, type Run } from "./deletion-fixtures";
import { call } from "./support/client";
import { type Tenant, createTenant } from "./support/tenants";
import { allRecordDbs } from "./support/record-dbs";

let tenant: Tenant;
let run: Run;

beforeAll(async () => {
  tenant = await createTenant();
  run = await createRun(tenant);
});

function ingest(traces: Record<string, unknown>[], target: Run = run) {
  return call(`/v2/projects/${target.projectId}/traces`, { as: tenant, body: { log_stream_id: target.logStreamId, traces } });
}

async function stored(id: string) {
  return allRecordDbs.prepare("SELECT * FROM records WHERE project_id = ? AND id = ?").bind(run.projectId, id).first<Record<string, any>>();
}

describe("utf8Bytes", () => {
  it("counts what TextEncoder counts, for any string (lone surrogates as their replacement)", () => {
    const samples = ["", "ascii", "é", "漢字", "😀", "a😀b", "\ud800", "x\udc00y", "\u07ff\u0800\uffff"];
    for (const text of samples) expect(utf8Bytes(text), JSON.stringify(text)).toBe(new TextEncoder().encode(text).length);
  });
});

describe("caps on what a record carries", () => {
  it("a metadata value over the cap in bytes (but not in characters) is a 422 at its key", async () => {
    const value = "漢".repeat(Math.floor(RECORD_LIMITS.maxMetadataValueBytes / 3) + 1); // under the cap in UTF-16 units
    expect(value.length).toBeLessThan(RECORD_LIMITS.maxMetadataValueBytes);
    const id = crypto.randomUUID();
    const answer = await ingest([{ id, user_metadata: { note: value } }]);
    expect(answer.status).toBe(422);
    expect(answer.body.detail[0]).toMatchObject({
      loc: ["body", "traces", 0, "user_metadata", "note"],
      type: "string_too_long",
      ctx: { max_length: RECORD_LIMITS.maxMetadataValueBytes, unit: "bytes" },
    });
    expect(await stored(id)).toBeNull();
    // At the cap exactly, it is stored.
    const fits = "a".repeat(RECORD_LIMITS.maxMetadataValueBytes);
    expect((await ingest([{ id, user_metadata: { note: fits } }])).status).toBe(200);
  });

  it("too many metadata keys, tags or metrics, or a key, tag or metric name too long, are 422s", async () => {
    const many = (n: number, value: unknown) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, value]));
    const cases: [Record<string, unknown>, (string | number)[], string][] = [
      [{ user_metadata: many(RECORD_LIMITS.maxMetadataKeys + 1, "v") }, ["body", "traces", 0, "user_metadata"], "value_error"],
      [{ user_metadata: { ["k".repeat(RECORD_LIMITS.maxMetadataKeyBytes + 1)]: "v" } }, ["body", "traces", 0, "user_metadata", "k".repeat(RECORD_LIMITS.maxMetadataKeyBytes + 1)], "string_too_long"],
      [{ tags: Array.from({ length: RECORD_LIMITS.maxTags + 1 }, (_, i) => `t${i}`) }, ["body", "traces", 0, "tags"], "value_error"],
      [{ tags: ["ok", "é".repeat(RECORD_LIMITS.maxTagBytes / 2 + 1)] }, ["body", "traces", 0, "tags", 1], "string_too_long"],
      [{ metrics: many(RECORD_LIMITS.maxMetricsPerRecord + 1, 1) }, ["body", "traces", 0, "metrics"], "value_error"],
      [{ spans: [{ type: "llm", metrics: { ["m".repeat(RECORD_LIMITS.maxMetricNameBytes + 1)]: 1 } }] }, ["body", "traces", 0, "spans", 0, "metrics", "m".repeat(RECORD_LIMITS.maxMetricNameBytes + 1)], "string_too_long"],
    ];
    for (const [fields, loc, type] of cases) {
      const answer = await ingest([{ name: "capped", ...fields }]);
      expect(answer.status, JSON.stringify(loc)).toBe(422);
      expect(answer.body.detail[0], JSON.stringify(answer.body.detail[0]).slice(0, 300)).toMatchObject({ loc, type });
    }
  });

  it("a record larger than a database row may be is a 422 at that record, not a 413 or a 500", async () => {
    const id = crypto.randomUUID();
    const big = "漢".repeat(Math.ceil(RECORD_LIMITS.maxRecordBytes / 3) + 10);
    const answer = await ingest([{ id: crypto.randomUUID(), name: "fine" }, { id, input: big }]);
    expect(answer.status).toBe(422);
    expect(answer.body.detail[0]).toMatchObject({ loc: ["body", "traces", 1], type: "value_error", ctx: { max_bytes: RECORD_LIMITS.maxRecordBytes } });
    expect(await stored(id)).toBeNull();
  });

  it("a run takes at most maxMetricNamesPerRun distinct metric names; the request that would pass it writes nothing", async () => {
    const own = await createRun(tenant);
    const names = (from: number, n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`metric_${from + i}`, i]));
    // Up to the cap, in requests of at most maxMetricsPerRecord per record.
    const perRecord = RECORD_LIMITS.maxMetricsPerRecord;
    const traces = [];
    for (let from = 0; from < RECORD_LIMITS.maxMetricNamesPerRun; from += perRecord) {
      traces.push({ name: "m", metrics: names(from, Math.min(perRecord, RECORD_LIMITS.maxMetricNamesPerRun - from)) });
    }
    expect((await ingest(traces, own)).status).toBe(200);
    // Names the run already has are fine; one more is not.
    expect((await ingest([{ name: "again", metrics: names(0, 10) }], own)).status).toBe(200);
    const id = crypto.randomUUID();
    const over = await ingest([{ id, name: "one more", metrics: { brand_new: 1 } }], own);
    expect(over.status).toBe(422);
    expect(over.body.detail[0]).toMatchObject({ loc: ["body"], type: "value_error", ctx: { max: RECORD_LIMITS.maxMetricNamesPerRun } });
    const row = await allRecordDbs.prepare("SELECT count(*) AS n FROM records WHERE project_id = ? AND id = ?").bind(own.projectId, id).first<{ n: number }>();
    expect(row!.n).toBe(0);
  });
});

describe("keys that are JavaScript property names", () => {
  it("are stored, searched and listed as data", async () => {
    const id = crypto.randomUUID();
    const answer = await ingest([
      { id, user_metadata: { constructor: "c", toString: "t", hasOwnProperty: "h", valueOf: "v" }, metrics: { constructor: 2, toString: 3 } },
    ]);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    const record = await stored(id);
    expect(JSON.parse(record!.user_metadata)).toEqual({ constructor: "c", toString: "t", hasOwnProperty: "h", valueOf: "v" });
    expect(JSON.parse(record!.metrics)).toEqual({ constructor: 2, toString: 3 });
    const found = await call(`/v2/projects/${run.projectId}/traces/partial_search`, {
      as: tenant,
      body: { log_stream_id: run.logStreamId, filters: [{ type: "text", column_id: "user_metadata.constructor", operator: "eq", value: "c" }] },
    });
    expect(found.status).toBe(200);
    expect(found.body.records.map((r: { id: string }) => r.id)).toEqual([id]);
    const columns = await call(`/v2/projects/${run.projectId}/traces/available_columns`, { as: tenant, body: { log_stream_id: run.logStreamId } });
    for (const name of ["constructor", "toString"]) {
      const column = columns.body.columns.find((c: { id: string }) => c.id === `metrics/${name}`);
      expect(column, name).toMatchObject({ label: expect.any(String), data_type: "floating_point", category: "metric", filter_type: "number" });
    }
  });

  it("__proto__, which no parsed object keeps, is refused by name instead of silently dropped", async () => {
    const raw = `{"log_stream_id": "${run.logStreamId}", "traces": [{"name": "p", "user_metadata": {"__proto__": "x", "ok": "y"}}]}`;
    const answer = await call(`/v2/projects/${run.projectId}/traces`, { as: tenant, rawBody: raw, headers: { "content-type": "application/json" } });
    expect(answer.status).toBe(422);
    expect(answer.body.detail[0]).toMatchObject({ loc: ["body", "traces", 0, "user_metadata", "__proto__"], type: "value_error" });
  });
});
