/**
 * Streaming ingestion as the `galileo` SDK speaks it (bodies below are the ones the pinned SDK
 * sends, captured on the wire): spans posted one by one, PATCHes of traces and spans, and every
 * order of arrival the SDK produces. Answers are parsed with the SDK's own generated schemas.
 */
import { env } from "cloudflare:test";
import {
  LogSpanUpdateResponse$inboundSchema,
  LogSpansIngestResponse$inboundSchema,
  LogTraceUpdateResponse$inboundSchema,
  LogTracesIngestResponse$inboundSchema,
} from "galileo-generated/models";
import { beforeAll, describe, expect, it } from "vitest";
import { call } from "./support/client";
import { createTenant, type Tenant } from "./support/tenants";
import { allRecordDbs } from "./support/record-dbs";
import { METRIC_ROWS } from "./support/metric-rows";

interface Stream {
  tenant: Tenant;
  projectId: string;
  logStreamId: string;
}

async function newStream(tenant?: Tenant): Promise<Stream> {
  const t = tenant ?? (await createTenant());
  const project = await call("/v2/projects", { as: t, body: { name: `p-${crypto.randomUUID()}`, type: "gen_ai", create_example_templates: false } });
  const stream = await call(`/v2/projects/${project.body.id}/log_streams?project_id=${project.body.id}`, { as: t, body: { name: "default" } });
  return { tenant: t, projectId: project.body.id, logStreamId: stream.body.id };
}

async function record(id: string): Promise<Record<string, any> | null> {
  return allRecordDbs.prepare("SELECT * FROM records WHERE id = ?").bind(id).first();
}

async function recordsWithId(id: string): Promise<Record<string, any>[]> {
  return (await allRecordDbs.prepare("SELECT * FROM records WHERE id = ? ORDER BY organization_id").bind(id).all()).results;
}

async function tagsOf(id: string): Promise<string[]> {
  const { results } = await allRecordDbs.prepare("SELECT tag FROM record_tags WHERE record_id = ? ORDER BY tag").bind(id).all<{ tag: string }>();
  return results.map((r) => r.tag);
}

async function heldPatches(id: string): Promise<number> {
  const row = await allRecordDbs.prepare("SELECT count(*) AS n FROM record_patches WHERE record_id = ?").bind(id).first<{ n: number }>();
  return row!.n;
}

/** `POST /traces` as the SDK sends it when a trace starts in streaming mode. */
function traceStart(s: Stream, traceId: string, extra: Record<string, unknown> = {}) {
  return call(`/v2/projects/${s.projectId}/traces`, {
    as: s.tenant,
    body: {
      log_stream_id: s.logStreamId,
      experiment_id: null,
      reliable: true,
      traces: [
        {
          type: "trace",
          input: "hello",
          name: "strace",
          created_at: "2026-11-22T05:35:06.128Z",
          user_metadata: { env: "s" },
          tags: ["start"],
          metrics: {},
          dataset_metadata: {},
          id: traceId,
          spans: [],
        },
      ],
      is_complete: false,
      include_trace_ids: false,
      ...extra,
    },
  });
}

function postSpan(s: Stream, traceId: string, parentId: string, span: Record<string, unknown>) {
  return call(`/v2/projects/${s.projectId}/spans?project_id=${s.projectId}`, {
    as: s.tenant,
    body: { spans: [span], trace_id: traceId, parent_id: parentId, experiment_id: null, log_stream_id: s.logStreamId, reliable: false },
  });
}

function workflowSpan(id: string) {
  return {
    type: "workflow",
    input: "wf-in",
    name: "wf",
    created_at: "2026-11-22T05:35:06.130Z",
    user_metadata: {},
    tags: [],
    metrics: {},
    dataset_metadata: {},
    id,
    spans: [],
  };
}

