/**
 * The export's text against a model of it (contract section 10; docs/export.md): every root in
 * the search's order, and below it every record as the search shapes it, read all at once and
 * nested (`jsonl`) or listed depth first (`jsonl_flat`), each list oldest first, ties by id. The
 * writer reads descendants in bounded batches by an outline (export-writer.ts); here with small
 * pages and batches, so that one session's records span many batches and roots span pages, and
 * the text must still be the model's, byte for byte, for each root type, format and redaction.
 */
import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { ExportBody, exportQueryOf } from "../src/export/export-request";
import { columnValue, csvLine, redacted } from "../src/export/export-formats";
import type { ExportSource } from "../src/export/export-reader";
import { exportChunks } from "../src/export/export-writer";
import { compileSearchQuery, type SearchScope } from "../src/search/compile-search-query";
import { resolveColumn } from "../src/search/search-columns";
import type { FilterNode, SearchQuery } from "../src/search/search-query";
import { type StoredRow, shapeRecord } from "../src/search/shape-record";
import { type Run, createRun, postSession, postTraces } from "./deletion-fixtures";
import { call } from "./support/client";
import { type Tenant, createTenant } from "./support/tenants";

const uuid = () => crypto.randomUUID();

let admin: Tenant;
let run: Run;
let db: D1Database;
let scope: SearchScope;
const bigSession = uuid();

/** A span tree: `width` children a level, `depth` levels, of every kind, with inputs of every shape shaping may change. */
function spanTree(depth: number, width: number, level = 0): Record<string, unknown>[] {
  if (level >= depth) return [];
  const kinds = ["workflow", "llm", "retriever", "tool", "agent"] as const;
  return Array.from({ length: width }, (_, i) => {
    const type = kinds[(level + i) % kinds.length]!;
    const span: Record<string, unknown> = { id: uuid(), type, name: `${type}-${level}-${i}` };
    if (type === "llm") {
      span.input = i % 2 === 0 ? [{ role: "user", content: "q" }, { role: "assistant", content: "a", tool_calls: [] }] : [{ content: "no role" }, { role: "user", content: null }];
      span.output = i % 2 === 0 ? { role: "assistant", content: "done" } : [{ role: "assistant", content: "first" }, { content: "last" }];
      span.redacted_input = i % 3 === 0 ? [{ role: "user", content: "[REDACTED]" }] : undefined;
    } else if (type === "retriever") {
      span.input = "query";
      span.output = i % 2 === 0 ? [{ content: "doc", metadata: { source: "a" } }] : [{ page_content: "alias" }, "plain"];
    } else {
      span.input = { nested: { list: [1, 2.5, -0, 1e21, "é\u2028"], "1": "integer key", b: true } };
      span.output = "text output";
    }
    if (level + 1 < depth) span.spans = spanTree(depth, width, level + 1);
    return span;
  });
}

beforeAll(async () => {
  admin = await createTenant("admin");
  run = await createRun(admin);
  const row = await env.DB.prepare("SELECT coalesce(shard, 'DB') AS shard FROM projects WHERE id = ?").bind(run.projectId).first<{ shard: string }>();
  db = (env as unknown as Record<string, D1Database>)[row!.shard]!;
  scope = { organizationId: admin.organizationId, projectId: run.projectId, runId: run.logStreamId, runKind: "log_stream" };
  await postSession(admin, run, { id: bigSession, name: "big", user_metadata: { team: "x" } });
  const small = uuid();
  await postSession(admin, run, { id: small, name: "small" });
  // The big session: 4 traces of 3 + 9 + 27 spans (a depth of 3) each, more than several batches.
  const traces = Array.from({ length: 4 }, (_, i) => ({
    id: uuid(),
    name: `big-${i}`,
    session_id: bigSession,
    input: "question",
    output: "answer",
    redacted_output: "[REDACTED]",
    tags: ["t", `n${i}`],
    user_metadata: { customer: `c${i}` },
    metrics: { duration_ns: 1000 + i },
    spans: spanTree(3, 3),
  }));
  // Small traces, some without a session, in one batch (ties on created_at across root pages).
  const others = Array.from({ length: 7 }, (_, i) => ({ id: uuid(), name: `small-${i}`, ...(i < 3 ? { session_id: small } : {}), spans: spanTree(2, 2) }));
  // Ties for the sorts: equal metadata values and equal float metrics (whose text must come back
  // from the keyset to the same double), some traces with neither.
  const tied = Array.from({ length: 8 }, (_, i) => ({
    id: uuid(),
    name: i % 2 === 0 ? "tied" : `tied-${i}`,
    ...(i < 6 ? { user_metadata: { customer: i < 4 ? "dup" : "c1" } } : {}),
    ...(i < 5 ? { metrics: { duration_ns: i < 3 ? 0.1 + 0.2 : 1 / 3 } } : {}),
    spans: spanTree(1, 2),
  }));
  await postTraces(admin, run, [...traces, ...others, ...tied]);
});

