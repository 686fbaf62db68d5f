/**
 * Fault injection (issue 9): the worker runs on a D1 binding that fails its k-th call, for every
 * k a request or a deletion makes, in each of the ways a deployment can see a failure (the call
 * lost on the way, the answer lost on the way back, a statement failing inside a batch).
 * - An ingest that fails leaves nothing half-written, and its retry ends exactly where a
 *   request that never failed ends.
 * - A deletion chunk that fails is retried by the queue, and the final state equals the model's
 *   with exact progress.
 */
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { deletionTestSeam } from "../src/deletion/deletion-budgets";
import { insertDeletionJob } from "../src/deletion/deletion-jobs";
import worker from "../src/index";
import { DELETION_QUEUE, capturingBindings, createRun, deliver, expectedDeletion, getJob, postTraces, snapshot, without, type Run } from "./deletion-fixtures";
import { type FaultMode, faultyD1 } from "./support/faulty-d1";
import { type Tenant, createTenant } from "./support/tenants";
import { allRecordDbs } from "./support/record-dbs";
import { METRIC_ROWS } from "./support/metric-rows";

const MODES: FaultMode[] = ["before", "after", "inside"];
const uuid = () => crypto.randomUUID();

let tenant: Tenant;

beforeAll(async () => {
  tenant = await createTenant("admin");
});

afterEach(() => {
  for (const key of Object.keys(deletionTestSeam)) delete deletionTestSeam[key as keyof typeof deletionTestSeam];
});

