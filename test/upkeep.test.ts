/**
 * The upkeep of derived data follows the writes (issue 29, point 1; src/upkeep): a write starts
 * its database's upkeep through the upkeep queue, coalesced to one pending message per database;
 * two runs of one database never overlap (the lease); a failing chunk is logged with its
 * watermarks, retried with backoff, and holds up no other database.
 */
import { applyD1Migrations, createExecutionContext, createMessageBatch, env, getQueueResult } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import type { Env, UpkeepMessage } from "../src/env";
import worker from "../src/index";
import { LEASE_MS, releaseCaughtUp, takeLease } from "../src/upkeep/upkeep-lease";
import { requestUpkeep } from "../src/upkeep/upkeep-request";
import { retryDelaySeconds, UPKEEP_QUEUE_NAME } from "../src/upkeep/upkeep-consumer";
import { runUpkeep, UpkeepFailure, upkeepEverywhere } from "../src/upkeep/upkeep-runner";
import { nextChunkRids } from "../src/upkeep/upkeep-run";
import { coalesceSeconds, DEFAULT_COALESCE_SECONDS } from "../src/upkeep/upkeep-pace";
import { createRun, postTraces } from "./deletion-fixtures";
import { faultyD1 } from "./support/faulty-d1";
import { recordsOf } from "./support/record-dbs";
import { createTenant, type Tenant } from "./support/tenants";
import { textIndexDifferences } from "./support/text-index";

/**
 * A database of its own for the lease and coalescing cases: the shard schema on the test's spare
 * binding, so the upkeep that the other cases' writes start never touches its row.
 */
const SPARE = "MIGRATION_TEST_DB";
const spare = () => (env as unknown as Record<string, D1Database>)[SPARE]!;

let tenant: Tenant;

beforeAll(async () => {
  await applyD1Migrations(spare(), env.TEST_SHARD_MIGRATIONS);
  tenant = await createTenant("admin");
});

const hourAgo = () => new Date(Date.now() - 3_600_000).toISOString();
function traces(n: number, word: string) {
  return Array.from({ length: n }, (_, i) => ({
    id: crypto.randomUUID(),
    name: "chat",
    input: `question ${i} about ${word}`,
    output: "answer",
    created_at: hourAgo(),
    metrics: { duration_ns: 1_000 + i },
    spans: [{ id: crypto.randomUUID(), type: "llm", name: "call", input: "x", output: "y", created_at: hourAgo() }],
  }));
}

interface DerivedState {
  unindexed: number;
  marked: number;
  pending: number | null;
  lease: number | null;
}

