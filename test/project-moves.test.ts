/**
 * Moving a project to another shard (docs/sharding.md, "Moving a project"): everything a project
 * holds arrives on the target as it was (records of every kind, their metadata, tag and metric
 * rows, held updates, tombstones, runs and their columns); searches and ingest keep working in
 * every phase; a stale route is refused and re-routed; another organization's project is not
 * touched; a deletion job during or after a move still finds every record; the real queue runs a
 * move to its end; and bad requests fail clearly.
 */
import { env } from "cloudflare:test";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Env } from "../src/env";
import { moveTestSeam } from "../src/moves/move-limits";
import { runStatements } from "../src/admin/provisioning";
import { resumeMoveStatement } from "../src/moves/move-requests";
import { kickMoves } from "../src/moves/move-queue";
import { createRun, deleteByMetadata, postSession, postTraces, waitForJob, type Run } from "./deletion-fixtures";
import { call } from "./support/client";
import { dbOf, move, otherShard, projectState, requestMove, runThroughQueue, shardOf, stateOnShard, stepUntil } from "./support/moves";
import { type Tenant, createTenant } from "./support/tenants";

const uuid = () => crypto.randomUUID();

let tenant: Tenant;
let stranger: Tenant;

beforeAll(async () => {
  tenant = await createTenant("admin");
  stranger = await createTenant("admin");
});

afterEach(() => {
  for (const key of Object.keys(moveTestSeam)) delete moveTestSeam[key as keyof typeof moveTestSeam];
});

/** A trace with nested spans, metadata, tags and metrics. */
function trace(name: string, metadata: Record<string, string>, sessionId?: string) {
  return {
    id: uuid(),
    name,
    input: `question ${name}`,
    output: `answer ${name}`,
    created_at: "2026-11-20T10:00:00Z",
    session_id: sessionId,
    user_metadata: metadata,
    tags: ["prod", name],
    metrics: { toxicity: 0.25 },
    spans: [
      {
        id: uuid(),
        type: "workflow",
        name: `${name}-wf`,
        created_at: "2026-11-20T10:00:01Z",
        spans: [{ id: uuid(), type: "llm", name: `${name}-llm`, model: "gpt", created_at: "2026-11-20T10:00:02Z", metrics: { num_input_tokens: 3 }, tags: ["x"] }],
      },
      { id: uuid(), type: "tool", name: `${name}-tool`, created_at: "2026-11-20T10:00:03Z", user_metadata: { k: "v" } },
    ],
  };
}

/** A project with sessions, traces, spans, metadata, tags, metrics, a held update and tombstones. */
async function seed(owner: Tenant, traces = 4): Promise<Run> {
  const run = await createRun(owner);
  const sessionId = uuid();
  await postSession(owner, run, { id: sessionId, name: "s", user_metadata: { customer: "acme" } });
  await postTraces(owner, run, [
    trace("in-session", { customer: "acme" }, sessionId),
    ...Array.from({ length: traces }, (_, i) => trace(`t${i}`, { customer: i % 2 ? "beta" : "gamma", n: String(i) })),
    trace("erased", { customer: "erase-me" }),
  ]);
  // A held update: its trace has not arrived.
  const pending = await call(`/v2/projects/${run.projectId}/traces/${uuid()}`, { as: owner, method: "PATCH", body: { log_stream_id: run.logStreamId, output: "late" } });
  expect(pending.status, JSON.stringify(pending.body)).toBe(200);
  // Tombstones: an erased trace and its spans.
  const erased = await deleteByMetadata(owner, { metadata_key: "customer", metadata_value: "erase-me" }, "?immediate=true");
  expect(erased.status, JSON.stringify(erased.body)).toBe(200);
  if (erased.body.job_id) await waitForJob(owner, erased.body.job_id);
  return run;
}

const search = (owner: Tenant, run: Run, family: "traces" | "spans" | "sessions" = "traces") =>
  call(`/v2/projects/${run.projectId}/${family}/partial_search`, { as: owner, body: { log_stream_id: run.logStreamId, limit: 1000 } });

const names = (answer: { body: { records: { name: string }[] } }) => answer.body.records.map((r) => r.name).sort();