/** One request through the worker's real entry point, on the given D1 binding. */
async function fetchWith(db: D1Database, path: string, method: string, body: unknown): Promise<Response> {
  const ctx = createExecutionContext();
  const response = await worker.fetch(
    new Request(`http://trace-store.test${path}`, {
      method,
      headers: { "content-type": "application/json", "Service-API-Key": tenant.apiKey },
      body: JSON.stringify(body),
    }),
    { ...env, DB: db },
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return response;
}

/** The run's records and side rows, without what differs between two runs by construction. */
async function stateOf(run: Run): Promise<unknown> {
  const records = await allRecordDbs.prepare("SELECT * FROM records WHERE project_id = ? ORDER BY id").bind(run.projectId).all<Record<string, unknown>>();
  const strip = ({ rid: _r, family_key: _f, project_id: _p, run_id: _u, created_at: _c, ...rest }: Record<string, unknown>) => rest;
  const side = async (table: string, columns: string) =>
    (await allRecordDbs.prepare(`SELECT s.record_id, ${columns} FROM ${table} AS s JOIN records AS r ON r.rid = s.record_rid WHERE r.project_id = ? ORDER BY 1, 2`).bind(run.projectId).all())
      .results;
  const columns = await allRecordDbs.prepare("SELECT record_type, column_id FROM run_columns WHERE run_id = ? ORDER BY 1, 2").bind(run.logStreamId).all();
  return {
    records: records.results.map(strip),
    metadata: await side("record_metadata", "s.key, s.value"),
    tags: await side("record_tags", "s.tag"),
    metrics: await side(METRIC_ROWS, "s.name, s.value"),
    columns: columns.results,
  };
}

/** A request that exercises every write of an ingest: records, side rows, parents, columns, links. */
function ingestBody(run: Run, ids: { trace: string; spans: string[] }) {
  return {
    log_stream_id: run.logStreamId,
    traces: [
      {
        id: ids.trace,
        name: "t",
        input: "q",
        output: "a",
        created_at: "2026-11-20T10:00:00Z",
        user_metadata: { customer: "acme", tier: "gold" },
        tags: ["prod", "v2"],
        metrics: { toxicity: 0.25 },
        spans: [
          {
            id: ids.spans[0],
            type: "agent",
            created_at: "2026-11-20T10:00:01Z",
            spans: [{ id: ids.spans[1], type: "llm", model: "m", created_at: "2026-11-20T10:00:02Z", metrics: { num_input_tokens: 3 }, tags: ["x"] }],
          },
          { id: ids.spans[2], type: "tool", created_at: "2026-11-20T10:00:03Z", user_metadata: { k: "v" } },
        ],
      },
    ],
  };
}

describe("an ingest on a failing database", () => {
  for (const mode of MODES) {
    it(`(fault ${mode} the call) writes all or nothing, and its retry ends as a request that never failed`, async () => {
      const ids = { trace: uuid(), spans: [uuid(), uuid(), uuid()] };
      const reference = await createRun(tenant);
      await postTraces(tenant, reference, [ingestBody(reference, ids).traces[0]!]);
      const expected = await stateOf(reference);
      const empty = await stateOf(await createRun(tenant));

      for (let k = 1; ; k++) {
        const run = await createRun(tenant);
        const faulty = faultyD1(env.DB, k, mode);
        const response = await fetchWith(faulty.db, `/v2/projects/${run.projectId}/traces`, "POST", ingestBody(run, ids));
        if (!faulty.fired()) {
          expect(response.status).toBe(200);
          expect(k).toBeGreaterThan(1);
          break;
        }
        if (response.status === 200) {
          // The fault fell in work left for after the answer (the scoring lookup of
          // src/evaluations/scoring-request.ts, which then queues the records anyway): the write is whole.
          await response.text();
          expect(await stateOf(run), `call ${k}`).toEqual(expected);
          continue;
        }
        expect(response.status, `call ${k}`).toBeGreaterThanOrEqual(500);
        await response.text();
        // Never half-written: either nothing (the batch never ran, or rolled back) or all of it.
        const state = await stateOf(run);
        if (mode === "after" && JSON.stringify(state) !== JSON.stringify(empty)) expect(state).toEqual(expected);
        else expect(state, `call ${k}`).toEqual(empty);
        // The client retries: it ends where a request that never failed ends.
        const retry = await fetchWith(env.DB, `/v2/projects/${run.projectId}/traces`, "POST", ingestBody(run, ids));
        expect(retry.status).toBe(200);
        expect(await stateOf(run)).toEqual(expected);
      }
    });
  }
});

describe("a deletion on a failing database", () => {
  for (const mode of MODES) {
    it(`(fault ${mode} the call) is retried and ends exactly as the model says, with exact progress`, async () => {
      deletionTestSeam.chunkLimits = { roots: 1, sessionTraces: 1, spans: 2 };
      for (let k = 1; ; k++) {
        const value = `fault-${uuid()}`;
        const run = await createRun(tenant);
        await postTraces(tenant, run, [
          { name: "a", user_metadata: { user: value }, spans: [{ type: "agent", spans: [{ type: "llm" }] }, { type: "tool" }] },
          { name: "b", spans: [{ type: "workflow", user_metadata: { user: value }, spans: [{ type: "tool" }] }, { type: "llm" }] },
          { name: "c", user_metadata: { user: "other" } },
        ]);
        const before = await snapshot();
        const expected = expectedDeletion(before.records, tenant.organizationId, "user", value);
        const jobId = await insertDeletionJob(env, {
          organizationId: tenant.organizationId,
          createdBy: tenant.userId,
          request: { metadata_key: "user", metadata_value: value, immediate: false },
          status: "queued",
        });
        const faulty = faultyD1(env.DB, k, mode);
        let pending = [{ id: uuid(), attempts: 1, body: { jobId } }];
        let fault = true;
        for (let delivery = 0; pending.length > 0; delivery++) {
          expect(delivery).toBeLessThan(50);
          const { bindings, sent } = capturingBindings();
          const result = await deliver(DELETION_QUEUE, pending, fault ? { ...bindings, DB: faulty.db } : bindings);
          fault = false;
          const retried = result.retryMessages.map((r) => ({ id: uuid(), attempts: 2, body: { jobId } }));
          pending = [...retried, ...sent.map((body) => ({ id: uuid(), attempts: 1, body }))];
        }
        const job = await getJob(tenant, jobId);
        expect(job.status).toBe("completed");
        expect(job.progress).toEqual({ sessions_deleted: expected.counts.sessions, traces_deleted: expected.counts.traces, spans_deleted: expected.counts.spans });
        expect(await snapshot()).toEqual(without(before, expected.ids));
        if (!faulty.fired()) break;
      }
    });
  }
});
