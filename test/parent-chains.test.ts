/**
 * A span never becomes its own ancestor, nor deeper than 256 levels (contract section 12, issue
 * 19 point 2): refused on every write path, and loops stored before the rule neither hang a dry
 * run nor keep a deletion from erasing them.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { type Run, createRun, deleteByMetadata, postTraces, waitForJob } from "./deletion-fixtures";
import { call } from "./support/client";
import { exportRequest, otlpSpan, postOtlp, protobufBody, randomHex } from "./support/otlp-requests";
import { recordsOf } from "./support/record-dbs";
import { type Tenant, createTenant } from "./support/tenants";

const uuid = () => crypto.randomUUID();

let admin: Tenant;

beforeAll(async () => {
  admin = await createTenant("admin");
});

function postSpans(run: Run, traceId: string, parentId: string, spans: Record<string, unknown>[]) {
  return call(`/v2/projects/${run.projectId}/spans`, {
    as: admin,
    body: { log_stream_id: run.logStreamId, trace_id: traceId, parent_id: parentId, spans },
  });
}

async function parentOf(run: Run, id: string): Promise<string | null | undefined> {
  const db = await recordsOf(run.projectId);
  const row = await db.prepare("SELECT parent_id FROM records WHERE project_id = ? AND id = ?").bind(run.projectId, id).first<{ parent_id: string | null }>();
  return row === null ? undefined : row.parent_id;
}

/** `levels` spans nested one in the other, ids returned top first. */
function chain(levels: number): { spans: Record<string, unknown>[]; ids: string[] } {
  const ids = Array.from({ length: levels }, uuid);
  let inner: Record<string, unknown> | null = null;
  for (const id of [...ids].reverse()) inner = { id, type: "workflow", ...(inner ? { spans: [inner] } : {}) };
  return { spans: [inner!], ids };
}

