/**
 * The deletion queue consumer and the dead-letter consumer, called through the worker's real
 * `queue` handler: status transitions, continuation messages, per-message retry with exponential
 * backoff, the dead-letter path, and messages that must do nothing (finished jobs, duplicates,
 * malformed bodies, unknown jobs). Continuations are captured instead of sent, so each test
 * drives every delivery itself.
 */
import { env } from "cloudflare:test";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { deletionTestSeam, retryDelaySeconds } from "../src/deletion/deletion-budgets";
import { deleteChunk } from "../src/deletion/delete-chunk";
import { advanceJobPart } from "../src/deletion/advance-job";
import type { DeletionMessage } from "../src/env";
import { deletionJobById, failJob, insertDeletionJob } from "../src/deletion/deletion-jobs";
import {
  DEAD_LETTER_QUEUE,
  DELETION_QUEUE,
  capturingBindings,
  createRun,
  deliver,
  expectedDeletion,
  getJob,
  postTraces,
  snapshot,
  without,
} from "./deletion-fixtures";
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

/** `traces` matching traces of 3 spans each, and one that does not match. */
async function seedTraces(value: string, traces: number) {
  const run = await createRun(admin);
  const span = () => ({ id: uuid(), type: "tool", name: "tool", input: "i", output: "o", tags: ["x"], metrics: { latency: 1 } });
  await postTraces(admin, run, [
    ...Array.from({ length: traces }, (_, i) => ({ id: uuid(), name: `t${i}`, user_metadata: { user: value }, spans: [span(), span(), span()] })),
    { id: uuid(), name: "survivor", user_metadata: { user: `${value}!` }, spans: [span()] },
  ]);
  return run;
}

function queuedJob(value: string): Promise<string> {
  return insertDeletionJob(env, {
    organizationId: admin.organizationId,
    createdBy: admin.userId,
    request: { metadata_key: "user", metadata_value: value, immediate: false },
    status: "queued",
  });
}

const message = (jobId: string, attempts = 1) => ({ id: uuid(), attempts, body: { jobId } });