function llmSpan(id: string) {
  return {
    type: "llm",
    input: [{ role: "user", content: "hi" }],
    output: { content: "yo", role: "assistant" },
    name: "llm",
    created_at: "2026-11-22T05:35:06.131Z",
    user_metadata: {},
    tags: [],
    metrics: { num_input_tokens: 3 },
    dataset_metadata: {},
    id,
    model: "gpt-x",
  };
}

function patchTrace(s: Stream, traceId: string, body: Record<string, unknown>) {
  return call(`/v2/projects/${s.projectId}/traces/${traceId}?project_id=${s.projectId}&trace_id=${traceId}`, {
    as: s.tenant,
    method: "PATCH",
    body: { trace_id: traceId, experiment_id: null, log_stream_id: s.logStreamId, ...body },
  });
}

function patchSpan(s: Stream, spanId: string, body: Record<string, unknown>) {
  return call(`/v2/projects/${s.projectId}/spans/${spanId}?project_id=${s.projectId}&span_id=${spanId}`, {
    as: s.tenant,
    method: "PATCH",
    body: { span_id: spanId, experiment_id: null, log_stream_id: s.logStreamId, ...body },
  });
}

describe("streaming ingestion in the order the SDK usually delivers it", () => {
  let s: Stream;
  const traceId = crypto.randomUUID();
  const workflowId = crypto.randomUUID();
  const llmId = crypto.randomUUID();

  beforeAll(async () => {
    s = await newStream();
  });

  it("stores spans whose trace has not arrived, incomplete and without a session", async () => {
    const wf = await postSpan(s, traceId, traceId, workflowSpan(workflowId));
    expect(wf.status, JSON.stringify(wf.body)).toBe(200);
    const parsed = LogSpansIngestResponse$inboundSchema.parse(wf.body);
    expect(parsed).toMatchObject({ projectId: s.projectId, recordsCount: 1, traceId, parentId: traceId, logStreamId: s.logStreamId, sessionId: null });
    const llm = await postSpan(s, traceId, workflowId, llmSpan(llmId));
    expect(llm.status).toBe(200);

    const stored = await record(llmId);
    expect(stored).toMatchObject({ record_type: "span", type: "llm", trace_id: traceId, parent_id: workflowId, session_id: null, is_complete: 0, run_id: s.logStreamId });
    expect(await record(workflowId)).toMatchObject({ has_children: 1, parent_id: traceId });
  });

  it("holds the trace's final update that overtakes the trace", async () => {
    const update = await patchTrace(s, traceId, { output: "final", tags: [], is_complete: true });
    expect(update.status, JSON.stringify(update.body)).toBe(200);
    expect(update.body).toMatchObject({ pending: true, records_count: 0, trace_id: traceId });
    expect(LogTraceUpdateResponse$inboundSchema.parse(update.body).traceId).toBe(traceId);
    expect(await record(traceId)).toBeNull();
    expect(await heldPatches(traceId)).toBe(1);
  });

  it("applies the held update when the trace arrives, and links the spans to it", async () => {
    const started = await traceStart(s, traceId);
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    expect(LogTracesIngestResponse$inboundSchema.parse(started.body).tracesCount).toBe(1);

    const trace = await record(traceId);
    // The update's empty tag list is "no tags given": it never erases the tags the trace was
    // created with, whichever of the two arrives first (write-records.ts, merge rules).
    expect(trace).toMatchObject({ output: "final", is_complete: 1, has_children: 1, input: "hello", tags: '["start"]' });
    expect(trace!.updated_at).toBeGreaterThan(0);
    expect(await tagsOf(traceId)).toEqual(["start"]);
    expect(await heldPatches(traceId)).toBe(0);
    for (const id of [workflowId, llmId]) expect(await record(id)).toMatchObject({ is_complete: 1, trace_id: traceId });
  });

  it("updates a workflow span that is already there", async () => {
    const update = await patchSpan(s, workflowId, { output: "wf-out", tags: ["b", "a", "b"], duration_ns: 1234 });
    expect(update.status, JSON.stringify(update.body)).toBe(200);
    expect(update.body).toMatchObject({ pending: false, records_count: 1, span_id: workflowId });
    expect(LogSpanUpdateResponse$inboundSchema.parse(update.body).spanId).toBe(workflowId);
    const wf = await record(workflowId);
    expect(wf).toMatchObject({ output: "wf-out", output_is_json: 0, input: "wf-in" });
    expect(JSON.parse(wf!.tags)).toEqual(["b", "a"]);
    expect(JSON.parse(wf!.metrics)).toEqual({ duration_ns: 1234 });
    expect(await tagsOf(workflowId)).toEqual(["a", "b"]);
    const metric = await allRecordDbs.prepare(`SELECT value FROM ${METRIC_ROWS} WHERE record_id = ? AND name = 'duration_ns'`).bind(workflowId).first<{ value: number }>();
    expect(metric?.value).toBe(1234);
    const present = await allRecordDbs.prepare("SELECT column_id FROM run_columns WHERE run_id = ? AND record_type = 'span'").bind(s.logStreamId).all<{ column_id: string }>();
    expect(present.results.map((r) => r.column_id)).toEqual(expect.arrayContaining(["output", "tags", "updated_at", "metrics/duration_ns"]));
  });

  it("is idempotent: a re-sent span is one record and keeps its links", async () => {
    const again = await postSpan(s, traceId, workflowId, llmSpan(llmId));
    expect(again.status).toBe(200);
    const count = await allRecordDbs.prepare("SELECT count(*) AS n FROM records WHERE trace_id = ?").bind(traceId).first<{ n: number }>();
    expect(count!.n).toBe(3); // the trace (its own trace_id) and two spans
    expect(await record(llmId)).toMatchObject({ is_complete: 1, parent_id: workflowId });
  });
});