const column = (id: string, family: SearchQuery["family"]) => {
  const resolved = resolveColumn(id, family);
  if (!resolved.ok) throw new Error(id);
  return resolved.ref;
};

async function readAll(query: SearchQuery): Promise<StoredRow[]> {
  const statement = compileSearchQuery({ ...query, limit: 10_000, offset: 0 }, scope);
  return (await db.prepare(statement.sql).bind(...statement.params).all<StoredRow>()).results;
}

/** The records of `family` whose `by` is one of `ids`, oldest first, ties by id (every field). */
function below(base: SearchQuery, family: "trace" | "span", by: string, ids: string[], filter?: FilterNode): SearchQuery {
  const inList: FilterNode = { kind: "leaf", leaf: { kind: "in", column: column(by, family), negated: false, values: ids, caseSensitive: true } };
  return { ...base, family, filter: filter ? { kind: "and", children: [filter, inList] } : inList, sort: { column: column("created_at", family), ascending: true } };
}

/** The model: everything read at once, shaped as the search shapes it, then nested or listed. */
async function modelExport(body: ExportBody): Promise<string> {
  const { base, columns } = exportQueryOf(body);
  const shape = (row: StoredRow, query: SearchQuery) => {
    const record = shapeRecord(row, query);
    return body.redact ? redacted(record) : record;
  };
  const roots = (await readAll(base)).map((row) => shape(row, base));
  if (body.export_format === "csv") return [columns, ...roots.map((root) => columns.map((id) => columnValue(root, id)))].map(csvLine).join("");
  const children = new Map<string, Record<string, unknown>[]>();
  const add = (key: unknown, record: Record<string, unknown>) => children.set(String(key), [...(children.get(String(key)) ?? []), record]);
  let traceIds = roots.map((r) => String(r.id));
  const matching = new Set<string>();
  if (base.family === "session") {
    const traces = (await readAll(below(base, "trace", "session_id", traceIds))).map((row) => shape(row, { ...base, family: "trace" }));
    for (const trace of traces) add(trace.session_id, trace);
    traceIds = traces.map((t) => String(t.id));
  } else if (base.family === "span") {
    traceIds = [...new Set(roots.map((r) => String(r.trace_id)))];
    for (const row of await readAll(below(base, "span", "trace_id", traceIds, base.filter))) matching.add(String(row.id));
  }
  if (traceIds.length > 0) {
    for (const row of await readAll(below(base, "span", "trace_id", traceIds))) add(row.parent_id, shape(row, { ...base, family: "span" }));
  }
  const nest = (record: Record<string, unknown>): Record<string, unknown> => ({
    ...record,
    [record.type === "session" ? "traces" : "spans"]: (children.get(String(record.id)) ?? []).map(nest),
  });
  if (body.export_format === "jsonl") return roots.map((root) => `${JSON.stringify(nest(root))}\n`).join("");
  const lines: string[] = [];
  const walk = (id: string) => {
    for (const record of children.get(id) ?? []) {
      if (matching.has(String(record.id))) continue;
      lines.push(`${JSON.stringify(record)}\n`);
      walk(String(record.id));
    }
  };
  for (const root of roots) {
    lines.push(`${JSON.stringify(root)}\n`);
    walk(String(root.id));
  }
  return lines.join("");
}

async function writtenExport(body: ExportBody, sizes: { roots: number; descendantRows: number }) {
  const { base, columns } = exportQueryOf(body);
  const source: ExportSource = { db, scope, admit: (_query, work) => work() };
  const chunks: { text: string; records: number; cursor: unknown }[] = [];
  for await (const chunk of exportChunks({ source, query: base, format: body.export_format, columns, redact: body.redact, sizes })) chunks.push(chunk);
  return { text: chunks.map((c) => c.text).join(""), chunks };
}

const bodyOf = (fields: Record<string, unknown>) => ExportBody.parse({ log_stream_id: run.logStreamId, ...fields });