describe("deletion queue consumer", () => {
  it("moves a job queued -> running -> completed, one continuation per unfinished message", async () => {
    const value = `steps-${uuid()}`;
    await seedTraces(value, 5);
    const before = await snapshot();
    const expected = expectedDeletion(before.records, admin.organizationId, "user", value);
    const jobId = await queuedJob(value);
    expect((await getJob(admin, jobId)).status).toBe("queued");

    deletionTestSeam.chunkLimits = { roots: 1, sessionTraces: 1, spans: 2 };
    deletionTestSeam.messageBudget = { maxMillis: 60_000, maxRecords: 4, maxQueries: 1000 };
    const statuses: string[] = [];
    let pending: { id: string; attempts: number; body: DeletionMessage }[] = [message(jobId)];
    let deliveries = 0;
    while (pending.length > 0) {
      const { bindings, sent } = capturingBindings();
      const delivered = pending.shift()!;
      const result = await deliver(DELETION_QUEUE, [delivered], bindings);
      expect(result.explicitAcks).toEqual([delivered.id]);
      expect(result.retryMessages).toEqual([]);
      const job = await getJob(admin, jobId);
      statuses.push(job.status);
      // Continuations name one shard each, and never one already waiting: at most one message
      // per part is in flight. None once the job is completed.
      if (job.status === "completed") expect(sent).toEqual([]);
      for (const body of sent) {
        expect(body).toEqual({ jobId, shard: expect.stringMatching(/^(SHARD_\d+|DB)$/) });
        expect(pending.some((m) => m.body.shard === body.shard)).toBe(false);
      }
      pending.push(...sent.map((body) => ({ id: uuid(), attempts: 1, body })));
      deliveries += 1;
      expect(deliveries).toBeLessThan(20);
    }
    expect(statuses.at(-1)).toBe("completed");
    expect(new Set(statuses.slice(0, -1))).toEqual(new Set(["running"]));
    expect(deliveries).toBeGreaterThan(2);
    const job = await getJob(admin, jobId);
    expect(job.progress).toEqual({ sessions_deleted: 0, traces_deleted: 5, spans_deleted: 15 });
    expect(job.error_message).toBeNull();
    expect(await snapshot()).toEqual(without(before, expected.ids));
  });

  it("retries a failing message alone, with exponential backoff, keeping committed chunks", async () => {
    const value = `retry-${uuid()}`;
    await seedTraces(value, 3);
    const jobId = await queuedJob(value);
    const healthyJob = await queuedJob(`nothing-${uuid()}`);
    deletionTestSeam.chunkLimits = { roots: 1, sessionTraces: 1, spans: 2 };
    let chunks = 0;
    deletionTestSeam.afterChunk = (id) => {
      if (id === jobId && ++chunks === 1) throw new Error("injected crash after the first chunk");
    };
    const failing = message(jobId, 3);
    const healthy = message(healthyJob);
    const { bindings, sent } = capturingBindings();
    const result = await deliver(DELETION_QUEUE, [failing, healthy], bindings);
    expect(result.retryBatch.retry).toBe(false);
    expect(result.retryMessages).toEqual([{ msgId: failing.id }]);
    expect(result.retryDelays).toEqual({ [failing.id]: 8 });
    expect(result.explicitAcks).toEqual([healthy.id]);
    expect(sent).toEqual([]);
    // The first chunk committed before the crash, and is counted.
    const job = await getJob(admin, jobId);
    expect(job.status).toBe("running");
    expect(job.progress).toEqual({ sessions_deleted: 0, traces_deleted: 0, spans_deleted: 2 });
    expect((await getJob(admin, healthyJob)).status).toBe("completed");

    // The redelivery carries on from there.
    const again = await deliver(DELETION_QUEUE, [message(jobId, 4)], bindings);
    expect(again.retryMessages).toEqual([]);
    expect((await getJob(admin, jobId)).progress).toEqual({ sessions_deleted: 0, traces_deleted: 3, spans_deleted: 9 });
  });

  it("doubles the delay with every attempt, up to ten minutes", async () => {
    const value = `backoff-${uuid()}`;
    await seedTraces(value, 3);
    const jobId = await queuedJob(value);
    // One span per chunk, and a crash after each: the job never finishes here.
    deletionTestSeam.chunkLimits = { roots: 1, sessionTraces: 1, spans: 1 };
    deletionTestSeam.afterChunk = () => {
      throw new Error("injected crash");
    };
    const delays: number[] = [];
    for (const attempts of [1, 2, 3]) {
      const delivered = message(jobId, attempts);
      const result = await deliver(DELETION_QUEUE, [delivered], capturingBindings().bindings);
      expect(result.retryMessages).toEqual([{ msgId: delivered.id }]);
      delays.push(result.retryDelays[delivered.id]!);
    }
    expect(delays).toEqual([2, 4, 8]);
    expect(retryDelaySeconds(5)).toBe(32);
    expect(retryDelaySeconds(9)).toBe(512);
    expect(retryDelaySeconds(12)).toBe(600);
  });

  it("acks a finished job's message and does nothing, even if new matches arrived since", async () => {
    const value = `late-${uuid()}`;
    await seedTraces(value, 1);
    const jobId = await queuedJob(value);
    const { bindings, sent } = capturingBindings();
    expect((await deliver(DELETION_QUEUE, [message(jobId)], bindings)).explicitAcks).toHaveLength(1);
    const done = await getJob(admin, jobId);
    expect(done.status).toBe("completed");
    await seedTraces(value, 2);
    const before = await snapshot();
    const redelivered = message(jobId, 2);
    const result = await deliver(DELETION_QUEUE, [redelivered, message(jobId)], bindings);
    expect(result.explicitAcks.sort()).toHaveLength(2);
    expect(result.retryMessages).toEqual([]);
    expect(sent).toEqual([]);
    expect(await snapshot()).toEqual(before);
    expect(await getJob(admin, jobId)).toEqual(done);
  });

  it("does one message's work when a batch holds the same job twice", async () => {
    const value = `twice-${uuid()}`;
    await seedTraces(value, 4);
    const jobId = await queuedJob(value);
    deletionTestSeam.chunkLimits = { roots: 1, sessionTraces: 1, spans: 3 };
    deletionTestSeam.messageBudget = { maxMillis: 60_000, maxRecords: 4, maxQueries: 1000 };
    const { bindings, sent } = capturingBindings();
    const result = await deliver(DELETION_QUEUE, [message(jobId), message(jobId)], bindings);
    expect(result.explicitAcks).toHaveLength(2);
    // One message's work: continuations for the parts it left open, each once.
    expect(sent.length).toBeGreaterThan(0);
    expect(new Set(sent.map((m) => m.shard)).size).toBe(sent.length);
    expect((await getJob(admin, jobId)).progress).toEqual({ sessions_deleted: 0, traces_deleted: 1, spans_deleted: 3 });
  });

  it("deletes what was ingested into the project after the job started, while its shard's part runs", async () => {
    const value = `later-${uuid()}`;
    const run = await seedTraces(value, 2);
    const jobId = await queuedJob(value);
    deletionTestSeam.chunkLimits = { roots: 1, sessionTraces: 1, spans: 2 };
    deletionTestSeam.messageBudget = { maxMillis: 60_000, maxRecords: 2, maxQueries: 1000 };
    const { bindings, sent } = capturingBindings();
    await deliver(DELETION_QUEUE, [message(jobId)], bindings);
    expect((await getJob(admin, jobId)).status).toBe("running");
    const span = () => ({ id: uuid(), type: "tool", name: "tool", input: "i", output: "o", tags: ["x"], metrics: { latency: 1 } });
    await postTraces(admin, run, Array.from({ length: 3 }, (_, i) => ({ id: uuid(), name: `late-${i}`, user_metadata: { user: value }, spans: [span(), span(), span()] })));
    delete deletionTestSeam.messageBudget;
    await deliver(DELETION_QUEUE, sent.map((body) => ({ id: uuid(), attempts: 1, body })), bindings);
    const job = await getJob(admin, jobId);
    expect(job.status).toBe("completed");
    expect(job.progress).toEqual({ sessions_deleted: 0, traces_deleted: 5, spans_deleted: 15 });
    const left = await allRecordDbs
      .prepare("SELECT count(*) AS n FROM record_metadata AS m JOIN run_families AS f ON f.key = m.family_key WHERE f.organization_id = ? AND m.key = 'user' AND m.value = ?")
      .bind(admin.organizationId, value)
      .first<{ n: number }>();
    expect(left!.n).toBe(0);
  });

  it("deletes nothing in a chunk once the job is no longer active, even if it was when loaded", async () => {
    const value = `gate-${uuid()}`;
    const run = await seedTraces(value, 2);
    const jobId = await queuedJob(value);
    const loaded = (await deletionJobById(env.DB, jobId))!;
    expect(loaded.status).toBe("queued");
    // Another consumer's dead letter fails the job between this consumer's load and its chunk,
    // before any chunk ever ran on the shard.
    await failJob(env, jobId, "failed elsewhere");
    const before = await snapshot();
    const shard = await recordsOf(run.projectId);
    const chunk = await deleteChunk(shard, loaded, { roots: 100, sessionTraces: 100, spans: 100 });
    expect(chunk.status).toBe("failed");
    expect(chunk.progress).toEqual({ sessions: 0, traces: 0, spans: 0 });
    const part = await advanceJobPart(shard, loaded, { maxMillis: 60_000, maxRecords: 1_000, maxQueries: 100 });
    expect(part.state).toBe("failed");
    expect(await snapshot()).toEqual(before);
  });

  it("drops malformed messages and messages of unknown jobs", async () => {
    const bodies = [null, "text", {}, { jobId: 42 }, { jobId: "not-a-uuid" }, { jobId: uuid() }];
    const messages = bodies.map((body) => ({ id: uuid(), attempts: 1, body }));
    const result = await deliver(DELETION_QUEUE, messages);
    expect(result.explicitAcks.sort()).toEqual(messages.map((m) => m.id).sort());
    expect(result.retryMessages).toEqual([]);
  });

  it("lets timers and other tasks of the isolate run between two chunks", async () => {
    // Local D1 answers in process: a consumer that chains its chunks straight into one another
    // never hands the event loop back, so wrangler dev held every HTTP request for a whole queue
    // message and once lost the message's completion (its queue then stopped). A timer set
    // after one chunk must fire before the next chunk starts.
    const value = `yield-${uuid()}`;
    await seedTraces(value, 3);
    const jobId = await queuedJob(value);
    deletionTestSeam.chunkLimits = { roots: 1, sessionTraces: 1, spans: 1 };
    const timerFiredBeforeChunk: boolean[] = [];
    let timerFired = true;
    deletionTestSeam.afterChunk = () => {
      timerFiredBeforeChunk.push(timerFired);
      timerFired = false;
      setTimeout(() => {
        timerFired = true;
      }, 0);
    };
    const result = await deliver(DELETION_QUEUE, [message(jobId)], capturingBindings().bindings);
    expect(result.explicitAcks).toHaveLength(1);
    expect((await getJob(admin, jobId)).status).toBe("completed");
    expect(timerFiredBeforeChunk.length).toBeGreaterThan(5);
    expect(timerFiredBeforeChunk.every(Boolean)).toBe(true);
  });
});