describe("spans of a trace that belongs to a session", () => {
  it("take the trace's session whichever arrives first", async () => {
    const s = await newStream();
    const session = await call(`/v2/projects/${s.projectId}/sessions`, { as: s.tenant, body: { log_stream_id: s.logStreamId, name: "chat", external_id: "ext-9" } });
    expect(session.status).toBe(200);
    const traceId = crypto.randomUUID();
    const early = crypto.randomUUID();
    const late = crypto.randomUUID();

    await postSpan(s, traceId, traceId, llmSpan(early));
    expect(await record(early)).toMatchObject({ session_id: null });
    await traceStart(s, traceId, { session_id: session.body.id });
    expect(await record(early)).toMatchObject({ session_id: session.body.id, is_complete: 0 });

    const after = await postSpan(s, traceId, traceId, llmSpan(late));
    expect(after.body.session_id).toBe(session.body.id);
    expect(await record(late)).toMatchObject({ session_id: session.body.id, is_complete: 0 });

    const done = await patchTrace(s, traceId, { is_complete: true });
    expect(done.body).toMatchObject({ pending: false, records_count: 1, session_id: session.body.id });
    for (const id of [early, late]) expect(await record(id)).toMatchObject({ is_complete: 1 });
    const present = await allRecordDbs.prepare("SELECT 1 AS x FROM run_columns WHERE run_id = ? AND record_type = 'span' AND column_id = 'session_id'").bind(s.logStreamId).first();
    expect(present).not.toBeNull();
  });
});

