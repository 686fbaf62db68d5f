/**
 * `POST /v2/projects/{pid}/export_records` (contract section 10): each format, the order across
 * keyset pages (ties on created_at included), redaction, the file name, tenancy, members, the
 * 422s, and a failure mid-stream that aborts the response instead of ending it short.
 */
import { createExecutionContext, env } from "cloudflare:test";
import { beforeAll, describe, expect, it, onTestFinished, vi } from "vitest";
import { type D1Call, observeD1 } from "../src/http/d1-round-trips";
import worker from "../src/index";
import { type Run, createRun, postSession, postTraces } from "./deletion-fixtures";
import { call } from "./support/client";
import { faultyD1 } from "./support/faulty-d1";
import { type Tenant, addUser, createTenant } from "./support/tenants";

const uuid = () => crypto.randomUUID();

let admin: Tenant;
let member: Tenant;
let other: Tenant;
let run: Run;
let session: string;
const traceIds: string[] = [];
const spanIds: string[] = [];

/** 130 traces in one batch (one created_at for many: ties across the 100-root pages), each with a workflow span over an llm span. */
beforeAll(async () => {
  admin = await createTenant("admin");
  member = await addUser(admin, "member");
  other = await createTenant("admin");
  run = await createRun(admin);
  session = uuid();
  await postSession(admin, run, { id: session, name: "s" });
  const traces = Array.from({ length: 130 }, (_, i) => {
    const id = uuid();
    const workflow = uuid();
    const llm = uuid();
    traceIds.push(id);
    spanIds.push(workflow, llm);
    return {
      id,
      name: i === 0 ? 'quote " and, comma' : `t${i}`,
      input: "secret question",
      output: "secret answer",
      redacted_input: "[REDACTED]",
      tags: ["a", "b"],
      user_metadata: { team: "x" },
      ...(i < 3 ? { session_id: session } : {}),
      spans: [{ id: workflow, type: "workflow", name: "w", spans: [{ id: llm, type: "llm", name: "l", input: "q", output: "a" }] }],
    };
  });
  await postTraces(admin, run, traces);
});

function exportRecords(tenant: Tenant, body: Record<string, unknown>) {
  return call(`/v2/projects/${run.projectId}/export_records`, { as: tenant, body: { log_stream_id: run.logStreamId, ...body } });
}

/** The body's lines (the test client parses a one-line body as JSON: put it back). */
const lines = (body: unknown) => (typeof body === "string" ? body : `${JSON.stringify(body)}\n`).split("\n").filter((l) => l.length > 0);

