/**
 * Property: for random multi-organization datasets (ingested through the public API) and a
 * random metadata key and value, deleting through the real queue consumer, under a random
 * delivery schedule (duplicates in one batch, two consumers at once, redelivery of acked
 * messages, crashes between chunks followed by retries), removes exactly the matching subtrees
 * of the caller's organization, leaves every other row of records, record_metadata, record_tags
 * and record_metrics byte-for-byte as it was, and counts exactly what it removed. After every
 * delivery, whatever is left of the deletion set is still reachable from a surviving match (no
 * orphans). The dry run predicts the counts.
 */
import fc from "fast-check";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { deletionTestSeam } from "../src/deletion/deletion-budgets";
import { insertDeletionJob } from "../src/deletion/deletion-jobs";
import { env } from "cloudflare:test";
import {
  DELETION_QUEUE,
  type Delivery,
  type DeliveryResult,
  type Run,
  addLogStream,
  capturingBindings,
  createRun,
  deleteByMetadata,
  deliver,
  expectedDeletion,
  getJob,
  postSession,
  postTraces,
  recordKey,
  snapshot,
  without,
} from "./deletion-fixtures";
import { call } from "./support/client";
import { type Tenant, createTenant } from "./support/tenants";
import { allRecordDbs } from "./support/record-dbs";
import { catchUpTextIndexesEverywhere, textIndexDifferencesEverywhere } from "./support/text-index";

const KEYS = ["user", "team", "k"] as const;
const TARGET_VALUES = ["a", "A", "1", "true", ""] as const;

/** Stored as strings: 1 is "1" and true is "true", so they match those values. */
const metadataArb = fc.dictionary(fc.constantFrom(...KEYS), fc.oneof(fc.constantFrom("a", "A", "1", "", "b"), fc.constant(1), fc.constant(true)), {
  maxKeys: 2,
});

interface SpanSpec {
  type: "llm" | "tool" | "workflow" | "agent" | "retriever";
  user_metadata: Record<string, unknown>;
  tags: string[];
  metric: number | null;
  children: SpanSpec[];
}

const spanArb: fc.Memo<SpanSpec> = fc.memo((depth) =>
  fc.record({
    type: fc.constantFrom("llm", "tool", "workflow", "agent", "retriever"),
    user_metadata: metadataArb,
    tags: fc.subarray(["x", "y"]),
    metric: fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { nil: null }),
    children: depth > 1 ? fc.array(spanArb(depth - 1), { maxLength: 2 }) : fc.constant([]),
  }),
);

const sessionRefArb = fc.option(
  fc.record({ where: fc.constantFrom("same run", "other run", "other organization"), index: fc.nat({ max: 5 }) }),
  { nil: null },
);

const traceArb = fc.record({
  user_metadata: metadataArb,
  tags: fc.subarray(["x", "z"]),
  metric: fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { nil: null }),
  session: sessionRefArb,
  spans: fc.array(spanArb(2), { maxLength: 2 }),
});

const runArb = fc.record({
  sessions: fc.array(metadataArb, { maxLength: 3 }),
  traces: fc.array(traceArb, { maxLength: 4 }),
});

/** Per organization: one or two runs (the second is another log stream of the same project). */
const datasetArb = fc.array(fc.array(runArb, { minLength: 1, maxLength: 2 }), { minLength: 3, maxLength: 3 });

const stepArb = fc.record({
  mode: fc.constantFrom("single", "twice in one batch", "two consumers at once", "redelivered after ack"),
  crashAfterChunk: fc.option(fc.integer({ min: 1, max: 3 }), { nil: null }),
});

const scheduleArb = fc.record({
  limits: fc.record({ roots: fc.integer({ min: 1, max: 3 }), sessionTraces: fc.integer({ min: 1, max: 3 }), spans: fc.integer({ min: 1, max: 5 }) }),
  maxRecords: fc.integer({ min: 2, max: 12 }),
  steps: fc.array(stepArb, { minLength: 1, maxLength: 6 }),
});

const uuid = () => crypto.randomUUID();

function spanBody(spec: SpanSpec): Record<string, unknown> {
  return {
    id: uuid(),
    type: spec.type,
    name: spec.type,
    input: "in",
    output: spec.type === "llm" ? { role: "assistant", content: "out" } : "out",
    user_metadata: spec.user_metadata,
    tags: spec.tags,
    ...(spec.metric === null ? {} : { metrics: { toxicity: spec.metric } }),
    ...(spec.children.length > 0 ? { spans: spec.children.map(spanBody) } : {}),
  };
}

let tenants: Tenant[];

beforeAll(async () => {
  tenants = [await createTenant("admin"), await createTenant("admin"), await createTenant("admin")];
});

afterEach(() => {
  for (const key of Object.keys(deletionTestSeam)) delete deletionTestSeam[key as keyof typeof deletionTestSeam];
});