async function derivedState(db: D1Database): Promise<DerivedState> {
  return (await db
    .prepare(
      `SELECT coalesce((SELECT max(rid) FROM records), 0) - (SELECT indexed_through FROM records_text_backfill) AS unindexed,
         (SELECT count(*) FROM metric_dirty_hours) AS marked,
         (SELECT pending_since FROM upkeep_state) AS pending, (SELECT lease_until FROM upkeep_state) AS lease`,
    )
    .first<DerivedState>())!;
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const idle = (s: DerivedState) => s.unindexed === 0 && s.marked === 0 && s.pending === null && s.lease === null;

describe("the upkeep follows the writes", () => {
  it("indexes the text and recomputes the marked hours of a write without any cron", async () => {
    const run = await createRun(tenant);
    await postTraces(tenant, run, traces(50, "zebra"));
    const db = await recordsOf(run.projectId);
    const state = await until(() => derivedState(db), idle);
    expect(state).toEqual({ unindexed: 0, marked: 0, pending: null, lease: null });
    expect(await textIndexDifferences(db)).toEqual([]);
    // Several writes in a row: each leaves the database caught up again, with no message left behind.
    for (let i = 0; i < 3; i += 1) await postTraces(tenant, run, traces(20, `yak${i}`));
    expect(await until(() => derivedState(db), idle)).toEqual({ unindexed: 0, marked: 0, pending: null, lease: null });
  });

  it("a database caught up by the queue answers a substring search from the index", async () => {
    const run = await createRun(tenant);
    await postTraces(tenant, run, traces(30, "quokka"));
    const db = await recordsOf(run.projectId);
    await until(() => derivedState(db), idle);
    const search = await SELFsearch(run, "quokka");
    expect(search.status).toBe(200);
    expect(search.records).toBe(30);
  });
});

async function SELFsearch(run: { projectId: string; logStreamId: string }, needle: string) {
  const { call } = await import("./support/client");
  const answer = await call(`/v2/projects/${run.projectId}/traces/partial_search`, {
    as: tenant,
    body: { log_stream_id: run.logStreamId, limit: 100, filters: [{ type: "text", column_id: "input", operator: "contains", value: needle }] },
  });
  return { status: answer.status, records: (answer.body.records ?? []).length as number };
}

describe("one pending message per database", () => {
  it("many requests at once send exactly one message, and count every request", async () => {
    const db = spare();
    await until(() => db.prepare("SELECT pending_since FROM upkeep_state").first<{ pending_since: number | null }>(), (row) => row?.pending_since === null);
    const before = (await db.prepare("SELECT requested_seq FROM upkeep_state").first<{ requested_seq: number }>())!.requested_seq;
    const now = Date.now();
    const sent = await Promise.all(Array.from({ length: 20 }, () => requestUpkeep(env, SPARE, now)));
    expect(sent.filter(Boolean)).toHaveLength(1);
    const after = (await db.prepare("SELECT requested_seq FROM upkeep_state").first<{ requested_seq: number }>())!.requested_seq;
    expect(after - before).toBe(20);
    // The message runs the upkeep, which clears the mark: the next request sends again.
    await until(() => db.prepare("SELECT pending_since FROM upkeep_state").first<{ pending_since: number | null }>(), (row) => row?.pending_since === null);
    expect(await requestUpkeep(env, SPARE)).toBe(true);
  });

  it("a pending mark older than a chain's life is taken for lost: the next write sends again", async () => {
    const db = spare();
    await db.prepare("UPDATE upkeep_state SET pending_since = ?1, pending_token = 'lost'").bind(Date.now() - 10 * 60_000).run();
    expect(await requestUpkeep(env, SPARE)).toBe(true);
    expect(await requestUpkeep(env, SPARE)).toBe(false);
  });
});

/**
 * The coalescing in time (src/upkeep/upkeep-pace.ts). The suite runs with UPKEEP_COALESCE_SECONDS
 * "0" (vitest.config.ts); these cases set it on the env they pass, and the queue's consumer (which
 * runs with the suite's env) runs what arrives.
 */
describe("the writes of a few seconds share one run", () => {
  const pendingOf = (db: D1Database) => db.prepare("SELECT pending_since, lease_until FROM upkeep_state").first<{ pending_since: number | null; lease_until: number | null }>();

  it("reads UPKEEP_COALESCE_SECONDS, 5 s when unset or unreadable, at most 60 s (under the 120 s after which a pending mark is taken for lost)", () => {
    expect(DEFAULT_COALESCE_SECONDS).toBe(5);
    expect([undefined, "", "0", "2", "abc", "-1", "1000"].map((v) => coalesceSeconds({ UPKEEP_COALESCE_SECONDS: v }))).toEqual([5, 5, 0, 2, 5, 5, 60]);
  });

  /**
   * The upkeep queue, each send recorded and passed on to the real queue. The delivery delay is
   * the platform's (Queues' delaySeconds; under `wrangler dev` the runs came 5 s apart in the
   * ingest probe), but the vitest pool's local queue delivered such a message within 1.5 s: so
   * these cases assert the delay each message is sent with.
   */
  function recordingQueue(): { queue: Queue<UpkeepMessage>; sends: { body: UpkeepMessage; delaySeconds: number | undefined }[] } {
    const sends: { body: UpkeepMessage; delaySeconds: number | undefined }[] = [];
    const real = env.UPKEEP_QUEUE as Queue<UpkeepMessage>;
    const send = async (body: UpkeepMessage, options?: QueueSendOptions) => {
      sends.push({ body, delaySeconds: options?.delaySeconds });
      await real.send(body, options);
    };
    const queue = new Proxy(real, {
      get(target, property) {
        if (property === "send") return send;
        const value = Reflect.get(target, property) as unknown;
        return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    return { queue, sends };
  }

  it("the message a write sends is delivered that many seconds later, and writes meanwhile send none", async () => {
    const db = spare();
    await until(() => pendingOf(db), (row) => row?.pending_since === null && row.lease_until === null);
    const { queue, sends } = recordingQueue();
    const paced = { ...env, UPKEEP_COALESCE_SECONDS: "3", UPKEEP_QUEUE: queue } as Env;
    expect(await requestUpkeep(paced, SPARE)).toBe(true);
    expect(await requestUpkeep(paced, SPARE)).toBe(false);
    expect(await requestUpkeep(paced, SPARE)).toBe(false);
    expect(sends).toEqual([{ body: { shard: SPARE }, delaySeconds: 3 }]);
    // The one message runs the upkeep, which catches up and clears the mark.
    expect((await until(() => pendingOf(db), (row) => row?.pending_since === null, 30_000))!.pending_since).toBeNull();
  });

  /** The database, with one write asking for upkeep as the run's first chunk starts (the run has looked at requested_seq by then). */
  function writeDuringTheRun(db: D1Database): D1Database {
    let asked = false;
    return new Proxy(db, {
      get(target, property) {
        const value = Reflect.get(target, property) as unknown;
        if (property === "batch") {
          return async (statements: D1PreparedStatement[]) => {
            if (!asked) {
              asked = true;
              await target.prepare("UPDATE upkeep_state SET requested_seq = requested_seq + 1").run();
            }
            return target.batch(statements);
          };
        }
        return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
  }

  it("a run that finds writes arrived meanwhile hands over to a continuation as late, instead of going round at once", async () => {
    const db = spare();
    await until(() => pendingOf(db), (row) => row?.pending_since === null && row.lease_until === null);
    const { queue, sends } = recordingQueue();
    const paced = { ...env, UPKEEP_COALESCE_SECONDS: "3", UPKEEP_QUEUE: queue, [SPARE]: writeDuringTheRun(db) } as Env;
    expect((await runUpkeep(paced, SPARE)).state).toBe("deferred");
    expect(sends).toEqual([{ body: { shard: SPARE }, delaySeconds: 3 }]);
    // The lease is free and a message pending: writes meanwhile send none, the continuation runs them.
    expect(await pendingOf(db)).toEqual({ pending_since: expect.any(Number), lease_until: null });
    expect(await requestUpkeep(paced, SPARE)).toBe(false);
    expect(sends).toHaveLength(1);
    expect((await until(() => pendingOf(db), (row) => row?.pending_since === null, 30_000))!.pending_since).toBeNull();
    // With no coalescing ("0"), the run goes round at once and stops caught up, as before.
    const atOnce = recordingQueue();
    const unpaced = { ...env, UPKEEP_COALESCE_SECONDS: "0", UPKEEP_QUEUE: atOnce.queue, [SPARE]: writeDuringTheRun(db) } as Env;
    expect((await runUpkeep(unpaced, SPARE)).state).toBe("caught-up");
    expect(atOnce.sends).toEqual([]);
    expect(await pendingOf(db)).toEqual({ pending_since: null, lease_until: null });
  });
});

describe("the lease", () => {
  it("lets one run in at a time, and a second run leaves the work to the first", async () => {
    const db = spare();
    const first = await until(() => takeLease(db), (lease) => lease !== null);
    expect(first).not.toBeNull();
    expect(await takeLease(db)).toBeNull();
    expect(await runUpkeep(env, SPARE)).toEqual({ state: "busy" });
    expect(await releaseCaughtUp(first!)).toBe(true);
    const second = await takeLease(db);
    expect(second).not.toBeNull();
    expect(await releaseCaughtUp(second!)).toBe(true);
  });

  it("a run does not stop while a write asked for upkeep after it looked", async () => {
    const db = spare();
    const lease = (await until(() => takeLease(db), (l) => l !== null))!;
    await db.prepare("UPDATE upkeep_state SET requested_seq = requested_seq + 1").run();
    expect(await releaseCaughtUp(lease)).toBe(false);
    expect(await releaseCaughtUp(lease)).toBe(true);
  });

  it("an expired lease (its run died) is taken over", async () => {
    const db = spare();
    const dead = await until(() => takeLease(db, Date.now() - LEASE_MS - 1_000), (l) => l !== null);
    expect(dead).not.toBeNull();
    const next = await takeLease(db);
    expect(next).not.toBeNull();
    expect(await releaseCaughtUp(next!)).toBe(true);
  });
});

describe("failures", () => {
  it("a failing chunk is reported with its database and watermarks, frees the lease, and holds up no other database", async () => {
    const run = await createRun(tenant);
    const db = await recordsOf(run.projectId);
    const shard = db === env.SHARD_0 ? "SHARD_0" : db === env.SHARD_1 ? "SHARD_1" : "DB";
    await until(() => derivedState(db), idle);
    // Another database with a backlog: records the upkeep has not indexed yet (written by SQL, so no request was made).
    const other = spare();
    await until(() => other.prepare("SELECT lease_until FROM upkeep_state").first<{ lease_until: number | null }>(), (row) => row?.lease_until === null);
    // The failing database: its third D1 call fails on the way (after the lease and a first chunk).
    const faulty = faultyD1(db, 3, "before");
    const broken = { ...env, [shard]: faulty.db } as Env;
    await expect(runUpkeep(broken, shard)).rejects.toSatisfy((error: unknown) => {
      expect(error).toBeInstanceOf(UpkeepFailure);
      expect((error as Error).message).toContain(`upkeep of ${shard} failed`);
      expect((error as Error).message).toMatch(/text index through rid \d+ of \d+/);
      return true;
    });
    expect(faulty.fired()).toBe(true);
    const row = await db.prepare("SELECT lease_until, failures, last_error, pending_since FROM upkeep_state").first<{ lease_until: number | null; failures: number; last_error: string; pending_since: number | null }>();
    expect(row!.lease_until).toBeNull();
    expect(row!.failures).toBeGreaterThanOrEqual(1);
    expect(row!.last_error).toContain(shard);
    expect(row!.pending_since).not.toBeNull();
    // The cron's pass over every database: the broken one fails again, the others still run.
    await db.prepare("UPDATE upkeep_state SET failures = 0").run();
    const alwaysBroken = { ...env, [shard]: faultyD1(db, 2, "before").db, DATA_SHARDS: `${shard},${SPARE}` } as Env;
    await other.prepare("UPDATE upkeep_state SET requested_seq = requested_seq + 1").run();
    const seqBefore = (await other.prepare("SELECT requested_seq FROM upkeep_state").first<{ requested_seq: number }>())!.requested_seq;
    await upkeepEverywhere(alwaysBroken, 2_000);
    const otherRow = await other.prepare("SELECT lease_until, pending_since, requested_seq FROM upkeep_state").first<{ lease_until: number | null; pending_since: number | null; requested_seq: number }>();
    expect(otherRow).toEqual({ lease_until: null, pending_since: null, requested_seq: seqBefore });
    // The real database runs fine again.
    expect((await runUpkeep(env, shard)).state).not.toBe("busy");
  });

  it("the consumer retries a failed run with a growing delay", async () => {
    expect([1, 2, 3, 4, 8, 9, 20].map(retryDelaySeconds)).toEqual([2, 4, 8, 16, 256, 300, 300]);
    const run = await createRun(tenant);
    const db = await recordsOf(run.projectId);
    const shard = db === env.SHARD_0 ? "SHARD_0" : db === env.SHARD_1 ? "SHARD_1" : "DB";
    await until(() => derivedState(db), (s) => s.lease === null);
    const broken = { ...env, [shard]: faultyD1(db, 1, "before").db } as Env;
    const batch = createMessageBatch<UpkeepMessage>(UPKEEP_QUEUE_NAME, [{ id: "m1", timestamp: new Date(), attempts: 3, body: { shard } }]);
    const ctx = createExecutionContext();
    await worker.queue(batch as MessageBatch<never>, broken);
    const result = await getQueueResult(batch, ctx);
    // The delay (8 s after a third attempt) is the consumer's retry({ delaySeconds }); the test
    // helper reports which messages were retried, not their delays.
    expect(result.retryMessages.map((m) => m.msgId)).toEqual(["m1"]);
    expect(result.explicitAcks).toEqual([]);
  });
});

describe("chunk sizes", () => {
  it("follow the time a chunk took, within bounds", () => {
    expect(nextChunkRids(1_000, 300)).toBe(1_000);
    expect(nextChunkRids(1_000, 30)).toBe(2_000);
    expect(nextChunkRids(1_000, 3_000)).toBe(500);
    expect(nextChunkRids(150, 3_000)).toBe(100);
    expect(nextChunkRids(15_000, 1)).toBe(20_000);
  });
});