describe("a move", () => {
  it("copies everything the project holds to the target, switches, and deletes the old copy", async () => {
    moveTestSeam.chunkRecords = 3;
    moveTestSeam.chunkRows = 2;
    moveTestSeam.verifyRuns = 1;
    const run = await seed(tenant);
    await createRun(tenant); // another project of the same organization, wherever it lands
    const source = await shardOf(run.projectId);
    const target = otherShard(source);
    const before = await projectState(dbOf(source), run.projectId);
    expect(before.record_patches).toHaveLength(1);
    expect(before.record_tombstones.length).toBeGreaterThanOrEqual(4);
    expect(before.record_metadata.length).toBeGreaterThan(0);

    const moveId = await requestMove(run.projectId, target);
    const done = await stepUntil(moveId);
    expect(done).toMatchObject({
      phase: "completed",
      status: "running",
      error_message: null,
      records_total: before.records.length,
      records_copied: before.records.length,
      old_records_deleted: before.records.length,
    });
    expect(JSON.parse(done.verified!)).toMatchObject({
      source: { sessions: 1, traces: 5, spans: 15 },
      target: { sessions: 1, traces: 5, spans: 15 },
    });

    expect(await shardOf(run.projectId)).toBe(target);
    expect(await projectState(dbOf(target), run.projectId)).toEqual(before);
    const left = await projectState(dbOf(source), run.projectId);
    expect(Object.values(left).every((rows) => rows.length === 0), JSON.stringify(left)).toBe(true);
    expect(await stateOnShard(dbOf(source), run.projectId)).toBe("gone");
    expect(await stateOnShard(dbOf(target), run.projectId)).toBe("active");

    // The held update still applies when its trace arrives, on the target.
    const patchedId = before.record_patches[0]!.record_id as string;
    await postTraces(tenant, run, [{ id: patchedId, name: "arrives", created_at: "2026-11-20T11:00:00Z" }]);
    const arrived = await dbOf(target).prepare("SELECT output FROM records WHERE project_id = ? AND id = ?").bind(run.projectId, patchedId).first<{ output: string }>();
    expect(arrived?.output).toBe("late");
    // And the tombstones still keep erased ids out.
    const erasedId = before.record_tombstones[0]!.record_id as string;
    await postTraces(tenant, run, [{ id: erasedId, name: "resurrected" }]);
    expect(await dbOf(target).prepare("SELECT count(*) AS n FROM records WHERE project_id = ? AND id = ?").bind(run.projectId, erasedId).first()).toEqual({ n: 0 });
  });

  it("keeps searches and ingest working in every phase; writes while frozen get a 503, then reach the target", async () => {
    moveTestSeam.chunkRecords = 2;
    const run = await seed(tenant, 2);
    const source = await shardOf(run.projectId);
    const target = otherShard(source);
    const moveId = await requestMove(run.projectId, target);
    const expected = names(await search(tenant, run));

    // Copying: ingest lands on the source (logged), searches answer from the source.
    await stepUntil(moveId, (m) => m.phase === "copying" && m.step === "records" && m.records_copied > 0);
    await postTraces(tenant, run, [trace("during-copy", { customer: "acme" })]);
    expected.push("during-copy");
    expect(names(await search(tenant, run))).toEqual(expected.sort());

    // Catching up: still writable.
    await stepUntil(moveId, (m) => m.phase === "catching_up");
    await postTraces(tenant, run, [trace("during-catch-up", { customer: "acme" })]);
    expected.push("during-catch-up");
    expect(names(await search(tenant, run))).toEqual(expected.sort());

    // Frozen: reads work, writes are a 503 with Retry-After.
    await stepUntil(moveId, (m) => m.phase === "frozen");
    expect(await stateOnShard(dbOf(source), run.projectId)).toBe("frozen");
    expect(names(await search(tenant, run))).toEqual(expected.sort());
    const refused = await call(`/v2/projects/${run.projectId}/traces`, { as: tenant, body: { log_stream_id: run.logStreamId, traces: [{ name: "while-frozen" }] } });
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("1");
    const refusedPatch = await call(`/v2/projects/${run.projectId}/traces/${uuid()}`, { as: tenant, method: "PATCH", body: { log_stream_id: run.logStreamId, output: "x" } });
    expect(refusedPatch.status).toBe(503);

    // After the switch, the same write succeeds (on the target) and everything is found there.
    const done = await stepUntil(moveId);
    expect(done.phase).toBe("completed");
    const retried = await call(`/v2/projects/${run.projectId}/traces`, { as: tenant, body: { log_stream_id: run.logStreamId, traces: [{ name: "while-frozen" }] } });
    expect(retried.status).toBe(200);
    expected.push("while-frozen");
    expect(names(await search(tenant, run))).toEqual(expected.sort());
    const onTarget = await dbOf(target).prepare("SELECT count(*) AS n FROM records WHERE project_id = ? AND record_type = 'trace'").bind(run.projectId).first<{ n: number }>();
    expect(onTarget!.n).toBe(expected.length);
  });

  it("re-routes a worker whose cached route still names the old shard", async () => {
    const run = await seed(tenant, 1);
    const source = await shardOf(run.projectId);
    // The route is cached by this request; the move changes the catalog underneath it.
    expect((await search(tenant, run)).status).toBe(200);
    await stepUntil(await requestMove(run.projectId, otherShard(source)));
    const ingest = await call(`/v2/projects/${run.projectId}/traces`, { as: tenant, body: { log_stream_id: run.logStreamId, traces: [{ name: "after" }] } });
    expect(ingest.status).toBe(200);
    expect(names(await search(tenant, run))).toContain("after");
    const found = await dbOf(otherShard(source)).prepare("SELECT count(*) AS n FROM records WHERE project_id = ? AND name = 'after'").bind(run.projectId).first();
    expect(found).toEqual({ n: 1 });
  });

  it("does not touch another organization's project on the same shards", async () => {
    const mine = await seed(tenant, 1);
    const theirs = await seed(stranger, 2);
    const source = await shardOf(mine.projectId);
    const theirShard = await shardOf(theirs.projectId);
    const before = await projectState(dbOf(theirShard), theirs.projectId);
    await stepUntil(await requestMove(mine.projectId, otherShard(source)));
    expect(await projectState(dbOf(theirShard), theirs.projectId)).toEqual(before);
    expect(await stateOnShard(dbOf(theirShard), theirs.projectId)).toBe("active");
    expect(await shardOf(theirs.projectId)).toBe(theirShard);
  });

  it("runs to its end through the real queue, started by the watchdog", async () => {
    moveTestSeam.chunkRecords = 4;
    const run = await seed(tenant, 3);
    const source = await shardOf(run.projectId);
    const before = await projectState(dbOf(source), run.projectId);
    const moveId = await requestMove(run.projectId, otherShard(source));
    expect(await kickMoves(env as Env)).toBeGreaterThanOrEqual(1);
    // The watchdog does not double a move that has its message.
    expect(await kickMoves(env as Env)).toBe(0);
    const done = await runThroughQueue(moveId, 30_000, false);
    expect(done.phase).toBe("completed");
    expect(await projectState(dbOf(otherShard(source)), run.projectId)).toEqual(before);
    // A stale message of the finished move does nothing.
    await env.MOVE_QUEUE.send({ moveId, seq: 0 });
  });
});