describe("updates held before their record", () => {
  it("merge field by field, the later one winning", async () => {
    const s = await newStream();
    const traceId = crypto.randomUUID();
    expect((await patchTrace(s, traceId, { output: "first", status_code: 500 })).body.pending).toBe(true);
    expect((await patchTrace(s, traceId, { output: "second", tags: ["x"] })).body.pending).toBe(true);
    expect(await heldPatches(traceId)).toBe(1);
    await traceStart(s, traceId);
    expect(await record(traceId)).toMatchObject({ output: "second", status_code: 500, tags: '["x"]', is_complete: 0 });
    expect(await tagsOf(traceId)).toEqual(["x"]);
  });

  it("wait for a span and keep structured output as JSON", async () => {
    const s = await newStream();
    const traceId = crypto.randomUUID();
    const spanId = crypto.randomUUID();
    const held = await patchSpan(s, spanId, { output: [{ page_content: "doc", metadata: { n: 1 } }], status_code: 200 });
    expect(held.body).toMatchObject({ pending: true, records_count: 0 });
    await postSpan(s, traceId, traceId, { type: "retriever", input: "q", name: "ret", id: spanId });
    const span = await record(spanId);
    expect(span).toMatchObject({ output_is_json: 1, status_code: 200 });
    expect(JSON.parse(span!.output)).toEqual([{ content: "doc", metadata: { n: 1 } }]);
    expect(await heldPatches(spanId)).toBe(0);
  });

  it("apply only to a record of their own family", async () => {
    const s = await newStream();
    const traceId = crypto.randomUUID();
    const spanId = crypto.randomUUID();
    await postSpan(s, traceId, traceId, llmSpan(spanId));
    // A trace update naming a span's id does not touch the span.
    const wrong = await patchTrace(s, spanId, { output: "not for a span", is_complete: true });
    expect(wrong.body.pending).toBe(true);
    expect(await record(spanId)).toMatchObject({ output: JSON.stringify({ content: "yo", role: "assistant" }) });
  });
});