type Dataset = typeof datasetArb extends fc.Arbitrary<infer T> ? T : never;

/** One ingest request of the dataset, kept to be sent again after the deletion. */
interface Sent {
  tenant: Tenant;
  run: Run;
  session?: Record<string, unknown>;
  traces?: Record<string, unknown>[];
}

/**
 * Ingests the dataset: every organization's sessions first, then traces (which may name them).
 * Also holds one streamed update per run for a record that has not arrived (it must survive),
 * and, for a trace, one sent for its id as a span (the client's mistake: it waits for a span
 * that never comes, and must go when the trace is erased). Answers the requests it sent.
 */
async function ingest(dataset: Dataset): Promise<Sent[]> {
  const requests: Sent[] = [];
  const runs: { tenant: Tenant; run: Run; sessions: string[] }[][] = [];
  for (const [o, orgRuns] of dataset.entries()) {
    const tenant = tenants[o]!;
    const created: { tenant: Tenant; run: Run; sessions: string[] }[] = [];
    for (const [r, spec] of orgRuns.entries()) {
      const run = r === 0 ? await createRun(tenant) : await addLogStream(tenant, created[0]!.run, `second-${uuid()}`);
      const sessions: string[] = [];
      for (const metadata of spec.sessions) {
        const id = uuid();
        await postSession(tenant, run, { id, name: "session", user_metadata: metadata });
        requests.push({ tenant, run, session: { id, name: "session", user_metadata: metadata } });
        sessions.push(id);
      }
      created.push({ tenant, run, sessions });
    }
    runs.push(created);
  }
  for (const [o, orgRuns] of dataset.entries()) {
    for (const [r, spec] of orgRuns.entries()) {
      if (spec.traces.length === 0) continue;
      const { tenant, run } = runs[o]![r]!;
      const pick = (list: string[] | undefined, index: number) => (list && list.length > 0 ? list[index % list.length]! : null);
      const traces = spec.traces.map((trace) => {
        const ref = trace.session;
        const sessionId =
          ref === null
            ? null
            : ref.where === "same run"
              ? pick(runs[o]![r]!.sessions, ref.index)
              : ref.where === "other run"
                ? pick(runs[o]![1 - r]?.sessions, ref.index)
                : pick(runs[(o + 1) % runs.length]![0]!.sessions, ref.index);
        return {
          id: uuid(),
          name: "trace",
          input: "question",
          output: "answer",
          user_metadata: trace.user_metadata,
          tags: trace.tags,
          ...(trace.metric === null ? {} : { metrics: { toxicity: trace.metric } }),
          ...(sessionId ? { session_id: sessionId } : {}),
          spans: trace.spans.map(spanBody),
        };
      });
      await postTraces(tenant, run, traces);
      requests.push({ tenant, run, traces });
      await holdUpdate(tenant, run, "spans", traces[0]!.id as string);
      await holdUpdate(tenant, run, "traces", uuid());
    }
  }
  return requests;
}

async function holdUpdate(tenant: Tenant, run: Run, family: "traces" | "spans", id: string): Promise<void> {
  const answer = await call(`/v2/projects/${run.projectId}/${family}/${id}`, {
    as: tenant,
    method: "PATCH",
    body: { log_stream_id: run.logStreamId, output: "held" },
  });
  expect(answer.body.pending, JSON.stringify(answer.body)).toBe(true);
}

/** The held updates and tombstones, keyed by project and record id. */
async function heldAndTombstoned(): Promise<{ held: string[]; tombstones: string[] }> {
  const held = await allRecordDbs.prepare("SELECT project_id || '/' || record_id AS k FROM record_patches ORDER BY k").all<{ k: string }>();
  const tombstones = await allRecordDbs.prepare("SELECT project_id || '/' || record_id AS k FROM record_tombstones ORDER BY k").all<{ k: string }>();
  return { held: held.results.map((r) => r.k).sort(), tombstones: tombstones.results.map((r) => r.k).sort() };
}