describe("a message the queue does not take", () => {
  it("leaves the move due for the watchdog's next run, not stalled without a message", async () => {
    const run = await seed(tenant, 1);
    const source = await shardOf(run.projectId);
    const moveId = await requestMove(run.projectId, otherShard(source));
    const refusing = { ...(env as Env), MOVE_QUEUE: { send: async () => Promise.reject(new Error("queue unavailable")) } as unknown as Queue };
    // The watchdog reports it sent nothing, and the move is due again with its seq unchanged.
    expect(await kickMoves(refusing as Env)).toBe(0);
    const refused = await move(moveId);
    expect(refused).toMatchObject({ phase: "queued", updated_at: 0, message_seq: 0 });
    // The next run (the next minute, or a local worker's next poke) sends it, and the move ends.
    expect(await kickMoves(env as Env)).toBeGreaterThanOrEqual(1);
    expect((await runThroughQueue(moveId, 30_000, false)).phase).toBe("completed");
  }, 30_000);
});

describe("a move that keeps failing", () => {
  it("is paused by the dead-letter queue (the source takes writes again), and resumes to the end", async () => {
    const run = await seed(tenant, 2);
    const source = await shardOf(run.projectId);
    const target = otherShard(source);
    const moveId = await requestMove(run.projectId, target);
    await stepUntil(moveId, (m) => m.phase === "frozen");
    expect(await stateOnShard(dbOf(source), run.projectId)).toBe("frozen");
    // A step that fails whatever is retried (as a bug or a lasting outage would).
    await env.DB.prepare("UPDATE project_moves SET step = 'no-such-step', updated_at = 0 WHERE id = ?").bind(moveId).run();
    expect(await kickMoves(env as Env)).toBeGreaterThanOrEqual(1);
    const deadline = Date.now() + 30_000;
    let paused = await move(moveId);
    while (paused.status !== "paused") {
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((r) => setTimeout(r, 100));
      paused = await move(moveId);
    }
    expect(paused).toMatchObject({ phase: "catching_up", step: "pass-1" });
    expect(paused.error_message).toMatch(/repeated failures.*move-project command again/);
    expect(await stateOnShard(dbOf(source), run.projectId)).toBe("exporting");
    expect(await shardOf(run.projectId)).toBe(source);
    // Writes are accepted again while paused (and logged for the resumed move).
    const accepted = await call(`/v2/projects/${run.projectId}/traces`, { as: tenant, body: { log_stream_id: run.logStreamId, traces: [{ name: "while-paused" }] } });
    expect(accepted.status).toBe(200);

    // Resumed as the admin command does.
    await runStatements(env.DB, [resumeMoveStatement(moveId)]);
    expect(await kickMoves(env as Env)).toBeGreaterThanOrEqual(1);
    const done = await runThroughQueue(moveId, 30_000, false);
    expect(done).toMatchObject({ phase: "completed", status: "running", error_message: null });
    expect(await shardOf(run.projectId)).toBe(target);
    expect(names(await search(tenant, run))).toContain("while-paused");
  }, 30_000);
});