describe("dead-letter consumer", () => {
  it("marks an exhausted job failed with an error message, and it deletes nothing more", async () => {
    const value = `dead-${uuid()}`;
    await seedTraces(value, 2);
    const jobId = await queuedJob(value);
    const dead = message(jobId, 1);
    const result = await deliver(DEAD_LETTER_QUEUE, [dead]);
    expect(result.explicitAcks).toEqual([dead.id]);
    const job = await getJob(admin, jobId);
    expect(job.status).toBe("failed");
    expect(job.error_message).toMatch(/repeated failures/);
    expect(Date.parse(job.updated_at)).toBeGreaterThanOrEqual(Date.parse(job.created_at));

    // A straggling message of the failed job is acked and deletes nothing.
    const before = await snapshot();
    const { bindings, sent } = capturingBindings();
    expect((await deliver(DELETION_QUEUE, [message(jobId, 2)], bindings)).explicitAcks).toHaveLength(1);
    expect(sent).toEqual([]);
    expect(await snapshot()).toEqual(before);
    expect(await getJob(admin, jobId)).toEqual(job);
  });

  it("leaves a completed job completed", async () => {
    const value = `dead-done-${uuid()}`;
    await seedTraces(value, 1);
    const jobId = await queuedJob(value);
    await deliver(DELETION_QUEUE, [message(jobId)], capturingBindings().bindings);
    const done = await getJob(admin, jobId);
    expect(done.status).toBe("completed");
    const result = await deliver(DEAD_LETTER_QUEUE, [message(jobId)]);
    expect(result.explicitAcks).toHaveLength(1);
    expect(await getJob(admin, jobId)).toEqual(done);
  });
});