describe("formats", () => {
  it("jsonl: one trace a line, its spans nested, every trace once, newest first", async () => {
    const answer = await exportRecords(member, { root_type: "trace" });
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toBe("application/x-ndjson");
    expect(answer.headers.get("content-disposition")).toBe('attachment; filename="traces-export.jsonl"');
    const records = lines(answer.body).map((l) => JSON.parse(l));
    expect(records.map((r) => r.id).sort()).toEqual([...traceIds].sort());
    const search = await call(`/v2/projects/${run.projectId}/traces/partial_search`, { as: admin, body: { log_stream_id: run.logStreamId, limit: 1000 } });
    expect(records.map((r) => r.id)).toEqual(search.body.records.map((r: { id: string }) => r.id));
    const first = records.find((r) => r.id === traceIds[5])!;
    expect(first.spans).toHaveLength(1);
    expect(first.spans[0]).toMatchObject({ type: "workflow", spans: [{ type: "llm", spans: [] }] });
  });

  it("jsonl with sessions: a session's traces and their spans nested", async () => {
    const answer = await exportRecords(admin, { root_type: "session" });
    const [line] = lines(answer.body).map((l) => JSON.parse(l));
    expect(line.id).toBe(session);
    expect(line.traces.map((t: { id: string }) => t.id).sort()).toEqual(traceIds.slice(0, 3).sort());
    expect(line.traces[0].spans[0].spans[0].type).toBe("llm");
  });

  it("jsonl_flat: every record once, roots and descendants, with their ids", async () => {
    const answer = await exportRecords(admin, { root_type: "trace", export_format: "jsonl_flat" });
    const records = lines(answer.body).map((l) => JSON.parse(l));
    expect(records).toHaveLength(130 * 3);
    expect(new Set(records.map((r) => r.id)).size).toBe(130 * 3);
    // Matching spans under a matching span: each appears once in flat, nested under its parent in jsonl.
    const spans = await exportRecords(admin, { root_type: "span", export_format: "jsonl_flat" });
    const spanRecords = lines(spans.body).map((l) => JSON.parse(l));
    expect(spanRecords.map((r) => r.id).sort()).toEqual([...spanIds].sort());
    const nested = await exportRecords(admin, { root_type: "span", filters: [{ type: "text", column_id: "type", operator: "eq", value: "workflow" }] });
    const workflows = lines(nested.body).map((l) => JSON.parse(l));
    expect(workflows).toHaveLength(130);
    expect(workflows[0].spans[0].type).toBe("llm");
  });

  it("csv: the standard columns by default, lists as JSON text, quoting; column_ids pick the header", async () => {
    const answer = await exportRecords(admin, { root_type: "trace", export_format: "csv", file_name: '../evil"name.csv' });
    expect(answer.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    expect(answer.headers.get("content-disposition")).toBe('attachment; filename="_evil_name.csv"');
    const text = answer.body as string;
    const header = text.slice(0, text.indexOf("\n")).split(",");
    expect(header).toContain("id");
    expect(header).toContain("input");
    const chosen = await exportRecords(admin, {
      root_type: "trace",
      export_format: "csv",
      column_ids: ["id", "name", "tags", "user_metadata.team"],
      filters: [{ type: "id", column_id: "id", operator: "eq", value: traceIds[0] }],
    });
    expect(chosen.body).toBe(`id,name,tags,user_metadata.team\n${traceIds[0]},"quote "" and, comma","[""a"",""b""]",x\n`);
  });
});

describe("order, filters, redaction", () => {
  it("sorts by another column when asked (the search's sorts): by name, each trace once", async () => {
    for (const ascending of [true, false]) {
      const answer = await exportRecords(admin, { root_type: "trace", export_format: "csv", column_ids: ["id", "name"], sort: { column_id: "name", ascending } });
      expect(answer.status).toBe(200);
      const names = lines(answer.body).slice(1).map((line) => line.split(",")[1]!);
      const sorted = [...names].sort();
      expect(names).toEqual(ascending ? sorted : sorted.reverse());
      expect(new Set(lines(answer.body).slice(1)).size).toBe(names.length);
    }
  });

  it("sorts by created_at ascending when asked, ties by id, across pages", async () => {
    const answer = await exportRecords(admin, { root_type: "span", export_format: "jsonl_flat", sort: { column_id: "created_at", ascending: true } });
    const records = lines(answer.body).map((l) => JSON.parse(l));
    const keys = records.map((r) => [Date.parse(r.created_at), r.id] as const);
    const sorted = [...keys].sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
    expect(keys).toEqual(sorted);
    expect(records).toHaveLength(260);
  });

  it("redact (the default) puts redacted_input in place of input; redact=false keeps it", async () => {
    const filters = [{ type: "id", column_id: "id", operator: "eq", value: traceIds[1] }];
    const redactedAnswer = lines((await exportRecords(admin, { root_type: "trace", filters })).body).map((l) => JSON.parse(l));
    expect(redactedAnswer[0]).toMatchObject({ input: "[REDACTED]", output: "secret answer" });
    const plain = lines((await exportRecords(admin, { root_type: "trace", filters, redact: false })).body).map((l) => JSON.parse(l));
    expect(plain[0]).toMatchObject({ input: "secret question" });
  });

  it("an empty match is an empty body (csv: the header alone)", async () => {
    const filters = [{ type: "text", column_id: "name", operator: "eq", value: "none" }];
    expect((await exportRecords(admin, { root_type: "trace", filters })).body).toBe("");
    expect((await exportRecords(admin, { root_type: "trace", filters, export_format: "csv", column_ids: ["id", "name"] })).body).toBe("id,name\n");
  });
});

describe("annotation filters", () => {
  it("takes a fully_annotated leaf as a search does (a 500 before): with nothing rated, not(fully_annotated) is every trace", async () => {
    const answer = await exportRecords(admin, { root_type: "trace", export_format: "jsonl_flat", filters: [{ not: { type: "fully_annotated" } }] });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    const all = await exportRecords(admin, { root_type: "trace", export_format: "jsonl_flat" });
    expect(lines(answer.body)).toEqual(lines(all.body));
  });
});

describe("refusals", () => {
  it("another organization's project is a 404", async () => {
    const answer = await exportRecords(other, { root_type: "trace" });
    expect(answer.status).toBe(404);
  });

  it("422s: missing root_type, unknown format, unknown column, unknown or unsortable sort column, bad filter", async () => {
    const cases: [Record<string, unknown>, (string | number)[]][] = [
      [{}, ["body", "root_type"]],
      [{ root_type: "trace", export_format: "parquet" }, ["body", "export_format"]],
      [{ root_type: "trace", export_format: "csv", column_ids: ["id", "nope"] }, ["body", "column_ids", 1]],
      [{ root_type: "trace", sort: { column_id: "nope" } }, ["body", "sort", "column_id"]],
      [{ root_type: "trace", sort: { name: "nope", ascending: false } }, ["body", "sort", "name"]],
      [{ root_type: "trace", sort: { column_id: "tags" } }, ["body", "sort", "column_id"]],
      [{ root_type: "trace", export_format: "csv", sort: { column_id: "metrics/" } }, ["body", "sort", "column_id"]],
      [{ root_type: "trace", filters: [{ type: "text", column_id: "nope", operator: "eq", value: "x" }] }, ["body", "filters", 0]],
    ];
    for (const [body, loc] of cases) {
      const answer = await exportRecords(admin, body);
      expect(answer.status, JSON.stringify(answer.body)).toBe(422);
      expect(answer.body.detail[0].loc.slice(0, loc.length)).toEqual(loc);
    }
  });
});

describe("D1 statements", () => {
  /**
   * A Worker invocation may make 1,000 D1 queries, so they bound the largest streamed export
   * (docs/benchmarks.md, "Export (issue 22)"). The statement reads a page and one row more: a
   * short page is the end of its walk, with no empty statements to confirm it.
   */
  it("jsonl_flat of 130 traces: one statement per page of roots, then per page the outline of its spans and one read of their rows", async () => {
    const row = await env.DB.prepare("SELECT coalesce(shard, 'DB') AS shard FROM projects WHERE id = ?").bind(run.projectId).first<{ shard: string }>();
    const binding = row!.shard;
    const calls: D1Call[] = [];
    const observed = observeD1((env as unknown as Record<string, D1Database>)[binding]!, (c) => calls.push(c));
    const request = new Request(`http://trace-store.test/v2/projects/${run.projectId}/export_records`, {
      method: "POST",
      headers: { "Service-API-Key": admin.apiKey, "content-type": "application/json" },
      body: JSON.stringify({ log_stream_id: run.logStreamId, root_type: "trace", export_format: "jsonl_flat" }),
    }) as Request<unknown, IncomingRequestCfProperties>;
    const response = await worker.fetch(request, { ...env, [binding]: observed }, createExecutionContext());
    expect(lines(await response.text())).toHaveLength(130 * 3);
    // A page of a search statement (compile-search-query.ts) is the one that counts its rows read.
    const pages = calls.filter((c) => c.statements.some((s) => s.sql.includes('"_rows_read"')));
    // Roots: the first 101 (a page of 100), then the rest past its last (30, short: the end).
    expect(pages).toHaveLength(2);
    // Under each of the two pages of roots: the outline of their spans (export-statements.ts),
    // then their rows (at most 2,000 a statement: one here).
    const outlines = calls.filter((c) => c.statements.some((s) => s.sql.includes('AS "parent"')));
    const rowReads = calls.filter((c) => c.statements.some((s) => s.sql.includes('ORDER BY "k"."key"')));
    expect(outlines).toHaveLength(2);
    expect(rowReads).toHaveLength(2);
  });
});

describe("a failure mid-stream", () => {
  it("errors the body after the first pages (never a short file that ends cleanly) and logs it", async () => {
    const row = await env.DB.prepare("SELECT coalesce(shard, 'DB') AS shard FROM projects WHERE id = ?").bind(run.projectId).first<{ shard: string }>();
    const binding = row!.shard;
    const real = (env as unknown as Record<string, D1Database>)[binding]!;
    // The shard's second statement fails: the second page of csv roots, after the first is sent.
    const faulty = faultyD1(real, 2, "before");
    const logged = vi.spyOn(console, "error").mockImplementation(() => undefined);
    // Restored whatever happens: this file shares its workerd (and console) with other files.
    onTestFinished(() => logged.mockRestore());
    const request = new Request(`http://trace-store.test/v2/projects/${run.projectId}/export_records`, {
      method: "POST",
      headers: { "Service-API-Key": admin.apiKey, "content-type": "application/json" },
      body: JSON.stringify({ log_stream_id: run.logStreamId, root_type: "trace", export_format: "csv", column_ids: ["id"] }),
    }) as Request<unknown, IncomingRequestCfProperties>;
    const response = await worker.fetch(request, { ...env, [binding]: faulty.db }, createExecutionContext());
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    const received: string[] = [];
    const decoder = new TextDecoder();
    await expect(
      (async () => {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return;
          received.push(decoder.decode(value));
        }
      })(),
    ).rejects.toThrow();
    expect(faulty.fired()).toBe(true);
    expect(received.join("").split("\n").length).toBeGreaterThan(1);
    expect(logged.mock.calls.some((args) => String(args[0]).includes("failed mid-stream"))).toBe(true);
  });
});