describe("the catalog as a shard", () => {
  it("moves a project onto the catalog database and off it again (projects placed before sharding), keeping the catalog's runs", async () => {
    moveTestSeam.chunkRecords = 4;
    const run = await seed(tenant, 2);
    const first = await shardOf(run.projectId);
    const before = await projectState(dbOf(first), run.projectId);
    expect((await stepUntil(await requestMove(run.projectId, "DB"))).phase).toBe("completed");
    expect(await shardOf(run.projectId)).toBe("DB");
    expect(await projectState(env.DB, run.projectId)).toEqual(before);
    expect(names(await search(tenant, run))).toContain("t0");
    // And off it: the catalog's runs are the runs themselves and stay.
    expect((await stepUntil(await requestMove(run.projectId, otherShard(first)))).phase).toBe("completed");
    expect(await projectState(dbOf(otherShard(first)), run.projectId)).toEqual(before);
    const catalogRuns = await env.DB.prepare("SELECT count(*) AS n FROM runs WHERE project_id = ?").bind(run.projectId).first<{ n: number }>();
    expect(catalogRuns!.n).toBe(before.runs.length);
    const leftOnCatalog = await env.DB.prepare("SELECT count(*) AS n FROM records WHERE project_id = ?").bind(run.projectId).first<{ n: number }>();
    expect(leftOnCatalog!.n).toBe(0);
    expect(await stateOnShard(env.DB, run.projectId)).toBe("gone");
  });
});