describe("tenancy and validation", () => {
  it("never lets an update reach another organization's record", async () => {
    const victim = await newStream();
    const attacker = await newStream();
    const traceId = crypto.randomUUID();
    await traceStart(victim, traceId);
    // Through the attacker's own run: held, never applied to the victim's record.
    const held = await patchTrace(attacker, traceId, { output: "pwned", is_complete: true });
    expect(held.body).toMatchObject({ pending: true, records_count: 0, session_id: null });
    expect(await record(traceId)).toMatchObject({ output: null, is_complete: 0 });
    // Through the victim's project: not found.
    const foreign = await call(`/v2/projects/${victim.projectId}/traces/${traceId}`, {
      as: attacker.tenant,
      method: "PATCH",
      body: { log_stream_id: victim.logStreamId, output: "pwned" },
    });
    expect(foreign.status).toBe(404);
    const spans = await call(`/v2/projects/${victim.projectId}/spans`, {
      as: attacker.tenant,
      body: { log_stream_id: victim.logStreamId, trace_id: traceId, parent_id: traceId, spans: [llmSpan(crypto.randomUUID())] },
    });
    expect(spans.status).toBe(404);
  });

  it("does not link a span to a trace of another run carrying the id it names", async () => {
    const a = await newStream();
    const b = await newStream(a.tenant);
    const traceId = crypto.randomUUID();
    const spanId = crypto.randomUUID();
    await traceStart(a, traceId, { session_id: null });
    await postSpan(b, traceId, traceId, llmSpan(spanId));
    expect(await record(spanId)).toMatchObject({ run_id: b.logStreamId, is_complete: 0, session_id: null });
  });

  it("refuses a span id that belongs to another run of the project (409)", async () => {
    const a = await newStream();
    const otherRun = await call(`/v2/projects/${a.projectId}/log_streams`, { as: a.tenant, body: { name: "other" } });
    const b = { ...a, logStreamId: otherRun.body.id as string };
    const spanId = crypto.randomUUID();
    expect((await postSpan(a, crypto.randomUUID(), crypto.randomUUID(), llmSpan(spanId))).status).toBe(200);
    const stolen = await postSpan(b, crypto.randomUUID(), crypto.randomUUID(), llmSpan(spanId));
    expect(stolen.status).toBe(409);
  });

  it("keeps a span id that another organization also uses apart: two records, neither touched", async () => {
    const a = await newStream();
    const b = await newStream();
    const spanId = crypto.randomUUID();
    expect((await postSpan(a, crypto.randomUUID(), crypto.randomUUID(), { ...llmSpan(spanId), name: "a" })).status).toBe(200);
    expect((await postSpan(b, crypto.randomUUID(), crypto.randomUUID(), { ...llmSpan(spanId), name: "b" })).status).toBe(200);
    expect((await patchSpan(b, spanId, { output: "b-out" })).body).toMatchObject({ pending: false });
    const both = await recordsWithId(spanId);
    expect(both.map((r) => [r.project_id, r.name, r.output === "b-out"]).sort()).toEqual(
      [
        [a.projectId, "a", false],
        [b.projectId, "b", true],
      ].sort(),
    );
  });

  it("answers FastAPI-shaped 422s for bad streaming requests", async () => {
    const s = await newStream();
    const traceId = crypto.randomUUID();
    const mismatch = await patchTrace(s, traceId, { trace_id: crypto.randomUUID(), output: "x" });
    expect(mismatch.status).toBe(422);
    expect(mismatch.body.detail[0]).toMatchObject({ loc: ["body", "trace_id"], type: "value_error" });

    const noParent = await call(`/v2/projects/${s.projectId}/spans`, { as: s.tenant, body: { log_stream_id: s.logStreamId, trace_id: traceId, spans: [llmSpan(crypto.randomUUID())] } });
    expect(noParent.status).toBe(422);
    expect(noParent.body.detail[0]).toMatchObject({ loc: ["body", "parent_id"], type: "missing" });

    const noRun = await call(`/v2/projects/${s.projectId}/spans/${crypto.randomUUID()}`, { as: s.tenant, method: "PATCH", body: { output: "x" } });
    expect(noRun.status).toBe(422);
    expect(noRun.body.detail[0].type).toBe("value_error");

    const badId = await call(`/v2/projects/${s.projectId}/traces/not-a-uuid`, { as: s.tenant, method: "PATCH", body: { log_stream_id: s.logStreamId } });
    expect(badId.status).toBe(422);
    expect(badId.body.detail[0]).toMatchObject({ loc: ["path", "trace_id"], type: "uuid_parsing" });

    // 10,000 records per request, nested spans included.
    const nested = { type: "workflow", name: "w", spans: Array.from({ length: 5_000 }, () => ({ type: "tool", name: "t" })) };
    const tooMany = await call(`/v2/projects/${s.projectId}/spans`, { as: s.tenant, body: { log_stream_id: s.logStreamId, trace_id: traceId, parent_id: traceId, spans: [nested, nested] } });
    expect(tooMany.status).toBe(422);
    expect(tooMany.body.detail[0]).toMatchObject({ loc: ["body", "spans", 1], type: "value_error" });

    const badKind = await postSpan(s, traceId, traceId, { type: "trace", input: "x" });
    expect(badKind.status).toBe(422);
    expect(badKind.body.detail[0].loc.slice(0, 3)).toEqual(["body", "spans", 0]);
  });
});

describe("held updates expire", () => {
  it("purges updates whose record never arrived after a week", async () => {
    const s = await newStream();
    const stale = crypto.randomUUID();
    await patchTrace(s, stale, { output: "lost cause" });
    const weekAndADay = 8 * 24 * 60 * 60 * 1_000_000;
    await allRecordDbs.prepare("UPDATE record_patches SET created_at = created_at - ? WHERE record_id = ?").bind(weekAndADay, stale).run();
    await patchTrace(s, crypto.randomUUID(), { output: "fresh" });
    expect(await heldPatches(stale)).toBe(0);
  });
});

