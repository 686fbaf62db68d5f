/**
 * Deletion end to end through the real producer and consumer, as `wrangler dev` runs them: the
 * request enqueues, the worker's `queue` handler consumes (continuations go back through the real
 * queue), and a job that keeps failing reaches the dead-letter consumer. The test config runs the
 * deletion consumer with max_retries 1 (wrangler.toml: 8) so the dead-letter path takes seconds.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { deletionTestSeam } from "../src/deletion/deletion-budgets";
import {
  addLogStream,
  createRun,
  deleteByMetadata,
  expectedDeletion,
  postSession,
  postTraces,
  snapshot,
  waitForJob,
  without,
} from "./deletion-fixtures";
import { type Tenant, createTenant } from "./support/tenants";

const uuid = () => crypto.randomUUID();

let admin: Tenant;
let neighbour: Tenant;

beforeAll(async () => {
  admin = await createTenant("admin");
  neighbour = await createTenant("admin");
});

afterEach(() => {
  for (const key of Object.keys(deletionTestSeam)) delete deletionTestSeam[key as keyof typeof deletionTestSeam];
});

const span = () => ({ id: uuid(), type: "llm", name: "llm", input: [{ role: "user", content: "q" }], output: { role: "assistant", content: "a" }, tags: ["t"], metrics: { toxicity: 0.3 } });

/** Two projects (one with two log streams) holding sessions and traces with `customer = value`. */
async function seed(tenant: Tenant, value: string) {
  const first = await createRun(tenant);
  const second = await addLogStream(tenant, first, "second");
  const third = await createRun(tenant);
  for (const run of [first, second, third]) {
    const session = uuid();
    await postSession(tenant, run, { id: session, user_metadata: { customer: value } });
    await postTraces(tenant, run, [
      { id: uuid(), session_id: session, spans: [span(), { ...span(), type: "agent", spans: [span()] }] },
      { id: uuid(), user_metadata: { customer: value }, spans: [span()] },
      { id: uuid(), user_metadata: { customer: `not ${value}` }, spans: [span()] },
    ]);
  }
}

describe("through the real queue", () => {
  it("runs a queued job to completion, continuation messages included", async () => {
    const value = `e2e-${uuid()}`;
    await seed(admin, value);
    await seed(neighbour, value);
    const before = await snapshot();
    const expected = expectedDeletion(before.records, admin.organizationId, "customer", value);
    expect(expected.counts).toEqual({ sessions: 3, traces: 6, spans: 12 });
    // Small chunks and message budgets: the job needs several messages, each one enqueued by the last.
    deletionTestSeam.chunkLimits = { roots: 2, sessionTraces: 2, spans: 4 };
    deletionTestSeam.messageBudget = { maxMillis: 60_000, maxRecords: 8, maxQueries: 1000 };

    const answer = await deleteByMetadata(admin, { metadata_key: "customer", metadata_value: value });
    expect(answer.status).toBe(200);
    const { job, seen } = await waitForJob(admin, answer.body.job_id);
    expect(job.status).toBe("completed");
    // Statuses only move forward: queued, then running, then completed (polling may miss some).
    const order = seen.map((status) => ["queued", "running", "completed"].indexOf(status));
    expect(order.every((rank, i) => rank >= 0 && (i === 0 || rank > order[i - 1]!))).toBe(true);
    expect(job.progress).toEqual({ sessions_deleted: 3, traces_deleted: 6, spans_deleted: 12 });
    expect(job.error_message).toBeNull();
    expect(await snapshot()).toEqual(without(before, expected.ids));
  }, 60_000);

  it("marks a job failed through the dead-letter queue when every attempt fails", async () => {
    const value = `doomed-${uuid()}`;
    await seed(admin, value);
    deletionTestSeam.chunkLimits = { roots: 1, sessionTraces: 1, spans: 1 };
    deletionTestSeam.afterChunk = () => {
      throw new Error("injected: the database keeps failing");
    };
    const answer = await deleteByMetadata(admin, { metadata_key: "customer", metadata_value: value });
    expect(answer.status).toBe(200);
    const { job } = await waitForJob(admin, answer.body.job_id, 45_000);
    expect(job.status).toBe("failed");
    expect(job.error_message).toMatch(/repeated failures/);
    // Each attempt committed one chunk before failing: what was deleted is counted, the rest is intact.
    const deleted = job.progress.sessions_deleted + job.progress.traces_deleted + job.progress.spans_deleted;
    expect(deleted).toBeGreaterThanOrEqual(1);
    expect(deleted).toBeLessThan(21);
  }, 60_000);
});