describe("a deletion job and a move", () => {
  it("a job started during the move deletes every matching record, wherever it is by then, and counts each once", async () => {
    moveTestSeam.chunkRecords = 2;
    const run = await seed(tenant, 4);
    const value = `during-${uuid()}`;
    await postTraces(tenant, run, [trace("doomed-1", { customer: value }), trace("doomed-2", { customer: value }), trace("doomed-3", { customer: value })]);
    const source = await shardOf(run.projectId);
    const target = otherShard(source);
    const moveId = await requestMove(run.projectId, target);
    // Every record is copied: the target holds a copy of each matching one too.
    await stepUntil(moveId, (m) => m.phase === "catching_up");
    const copies = await dbOf(target).prepare("SELECT count(*) AS n FROM records WHERE project_id = ? AND user_metadata ->> 'customer' = ?").bind(run.projectId, value).first();
    expect(copies).toEqual({ n: 3 });
    // A dry run counts each record once, though two databases hold it.
    const dry = await deleteByMetadata(tenant, { metadata_key: "customer", metadata_value: value }, "?dry_run=true");
    expect(dry.status).toBe(200);
    expect(dry.body).toMatchObject({ would_delete: { sessions: 0, traces: 3, spans: 9 }, would_delete_is_exact: true });
    const job = await deleteByMetadata(tenant, { metadata_key: "customer", metadata_value: value });
    expect(job.status).toBe(200);
    // The move waits for the job to finish on the source before it freezes or switches.
    const { job: finished } = await waitForJob(tenant, job.body.job_id);
    expect(finished.status).toBe("completed");
    expect([finished.sessions_deleted ?? finished.progress?.sessions_deleted, finished.traces_deleted ?? finished.progress?.traces_deleted, finished.spans_deleted ?? finished.progress?.spans_deleted]).toEqual([0, 3, 9]);
    const done = await stepUntil(moveId);
    expect(done.phase).toBe("completed");
    const left = await dbOf(target).prepare("SELECT count(*) AS n FROM records WHERE project_id = ? AND user_metadata ->> 'customer' = ?").bind(run.projectId, value).first();
    expect(left).toEqual({ n: 0 });
    expect(names(await search(tenant, run))).not.toContain("doomed-1");
    expect(names(await search(tenant, run))).toContain("t0");
  });

  it("a job after the move finds the records on the target, and counts each once", async () => {
    const run = await seed(tenant, 2);
    const value = `after-${uuid()}`;
    await postTraces(tenant, run, [trace("doomed-1", { customer: value }), trace("doomed-2", { customer: value })]);
    const source = await shardOf(run.projectId);
    await stepUntil(await requestMove(run.projectId, otherShard(source)));
    const job = await deleteByMetadata(tenant, { metadata_key: "customer", metadata_value: value });
    const { job: finished } = await waitForJob(tenant, job.body.job_id);
    expect(finished.status).toBe("completed");
    expect([finished.sessions_deleted ?? finished.progress?.sessions_deleted, finished.traces_deleted ?? finished.progress?.traces_deleted, finished.spans_deleted ?? finished.progress?.spans_deleted]).toEqual([0, 2, 6]);
    expect(names(await search(tenant, run))).not.toContain("doomed-1");
    expect(names(await search(tenant, run))).toContain("t0");
  });
});

describe("asking for a move", () => {
  it("to the shard the project is on creates nothing", async () => {
    const run = await createRun(tenant);
    await expect(requestMove(run.projectId, await shardOf(run.projectId))).rejects.toThrow(/not created/);
  });

  it("of a project already moving is refused by the catalog", async () => {
    const run = await createRun(tenant);
    const target = otherShard(await shardOf(run.projectId));
    await requestMove(run.projectId, target);
    await expect(requestMove(run.projectId, target)).rejects.toThrow(/UNIQUE/);
  });

  it("to a database the worker does not have fails the move before touching anything", async () => {
    const run = await createRun(tenant);
    const moveId = await requestMove(run.projectId, "SHARD_9");
    const failed = await stepUntil(moveId);
    expect(failed).toMatchObject({ phase: "failed" });
    expect(failed.error_message).toMatch(/SHARD_9 is not a data shard/);
    expect(await stateOnShard(dbOf(await shardOf(run.projectId)), run.projectId)).toBe("active");
    // The failed move does not block the next one.
    expect((await stepUntil(await requestMove(run.projectId, otherShard(await shardOf(run.projectId))))).phase).toBe("completed");
  });
});