describe("query plans", () => {
  /** Records every statement the streaming code prepares, with its parameters. */
  function recordingDb(): { db: D1Database; prepared: { sql: string; params: unknown[] }[] } {
    const prepared: { sql: string; params: unknown[] }[] = [];
    const db = {
      prepare: (sql: string) => ({
        bind: (...params: unknown[]) => {
          prepared.push({ sql, params });
          return env.DB.prepare(sql).bind(...params);
        },
      }),
    } as unknown as D1Database;
    return { db, prepared };
  }

  it("finds records by primary key or by trace, never by scanning a run", async () => {
    const { patchRow, patchStatements, heldPatchStatements } = await import("../src/ingest/streaming-patches");
    const { linkStoredSpansStatements, linkToStoredTraceStatements } = await import("../src/ingest/streaming-links");
    const s = await newStream();
    // A run with some volume, so that a run scan would be a plausible plan.
    for (let i = 0; i < 5; i++) {
      const traceId = crypto.randomUUID();
      await traceStart(s, traceId);
      await postSpan(s, traceId, traceId, llmSpan(crypto.randomUUID()));
    }
    const { db, prepared } = recordingDb();
    const id = crypto.randomUUID();
    patchStatements(db, patchRow(id, "trace", { output: "x", tags: ["a"], is_complete: true, duration_ns: 5 }, Date.now() * 1000), {
      organizationId: s.tenant.organizationId,
      projectId: s.projectId,
      runId: s.logStreamId,
    });
    heldPatchStatements(db, [id, crypto.randomUUID()], s.logStreamId);
    const scope = { projectId: s.projectId, runId: s.logStreamId };
    linkStoredSpansStatements(db, { records: [{ record_type: "trace", id, session_id: crypto.randomUUID(), is_complete: 1 }] } as never, scope);
    linkToStoredTraceStatements(db, [id], scope);
    expect(prepared.length).toBeGreaterThan(15);
    let drivenByRun = 0;
    for (const { sql, params } of prepared) {
      const plan = await env.DB.prepare(`EXPLAIN QUERY PLAN ${sql}`).bind(...params).all<{ detail: string }>();
      const details = plan.results.map((r) => r.detail).join("\n");
      expect(details, sql).not.toMatch(/records_(run|family)_|SCAN (records|r|s|t|record_patches)$/m);
      expect(details, sql).toMatch(/SEARCH/);
      // Statements every ingest batch runs are driven by the run's held updates (usually none),
      // not by the batch's ids: they cost one probe, not one per record written.
      if (/FROM record_patches\s+WHERE run_id = \?2/.test(sql)) {
        drivenByRun += 1;
        expect(details, sql).toMatch(/SEARCH record_patches USING (COVERING )?INDEX record_patches_run/);
      }
    }
    expect(drivenByRun).toBe(6); // the five statements applying held updates (metric rows follow by trigger), and the one forgetting them
  });

  it("the batch writer of every ingest never walks a run (its has_children probe uses the parent index)", async () => {
    const { recordWriteStatements } = await import("../src/ingest/write-records");
    const { traceRows } = await import("../src/ingest/record-rows");
    const s = await newStream();
    const { db, prepared } = recordingDb();
    const scope = { organizationId: s.tenant.organizationId, projectId: s.projectId, runId: s.logStreamId };
    const span = { type: "llm" as const, name: "l", tags: ["x"], metrics: { m: 1 }, user_metadata: { k: "v" } };
    const rows = traceRows([{ type: "trace", name: "t", spans: [span] }], {
      ...scope,
      sessionId: null,
      isComplete: null,
      nowMicros: Date.now() * 1000,
      partitionSeq: 1,
      prices: () => null,
    });
    recordWriteStatements(db, rows, scope);
    expect(prepared.length).toBeGreaterThan(5);
    for (const { sql, params } of prepared) {
      const plan = await env.DB.prepare(`EXPLAIN QUERY PLAN ${sql}`).bind(...params).all<{ detail: string }>();
      const details = plan.results.map((r) => r.detail).join("\n");
      expect(details, sql).not.toMatch(/records_(run|family)_|SCAN (records|child)$/m);
    }
  });
});