describe("the export's text is the model's, byte for byte, in small pages and batches", () => {
  for (const root_type of ["session", "trace", "span"] as const) {
    for (const export_format of ["jsonl", "jsonl_flat", "csv"] as const) {
      for (const redact of [true, false]) {
        it(`${root_type}, ${export_format}, redact ${redact}`, async () => {
          const body = bodyOf({ root_type, export_format, redact });
          const expected = await modelExport(body);
          expect(expected.length).toBeGreaterThan(0);
          const { text } = await writtenExport(body, { roots: 3, descendantRows: 7 });
          expect(text).toBe(expected);
        });
      }
    }
  }

  it("span roots with a filter: matching spans below a matching span are written once (flat) and nested (jsonl)", async () => {
    for (const export_format of ["jsonl", "jsonl_flat"] as const) {
      const body = bodyOf({ root_type: "span", export_format, filters: [{ type: "text", column_id: "type", operator: "one_of", value: ["workflow", "llm"] }] });
      const { text } = await writtenExport(body, { roots: 2, descendantRows: 5 });
      expect(text).toBe(await modelExport(body));
    }
  });
});

describe("a sorted export is the search's order with that sort, in pages smaller than the data", () => {
  // Each root once, in the search's own order (the model reads it in one statement), whatever
  // the page size: pages of 1, 2 and 3 put equal sort values and the nulls across page boundaries.
  const sorts: Record<"session" | "trace" | "span", string[]> = {
    session: ["created_at", "name", "id", "user_metadata.team"],
    trace: ["created_at", "name", "id", "user_metadata.customer", "metrics/duration_ns"],
    span: ["created_at", "name", "type", "id", "user_metadata.customer", "metrics/duration_ns"],
  };
  for (const root_type of ["session", "trace", "span"] as const) {
    for (const column_id of sorts[root_type]) {
      for (const ascending of [true, false]) {
        it(`${root_type} by ${column_id} ${ascending ? "ascending" : "descending"}, every format`, async () => {
          for (const export_format of ["jsonl", "jsonl_flat", "csv"] as const) {
            const body = bodyOf({ root_type, export_format, sort: { column_id, ascending } });
            const expected = await modelExport(body);
            for (const roots of [1, 3]) {
              const { text } = await writtenExport(body, { roots, descendantRows: 5 });
              expect(text, `${export_format}, pages of ${roots}`).toBe(expected);
            }
          }
        });
      }
    }
  }

  it("the roots' order is the search route's own order", async () => {
    const sort = { column_id: "metrics/duration_ns", ascending: false };
    const { text } = await writtenExport(bodyOf({ root_type: "trace", export_format: "csv", column_ids: ["id"], sort }), { roots: 2, descendantRows: 5 });
    const exported = text.split("\n").slice(1).filter(Boolean);
    const searched: string[] = [];
    for (let token: number | null = 0; token !== null; ) {
      const answer = await call(`/v2/projects/${run.projectId}/traces/partial_search`, { as: admin, body: { log_stream_id: run.logStreamId, sort, pagination: { limit: 4, starting_token: token } } });
      expect(answer.status).toBe(200);
      const page = answer.body as { records: { id: string }[]; next_starting_token: number | null };
      searched.push(...page.records.map((r) => r.id));
      token = page.next_starting_token;
    }
    expect(exported).toEqual(searched);
    expect(new Set(exported).size).toBe(exported.length);
  });
});

describe("a session with more descendants than a batch", () => {
  it("is written whole and in order, in chunks of one batch each; only a page's last chunk carries the cursor", async () => {
    const body = bodyOf({ root_type: "session", export_format: "jsonl_flat", filters: [{ type: "id", column_id: "id", operator: "eq", value: bigSession }] });
    const { text, chunks } = await writtenExport(body, { roots: 100, descendantRows: 10 });
    const lines = text.split("\n").filter((l) => l.length > 0).map((l) => JSON.parse(l));
    // The session, its 4 traces, and 39 spans under each.
    expect(lines).toHaveLength(1 + 4 * (1 + 39));
    expect(lines[0].id).toBe(bigSession);
    expect(text).toBe(await modelExport(body));
    // 160 descendants in batches of at most 10 rows: one chunk per batch, and the session's line first.
    expect(chunks.length).toBeGreaterThanOrEqual(16);
    expect(chunks.slice(0, -1).every((c) => c.cursor === undefined)).toBe(true);
    expect(chunks.at(-1)!.cursor).toBeDefined();
    expect(chunks.reduce((n, c) => n + c.records, 0)).toBe(lines.length);
    expect(Math.max(...chunks.map((c) => c.records))).toBeLessThanOrEqual(10 + 1);
  });
});
