/**
 * Erasure that erases everything (contract section 6, issue 9): spans that match on their own
 * metadata go with every span below them; held streaming updates of erased ids go with them;
 * what arrives after an erasure naming an erased id is not stored (tombstones); the scheduled
 * maintenance purges expired held updates and tombstones; a dry run and a deletion stay within
 * their bounds.
 */
import { createExecutionContext, createScheduledController, env, waitOnExecutionContext } from "cloudflare:test";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { advanceJobPart } from "../src/deletion/advance-job";
import { deletionTestSeam } from "../src/deletion/deletion-budgets";
import { countDeletionSet } from "../src/deletion/count-deletion-set";
import { deletionJobById, insertDeletionJob } from "../src/deletion/deletion-jobs";
import { PATCH_HOLD_MICROS } from "../src/ingest/streaming-patches";
import { TOMBSTONE_MICROS } from "../src/ingest/tombstones";
import worker from "../src/index";
import { type Run, createRun, deleteByMetadata, postSession, postTraces } from "./deletion-fixtures";
import { call } from "./support/client";
import { type Tenant, createTenant } from "./support/tenants";
import { allRecordDbs, recordsOf } from "./support/record-dbs";

const uuid = () => crypto.randomUUID();

let admin: Tenant;

beforeAll(async () => {
  admin = await createTenant("admin");
});

afterEach(() => {
  for (const key of Object.keys(deletionTestSeam)) delete deletionTestSeam[key as keyof typeof deletionTestSeam];
});

async function record(run: Run, id: string): Promise<Record<string, any> | null> {
  return allRecordDbs.prepare("SELECT * FROM records WHERE project_id = ? AND id = ?").bind(run.projectId, id).first();
}

async function eraseNow(value: string, key = "user"): Promise<void> {
  const answer = await deleteByMetadata(admin, { metadata_key: key, metadata_value: value }, "?immediate=true");
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  expect(answer.body.job_id).toBeNull();
}

async function heldPatches(recordId: string): Promise<number> {
  const row = await allRecordDbs.prepare("SELECT count(*) AS n FROM record_patches WHERE record_id = ?").bind(recordId).first<{ n: number }>();
  return row!.n;
}

describe("a span that matches on its own metadata", () => {
  it("goes with every span below it, at any depth; its trace and siblings stay, and its parent loses has_children", async () => {
    const run = await createRun(admin);
    const value = `span-${uuid()}`;
    const [traceId, agentId, matchedId, childId, grandchildId, siblingId] = [uuid(), uuid(), uuid(), uuid(), uuid(), uuid()];
    await postTraces(admin, run, [
      {
        id: traceId,
        name: "t",
        spans: [
          {
            id: agentId,
            type: "agent",
            spans: [
              {
                id: matchedId,
                type: "workflow",
                user_metadata: { user: value },
                spans: [{ id: childId, type: "agent", spans: [{ id: grandchildId, type: "llm", tags: ["x"], metrics: { toxicity: 0.3 } }] }],
              },
            ],
          },
          { id: siblingId, type: "tool" },
        ],
      },
    ]);
    const dryRun = await deleteByMetadata(admin, { metadata_key: "user", metadata_value: value }, "?dry_run=true");
    expect(dryRun.body).toMatchObject({ would_delete: { sessions: 0, traces: 0, spans: 3 }, would_delete_is_exact: true });

    await eraseNow(value);
    for (const id of [matchedId, childId, grandchildId]) expect(await record(run, id)).toBeNull();
    for (const id of [traceId, agentId, siblingId]) expect(await record(run, id)).not.toBeNull();
    // The agent's only child went: it has no children any more. The trace still has two.
    expect((await record(run, agentId))!.has_children).toBe(0);
    expect((await record(run, traceId))!.has_children).toBe(1);
    const counts = await call(`/v2/projects/${run.projectId}/traces/partial_search`, {
      as: admin,
      body: { log_stream_id: run.logStreamId, include_counts: true, filters: [{ type: "id", column_id: "id", value: traceId }] },
    });
    expect(counts.body.records[0].num_spans).toBe(2);
  });

  it("nested matches (a matching span below a matching span) are counted once and all go", async () => {
    const run = await createRun(admin);
    const value = `nested-${uuid()}`;
    const ids = [uuid(), uuid(), uuid()];
    await postTraces(admin, run, [
      {
        name: "t",
        spans: [
          { id: ids[0], type: "workflow", user_metadata: { user: value }, spans: [{ id: ids[1], type: "agent", user_metadata: { user: value }, spans: [{ id: ids[2], type: "llm" }] }] },
        ],
      },
    ]);
    const dryRun = await deleteByMetadata(admin, { metadata_key: "user", metadata_value: value }, "?dry_run=true");
    expect(dryRun.body.would_delete).toEqual({ sessions: 0, traces: 0, spans: 3 });
    await eraseNow(value);
    for (const id of ids) expect(await record(run, id)).toBeNull();
  });
});