describe("deletion by metadata, property", () => {
  it("removes exactly the matching subtrees under any delivery schedule", async () => {
    await fc.assert(
      fc.asyncProperty(datasetArb, fc.constantFrom(...KEYS), fc.constantFrom(...TARGET_VALUES), scheduleArb, async (dataset, key, value, schedule) => {
        const target = tenants[0]!;
        await allRecordDbs.batch([allRecordDbs.prepare("DELETE FROM record_patches"), allRecordDbs.prepare("DELETE FROM record_tombstones")]);
        const sent = await ingest(dataset);
        // Indexed before the deletion, as the minutely catch-up leaves records: the deletion's
        // triggers must remove them from the index.
        await catchUpTextIndexesEverywhere();
        const before = await snapshot();
        const heldBefore = await heldAndTombstoned();
        const expected = expectedDeletion(before.records, target.organizationId, key, value);

        const dryRun = await deleteByMetadata(target, { metadata_key: key, metadata_value: value }, "?dry_run=true");
        expect(dryRun.status).toBe(200);
        expect(dryRun.body.would_delete).toEqual(expected.counts);
        expect(await snapshot()).toEqual(before);

        deletionTestSeam.chunkLimits = schedule.limits;
        deletionTestSeam.messageBudget = { maxMillis: 60_000, maxRecords: schedule.maxRecords, maxQueries: 1000 };
        const jobId = await insertDeletionJob(env, {
          organizationId: target.organizationId,
          createdBy: target.userId,
          request: { metadata_key: key, metadata_value: value, immediate: false },
          status: "queued",
        });

        const pending: Delivery[] = [{ id: uuid(), attempts: 1, body: { jobId } }];
        let step = 0;
        let redeliveries = 0;
        while (pending.length > 0) {
          step += 1;
          if (step > 1000) throw new Error("the deletion did not converge");
          const plan = schedule.steps[step % schedule.steps.length]!;
          const delivery = pending.shift()!;
          let chunks = 0;
          deletionTestSeam.afterChunk =
            plan.crashAfterChunk === null
              ? undefined
              : () => {
                  chunks += 1;
                  if (chunks === plan.crashAfterChunk) throw new Error("injected crash between chunks");
                };
          const { bindings, sent } = capturingBindings();
          const copy = { ...delivery, id: uuid() };
          const outcomes: [Delivery[], DeliveryResult][] = [];
          if (plan.mode === "single") {
            outcomes.push([[delivery], await deliver(DELETION_QUEUE, [delivery], bindings)]);
          } else if (plan.mode === "twice in one batch") {
            outcomes.push([[delivery, copy], await deliver(DELETION_QUEUE, [delivery, copy], bindings)]);
          } else if (plan.mode === "two consumers at once") {
            const [a, b] = await Promise.all([deliver(DELETION_QUEUE, [delivery], bindings), deliver(DELETION_QUEUE, [copy], bindings)]);
            outcomes.push([[delivery], a], [[copy], b]);
          } else {
            outcomes.push([[delivery], await deliver(DELETION_QUEUE, [delivery], bindings)]);
            if (redeliveries < 3 && outcomes[0]![1].explicitAcks.includes(delivery.id)) {
              redeliveries += 1;
              const again = { ...delivery, attempts: delivery.attempts + 1 };
              outcomes.push([[again], await deliver(DELETION_QUEUE, [again], bindings)]);
            }
          }
          deletionTestSeam.afterChunk = undefined;
          for (const [messages, result] of outcomes) {
            expect(result.retryBatch.retry).toBe(false);
            for (const m of messages) {
              const acked = result.explicitAcks.includes(m.id);
              const retried = result.retryMessages.some((r) => r.msgId === m.id);
              expect(acked !== retried, `message ${m.id} is either acked or retried`).toBe(true);
              if (retried) pending.push({ ...m, attempts: m.attempts + 1 });
            }
          }
          for (const body of sent) pending.push({ id: uuid(), attempts: 1, body });

          // No orphans: what is left of the deletion set is exactly what a deletion would still find.
          const now = await snapshot();
          const stillThere = new Set(now.records.map(recordKey));
          const leftOver = [...expected.ids].filter((id) => stillThere.has(id)).sort();
          expect([...expectedDeletion(now.records, target.organizationId, key, value).ids].sort()).toEqual(leftOver);
        }

        const job = await getJob(target, jobId);
        expect(job.status).toBe("completed");
        expect(job.progress).toEqual({
          sessions_deleted: expected.counts.sessions,
          traces_deleted: expected.counts.traces,
          spans_deleted: expected.counts.spans,
        });
        const after = await snapshot();
        expect(after).toEqual(without(before, expected.ids));
        // Exactly the erased records left tombstones; the held updates of erased ids went, the rest stayed.
        const { held, tombstones } = await heldAndTombstoned();
        expect(tombstones).toEqual([...expected.ids].sort());
        expect(held).toEqual(heldBefore.held.filter((k) => !expected.ids.has(k)));

        // Everything sent again (a client's retries, late): the erased records stay erased, the
        // rest is merged into itself and does not change.
        for (const request of sent) {
          if (request.session) await postSession(request.tenant, request.run, request.session);
          else await postTraces(request.tenant, request.run, request.traces!);
        }
        expect(await snapshot()).toEqual(after);

        // The text index follows every write and removal (migration 0016).
        expect(await textIndexDifferencesEverywhere()).toEqual([]);
        // A late duplicate of a finished job changes nothing.
        const late = await deliver(DELETION_QUEUE, [{ id: uuid(), attempts: 1, body: { jobId } }], capturingBindings().bindings);
        expect(late.retryMessages).toEqual([]);
        expect(await snapshot()).toEqual(after);
        expect((await getJob(target, jobId)).progress).toEqual(job.progress);
      }),
      { numRuns: 25 },
    );
  }, 300_000);
});