describe("writes that would make a loop", () => {
  it("refuses a span posted under its own id (422) and writes nothing", async () => {
    const run = await createRun(admin);
    const traceId = uuid();
    await postTraces(admin, run, [{ id: traceId, name: "t" }]);
    const spanId = uuid();
    const answer = await postSpans(run, traceId, spanId, [{ id: spanId, type: "llm" }]);
    expect(answer.status, JSON.stringify(answer.body)).toBe(422);
    expect(JSON.stringify(answer.body)).toContain("its own ancestor");
    expect(await parentOf(run, spanId)).toBeUndefined();
  });

  it("refuses a re-sent span that would move under its own descendant, and keeps where it was", async () => {
    const run = await createRun(admin);
    const [traceId, a, b, c] = [uuid(), uuid(), uuid(), uuid()];
    await postTraces(admin, run, [{ id: traceId, name: "t", spans: [{ id: a, type: "workflow", spans: [{ id: b, type: "agent", spans: [{ id: c, type: "llm" }] }] }] }]);
    const answer = await postSpans(run, traceId, c, [{ id: a, type: "workflow", name: "moved" }]);
    expect(answer.status, JSON.stringify(answer.body)).toBe(422);
    expect(await parentOf(run, a)).toBe(traceId);
    // The same span moved elsewhere (not under itself) is a plain update.
    const [other] = [uuid()];
    expect((await postSpans(run, traceId, traceId, [{ id: other, type: "tool" }])).status).toBe(200);
    expect((await postSpans(run, traceId, other, [{ id: a, type: "workflow" }])).status).toBe(200);
    expect(await parentOf(run, a)).toBe(other);
  });

  it("refuses a loop among the request's own records (a trace whose session id is one of its spans)", async () => {
    const run = await createRun(admin);
    const [traceId, spanId] = [uuid(), uuid()];
    const answer = await call(`/v2/projects/${run.projectId}/traces`, {
      as: admin,
      body: { log_stream_id: run.logStreamId, traces: [{ id: traceId, session_id: spanId, spans: [{ id: spanId, type: "llm" }] }] },
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(422);
    expect(await parentOf(run, traceId)).toBeUndefined();
  });

  it("refuses a chain deeper than 256 levels across requests, and takes one that fits", async () => {
    const run = await createRun(admin);
    const traceId = uuid();
    const deep = chain(200);
    await postTraces(admin, run, [{ id: traceId, name: "t", spans: deep.spans }]);
    const bottom = deep.ids.at(-1)!;
    // The trace and 200 spans: 201 levels. 56 more make 257.
    const tooDeep = chain(56);
    const refused = await postSpans(run, traceId, bottom, tooDeep.spans);
    expect(refused.status, JSON.stringify(refused.body)).toBe(422);
    expect(await parentOf(run, tooDeep.ids[0]!)).toBeUndefined();
    const fits = chain(55);
    expect((await postSpans(run, traceId, bottom, fits.spans)).status).toBe(200);
    expect(await parentOf(run, fits.ids[0]!)).toBe(bottom);
  });

  it("OTLP: a span re-sent under its own child in a later request is rejected in partial_success; the request's other spans are stored", async () => {
    const project = `loops-${randomHex(4)}`;
    const headers = { Authorization: `Bearer ${admin.apiKey}`, project };
    const [traceHex, rootHex, childHex] = [randomHex(16), randomHex(8), randomHex(8)];
    const first = await postOtlp(protobufBody(exportRequest([otlpSpan({ trace: traceHex, span: rootHex }), otlpSpan({ trace: traceHex, span: childHex, parent: rootHex })])), { headers });
    expect(first.status).toBe(200);
    const kept = otlpSpan({ trace: randomHex(16), span: randomHex(8), name: "kept" });
    const looped = otlpSpan({ trace: traceHex, span: rootHex, parent: childHex });
    const second = await postOtlp(protobufBody(exportRequest([kept, looped])), { headers });
    expect(second.status).toBe(200);
    const body = new Uint8Array(await second.arrayBuffer());
    expect(new TextDecoder().decode(body)).toContain("its own ancestor");
    const { body: projects } = await call(`/v2/projects?project_name=${project}`, { as: admin });
    const projectId = projects[0].id as string;
    const db = await recordsOf(projectId);
    const names = await db.prepare("SELECT name FROM records WHERE project_id = ? AND record_type = 'span' ORDER BY name").bind(projectId).all<{ name: string }>();
    expect(names.results.map((r) => r.name)).toContain("kept");
    const loops = await db
      .prepare("SELECT count(*) AS n FROM records AS s JOIN records AS p ON p.project_id = s.project_id AND p.id = s.parent_id WHERE s.project_id = ? AND p.parent_id = s.id")
      .bind(projectId)
      .first<{ n: number }>();
    expect(loops!.n).toBe(0);
  });
});

describe("loops stored before the rule", () => {
  /** A matching span A with a child B, then A put under B (and a span S under itself) behind the service's back. */
  async function storedLoops(run: Run, value: string) {
    const [traceId, a, b, s, kept] = [uuid(), uuid(), uuid(), uuid(), uuid()];
    await postTraces(admin, run, [
      {
        id: traceId,
        name: "t",
        spans: [
          { id: a, type: "workflow", user_metadata: { user: value }, spans: [{ id: b, type: "llm" }] },
          { id: s, type: "tool", user_metadata: { user: value } },
          { id: kept, type: "tool" },
        ],
      },
    ]);
    const db = await recordsOf(run.projectId);
    await db.batch([
      db.prepare("UPDATE records SET parent_id = ?1 WHERE project_id = ?2 AND id = ?3").bind(b, run.projectId, a),
      db.prepare("UPDATE records SET parent_id = ?1 WHERE project_id = ?2 AND id = ?1").bind(s, run.projectId),
    ]);
    return { traceId, erased: [a, b, s], kept: [traceId, kept] };
  }

  it("a dry run finishes and counts each looped span once; a deletion job completes and erases them", async () => {
    const run = await createRun(admin);
    const value = `loop-${uuid()}`;
    const { erased, kept } = await storedLoops(run, value);
    const dryRun = await deleteByMetadata(admin, { metadata_key: "user", metadata_value: value }, "?dry_run=true");
    expect(dryRun.status, JSON.stringify(dryRun.body)).toBe(200);
    expect(dryRun.body.would_delete).toEqual({ sessions: 0, traces: 0, spans: 3 });

    const started = await deleteByMetadata(admin, { metadata_key: "user", metadata_value: value });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const { job } = await waitForJob(admin, started.body.job_id);
    expect(job.status).toBe("completed");
    for (const id of erased) expect(await parentOf(run, id)).toBeUndefined();
    for (const id of kept) expect(await parentOf(run, id)).not.toBeUndefined();
  });
});