describe("tombstones: what arrives after an erasure is not stored", () => {
  let run: Run;
  let value: string;
  const ids = { session: uuid(), trace: uuid(), span: uuid(), matchedSpan: uuid(), otherTrace: uuid() };

  beforeAll(async () => {
    run = await createRun(admin);
    value = `late-${uuid()}`;
    await postSession(admin, run, { id: ids.session, user_metadata: { user: value } });
    await postTraces(admin, run, [
      { id: ids.trace, session_id: ids.session, name: "erased", spans: [{ id: ids.span, type: "workflow" }] },
      { id: ids.otherTrace, name: "kept", spans: [{ id: ids.matchedSpan, type: "agent", user_metadata: { user: value } }] },
    ]);
    await eraseNow(value);
    expect(await record(run, ids.trace)).toBeNull();
  });

  const body = (extra: Record<string, unknown>) => ({ log_stream_id: run.logStreamId, ...extra });

  it("a re-sent trace of an erased session, with its spans, is acknowledged but not stored", async () => {
    const resent = await call(`/v2/projects/${run.projectId}/traces`, {
      as: admin,
      body: body({ traces: [{ id: ids.trace, session_id: ids.session, name: "erased", spans: [{ id: ids.span, type: "workflow" }] }] }),
    });
    expect(resent.status).toBe(200);
    expect(await record(run, ids.trace)).toBeNull();
    expect(await record(run, ids.span)).toBeNull();
  });

  it("a new trace naming the erased session is not stored either", async () => {
    const newTrace = uuid();
    expect((await call(`/v2/projects/${run.projectId}/traces`, { as: admin, body: body({ traces: [{ id: newTrace, session_id: ids.session }] }) })).status).toBe(200);
    expect(await record(run, newTrace)).toBeNull();
  });

  it("the erased session itself cannot be re-created", async () => {
    expect((await call(`/v2/projects/${run.projectId}/sessions`, { as: admin, body: body({ id: ids.session, name: "again" }) })).status).toBe(200);
    expect(await record(run, ids.session)).toBeNull();
  });

  it("a streamed span under the erased trace is not stored, nor a span below an erased span", async () => {
    const late = uuid();
    const lateChild = uuid();
    const spans = await call(`/v2/projects/${run.projectId}/spans`, {
      as: admin,
      body: body({ trace_id: ids.trace, parent_id: ids.span, spans: [{ id: late, type: "llm" }] }),
    });
    expect(spans.status).toBe(200);
    expect(await record(run, late)).toBeNull();
    const below = await call(`/v2/projects/${run.projectId}/spans`, {
      as: admin,
      body: body({ trace_id: ids.otherTrace, parent_id: ids.matchedSpan, spans: [{ id: lateChild, type: "llm" }] }),
    });
    expect(below.status).toBe(200);
    expect(await record(run, lateChild)).toBeNull();
    expect(await record(run, ids.otherTrace)).not.toBeNull();
  });

  it("an update of an erased trace or span is not held", async () => {
    const trace = await call(`/v2/projects/${run.projectId}/traces/${ids.trace}`, { as: admin, method: "PATCH", body: body({ output: "secret", is_complete: true }) });
    expect(trace.status).toBe(200);
    const span = await call(`/v2/projects/${run.projectId}/spans/${ids.span}`, { as: admin, method: "PATCH", body: body({ output: "secret" }) });
    expect(span.status).toBe(200);
    expect(await heldPatches(ids.trace)).toBe(0);
    expect(await heldPatches(ids.span)).toBe(0);
  });

  it("does not reach another project: the same ids there are written as usual", async () => {
    const other = await createRun(admin);
    await postTraces(admin, other, [{ id: ids.trace, name: "not erased here", spans: [{ id: ids.span, type: "workflow" }] }]);
    expect(await record(other, ids.trace)).not.toBeNull();
    expect(await record(other, ids.span)).not.toBeNull();
  });
});

describe("held updates of erased ids", () => {
  it("go with the records of that id", async () => {
    const run = await createRun(admin);
    const value = `held-${uuid()}`;
    const spanId = uuid();
    await postTraces(admin, run, [{ name: "t", user_metadata: { user: value }, spans: [{ id: spanId, type: "workflow" }] }]);
    // An update sent for the id as a trace (the client's mistake) is held: no trace has that id.
    const held = await call(`/v2/projects/${run.projectId}/traces/${spanId}`, { as: admin, method: "PATCH", body: { log_stream_id: run.logStreamId, output: "private" } });
    expect(held.body.pending).toBe(true);
    expect(await heldPatches(spanId)).toBe(1);
    await eraseNow(value);
    expect(await heldPatches(spanId)).toBe(0);
  });
});

describe("scheduled maintenance", () => {
  it("purges expired held updates and tombstones, and keeps the fresh ones", async () => {
    const now = Date.now() * 1000;
    const project = uuid();
    const run = await createRun(admin);
    const shard = await recordsOf(run.projectId);
    const patch = (recordId: string, createdAt: number) =>
      shard.prepare(
        "INSERT INTO record_patches (record_id, run_id, organization_id, project_id, record_type, created_at, updated_at) VALUES (?, ?, ?, ?, 'trace', ?, ?)",
      ).bind(recordId, run.logStreamId, admin.organizationId, run.projectId, createdAt, createdAt);
    const tombstone = (recordId: string, deletedAt: number) =>
      shard.prepare("INSERT INTO record_tombstones (project_id, record_id, deleted_at) VALUES (?, ?, ?)").bind(project, recordId, deletedAt);
    const [oldPatch, freshPatch, oldTomb, freshTomb] = [uuid(), uuid(), uuid(), uuid()];
    await shard.batch([
      patch(oldPatch, now - PATCH_HOLD_MICROS - 1_000_000),
      patch(freshPatch, now - 1_000_000),
      tombstone(oldTomb, now - TOMBSTONE_MICROS - 1_000_000),
      tombstone(freshTomb, now - 1_000_000),
    ]);
    const controller = createScheduledController({ scheduledTime: new Date(), cron: "17 * * * *" });
    const ctx = createExecutionContext();
    await worker.scheduled(controller, env, ctx);
    await waitOnExecutionContext(ctx);
    expect(await heldPatches(oldPatch)).toBe(0);
    expect(await heldPatches(freshPatch)).toBe(1);
    const tombs = await allRecordDbs.prepare("SELECT record_id FROM record_tombstones WHERE project_id = ?").bind(project).all<{ record_id: string }>();
    expect(tombs.results.map((t) => t.record_id)).toEqual([freshTomb]);
  });
});

describe("bounds", () => {
  it("a dry run counts up to its bound, then says the figure is a lower bound", async () => {
    const run = await createRun(admin);
    const value = `many-${uuid()}`;
    await postTraces(admin, run, Array.from({ length: 5 }, () => ({ name: "t", user_metadata: { user: value } })));
    const selector = { organizationId: admin.organizationId, key: "user", value };
    expect(await countDeletionSet(env, selector)).toEqual({ counts: { sessions: 0, traces: 5, spans: 0 }, exact: true });
    // With a bound of one statement the walk stops before the end.
    const bounded = await countDeletionSet(env, selector, 1);
    expect(bounded.exact).toBe(false);
    expect(bounded.counts.traces).toBeLessThanOrEqual(5);
  });

  it("a deletion stops at its query budget and leaves the rest for the next message", async () => {
    const run = await createRun(admin);
    const value = `budget-${uuid()}`;
    await postTraces(admin, run, Array.from({ length: 6 }, () => ({ name: "t", user_metadata: { user: value } })));
    deletionTestSeam.chunkLimits = { roots: 1, sessionTraces: 1, spans: 1 };
    const jobId = await insertDeletionJob(env, {
      organizationId: admin.organizationId,
      createdBy: admin.userId,
      request: { metadata_key: "user", metadata_value: value, immediate: false },
      status: "queued",
    });
    const job = (await deletionJobById(env.DB, jobId))!;
    const shard = await recordsOf(run.projectId);
    const first = await advanceJobPart(shard, job, { maxMillis: 60_000, maxRecords: 1_000, maxQueries: 3 });
    // One query reads the part, then two chunks of one trace each.
    expect(first).toMatchObject({ state: "unfinished", stats: { chunks: 2 }, progress: { traces: 2 } });
    const rest = await advanceJobPart(shard, job, { maxMillis: 60_000, maxRecords: 1_000, maxQueries: 100 });
    expect(rest).toMatchObject({ state: "completed", progress: { traces: 6 } });
  });
});
