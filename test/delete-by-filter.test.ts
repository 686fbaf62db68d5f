/**
 * `POST /v2/projects/{pid}/{traces|spans|sessions}/delete` (contract section 10): deletion by
 * a search filter through the deletion engine. Modelled on the delete-by-metadata tests: who may
 * call it, tenancy, the dry run's counts, the records erased (descendants included, nothing
 * else), tombstones, continuation past the request's budget, and redelivery.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { deletionTestSeam } from "../src/deletion/deletion-budgets";
import { DELETION_QUEUE, type Run, createRun, deliver, getJob, postSession, postTraces, snapshot, waitForJob, without } from "./deletion-fixtures";
import { call } from "./support/client";
import { recordDatabases } from "./support/record-dbs";
import { type Tenant, addUser, createTenant } from "./support/tenants";
import { catchUpTextIndexesEverywhere, textIndexDifferencesEverywhere } from "./support/text-index";

const uuid = () => crypto.randomUUID();

let admin: Tenant;
let member: Tenant;
let otherAdmin: Tenant;

beforeAll(async () => {
  admin = await createTenant("admin");
  member = await addUser(admin, "member");
  otherAdmin = await createTenant("admin");
});

afterEach(() => {
  for (const key of Object.keys(deletionTestSeam)) delete deletionTestSeam[key as keyof typeof deletionTestSeam];
});

const nameIs = (value: string) => ({ type: "text", column_id: "name", operator: "eq", value });

function deleteByFilter(tenant: Tenant, run: Run, segment: string, filters: unknown[], query = "") {
  return call(`/v2/projects/${run.projectId}/${segment}/delete${query}`, { as: tenant, body: { log_stream_id: run.logStreamId, filters } });
}

const key = (run: Run, id: string) => `${run.projectId}/${id}`;

/**
 * A run with two "doomed" traces (one in a session, nested spans) and two that must survive: one
 * named otherwise, one in the same session. Answers the ids that a deletion of the doomed traces
 * removes.
 */
async function seedTraces(tenant: Tenant) {
  const run = await createRun(tenant);
  const session = uuid();
  await postSession(tenant, run, { id: session });
  const [t1, t2, keep1, keep2, s1, s1a, s1b, s2, k1] = [uuid(), uuid(), uuid(), uuid(), uuid(), uuid(), uuid(), uuid(), uuid()] as const;
  await postTraces(tenant, run, [
    { id: t1, name: "doomed", session_id: session, spans: [{ id: s1, type: "workflow", name: "w", spans: [{ id: s1a, type: "llm", name: "l", input: "q", output: "a" }, { id: s1b, type: "tool", name: "t" }] }] },
    { id: t2, name: "doomed", spans: [{ id: s2, type: "llm", name: "l", input: "q", output: "a" }] },
    { id: keep1, name: "kept", spans: [{ id: k1, type: "llm", name: "doomed", input: "q", output: "a" }] },
    { id: keep2, name: "kept too", session_id: session },
  ]);
  // Indexed, as the minutely catch-up leaves records: the deletion must remove them from the index.
  await catchUpTextIndexesEverywhere();
  const doomed = new Set([t1, t2, s1, s1a, s1b, s2].map((id) => key(run, id)));
  return { run, session, doomed, ids: { t1, t2, keep1, keep2, s1, s1a, s1b, s2, k1 } };
}

describe("who may delete by filter", () => {
  it("refuses a member with 403 and deletes nothing", async () => {
    const { run } = await seedTraces(admin);
    const before = await snapshot();
    const answer = await deleteByFilter(member, run, "traces", [nameIs("doomed")]);
    expect(answer.status).toBe(403);
    const dry = await deleteByFilter(member, run, "traces", [nameIs("doomed")], "?dry_run=true");
    expect(dry.status).toBe(403);
    expect(await snapshot()).toEqual(before);
  });

  it("answers 404 for another organization's project and never touches its records", async () => {
    const { run } = await seedTraces(admin);
    const before = await snapshot();
    for (const query of ["", "?dry_run=true"]) {
      const answer = await deleteByFilter(otherAdmin, run, "traces", [nameIs("doomed")], query);
      expect(answer.status).toBe(404);
    }
    expect(await snapshot()).toEqual(before);
  });

  it("answers 422 pointing at a filter on an unknown column", async () => {
    const { run } = await seedTraces(admin);
    const answer = await deleteByFilter(admin, run, "traces", [{ type: "text", column_id: "no_such_column", operator: "eq", value: "x" }]);
    expect(answer.status).toBe(422);
    expect(answer.body.detail[0].loc.slice(0, 3)).toEqual(["body", "filters", 0]);
  });
});

describe("dry run", () => {
  it("takes annotation leaves as a search does (a 500 before): with nothing rated, not(fully_annotated) is every trace", async () => {
    const { run } = await seedTraces(admin);
    const answer = await deleteByFilter(admin, run, "traces", [{ not: { type: "fully_annotated" } }], "?dry_run=true");
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body.would_delete.traces).toBeGreaterThan(0);
  });

  it("counts the matching traces and every span below them, and deletes nothing", async () => {
    const { run } = await seedTraces(admin);
    const before = await snapshot();
    const answer = await deleteByFilter(admin, run, "traces", [nameIs("doomed")], "?dry_run=true");
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body).toMatchObject({ job_id: null, would_delete: { sessions: 0, traces: 2, spans: 4 }, would_delete_is_exact: true });
    expect(answer.body.message).toContain("Nothing was deleted");
    expect(await snapshot()).toEqual(before);
  });

  it("counts a session's traces and spans, and a span's subtree once", async () => {
    const { run, session } = await seedTraces(admin);
    const sessions = await call(`/v2/projects/${run.projectId}/sessions/delete?dry_run=true`, {
      as: admin,
      body: { log_stream_id: run.logStreamId, filters: [{ type: "id", column_id: "id", operator: "eq", value: session }] },
    });
    expect(sessions.body.would_delete).toEqual({ sessions: 1, traces: 2, spans: 3 });
    // The workflow span and the llm span below it both match "type one_of": the llm counts once.
    const spans = await deleteByFilter(admin, run, "spans", [{ type: "text", column_id: "type", operator: "one_of", value: ["workflow", "llm"] }], "?dry_run=true");
    expect(spans.body.would_delete).toEqual({ sessions: 0, traces: 0, spans: 5 });
  });
});

describe("deleting", () => {
  it("erases the matching traces with all their spans, tombstones them, and nothing else", async () => {
    const { run, doomed, ids } = await seedTraces(admin);
    const before = await snapshot();
    const answer = await deleteByFilter(admin, run, "traces", [nameIs("doomed")]);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body).toMatchObject({ job_id: null, deleted: { sessions: 0, traces: 2, spans: 4 } });
    expect(await snapshot()).toEqual(without(before, doomed));
    // The kept trace in the session lost no span; the erased ids are tombstoned.
    const tombstones = (await Promise.all(recordDatabases().map((db) => db.prepare("SELECT project_id, record_id FROM record_tombstones WHERE project_id = ?1").bind(run.projectId).all<{ project_id: string; record_id: string }>())))
      .flatMap((r) => r.results)
      .map((r) => `${r.project_id}/${r.record_id}`);
    expect(new Set(tombstones)).toEqual(doomed);
    // A span arriving later for an erased trace is not stored.
    await postTraces(admin, run, [{ id: ids.t2, name: "doomed", spans: [{ id: uuid(), type: "llm", name: "late", input: "q", output: "a" }] }]);
    const search = await call(`/v2/projects/${run.projectId}/traces/partial_search`, { as: admin, body: { log_stream_id: run.logStreamId, filters: [nameIs("doomed")] } });
    expect(search.body.records).toEqual([]);
  });

  it("deletes matching spans with the spans below them, leaving their trace", async () => {
    const { run, ids } = await seedTraces(admin);
    const before = await snapshot();
    const answer = await deleteByFilter(admin, run, "spans", [{ type: "text", column_id: "type", operator: "eq", value: "workflow" }]);
    expect(answer.body.deleted).toEqual({ sessions: 0, traces: 0, spans: 3 });
    const after = await snapshot();
    const gone = new Set([ids.s1, ids.s1a, ids.s1b].map((id) => key(run, id)));
    expect(after.records).toEqual(without(before, gone).records.map((r) => (r.id === ids.t1 ? { ...r, has_children: 0 } : r)));
  });

  it("says so when nothing matches, without a job", async () => {
    const { run } = await seedTraces(admin);
    const answer = await deleteByFilter(admin, run, "traces", [nameIs("nothing like it")]);
    expect(answer.body).toEqual({ job_id: null, message: expect.stringContaining("nothing to delete") });
  });

  it("beyond the request's budget, continues as a delete_by_filter job that the queue finishes", async () => {
    const run = await createRun(admin);
    await postTraces(
      admin,
      run,
      Array.from({ length: 12 }, (_, i) => ({ id: uuid(), name: "bulk", spans: [{ id: uuid(), type: "llm", name: `s${i}`, input: "q", output: "a" }, { id: uuid(), type: "tool", name: "t" }] })),
    );
    await postTraces(admin, run, [{ id: uuid(), name: "kept" }]);
    const before = await snapshot();
    const doomed = new Set(before.records.filter((r) => r.project_id === run.projectId && r.name !== "kept").map((r) => `${r.project_id}/${r.id}`));
    expect(doomed.size).toBe(36);
    deletionTestSeam.chunkLimits = { roots: 2, sessionTraces: 2, spans: 4 };
    deletionTestSeam.immediateBudget = { maxMillis: 60_000, maxRecords: 10, maxQueries: 1000 };
    const answer = await deleteByFilter(admin, run, "traces", [nameIs("bulk")]);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    const jobId = answer.body.job_id as string;
    expect(jobId).toMatch(/^[0-9a-f-]{36}$/);
    expect(answer.body.message).toContain(`continues as job ${jobId}`);
    delete deletionTestSeam.immediateBudget;
    const { job } = await waitForJob(admin, jobId);
    expect(job).toMatchObject({
      job_name: "delete_by_filter",
      status: "completed",
      request_data: { project_id: run.projectId, run_id: run.logStreamId, root_type: "trace", filters: [nameIs("bulk")], immediate: true },
      progress: { sessions_deleted: 0, traces_deleted: 12, spans_deleted: 24 },
    });
    expect(await snapshot()).toEqual(without(before, doomed));

    // Redelivery of a message of the finished job changes nothing, and counts nothing twice.
    const again = await deliver(DELETION_QUEUE, [{ id: "again", attempts: 1, body: { jobId } }]);
    expect(again.explicitAcks).toContain("again");
    expect((await getJob(admin, jobId)).progress).toEqual(job.progress);
    expect(await snapshot()).toEqual(without(before, doomed));
  });

  it("keeps the text index exact: deleted by a substring filter, in chunks, the erased text is no longer found", { timeout: 60_000 }, async () => {
    const run = await createRun(admin);
    const ticket = (i: number, text: string) => ({ id: uuid(), name: `ticket ${i}`, input: text, spans: [{ id: uuid(), type: "llm", name: "answer", input: text, output: `re: ${text}` }] });
    const doomed = Array.from({ length: 5 }, (_, i) => ticket(i, `Refund for order KX-${i}`));
    const kept = [ticket(10, "an order shipped"), ticket(11, "refunds are not here")];
    await postTraces(admin, run, [...doomed, ...kept]);
    deletionTestSeam.chunkLimits = { roots: 2, sessionTraces: 2, spans: 2 };
    const refund = { type: "text", column_id: "input", operator: "contains", value: "REFUND FOR", case_sensitive: false };
    const answer = await deleteByFilter(admin, run, "traces", [refund]);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body).toMatchObject({ job_id: null, deleted: { traces: 5, spans: 5 } });
    expect(await textIndexDifferencesEverywhere()).toEqual([]);
    // Search by the index (an indexed needle) finds only what is left.
    const found = async (filter: unknown, segment = "traces") =>
      (await call(`/v2/projects/${run.projectId}/${segment}/partial_search`, { as: admin, body: { log_stream_id: run.logStreamId, filters: [filter] } })).body.records.map((r: { id: string }) => r.id).sort();
    expect(await found(refund)).toEqual([]);
    expect(await found({ ...refund, value: "order" })).toEqual([kept[0]!.id]);
    expect(await found({ type: "text", column_id: "output", operator: "contains", value: "re: refund", case_sensitive: false }, "spans")).toEqual([kept[1]!.spans[0]!.id]);
  });

  it("matches live records at each chunk: a record that stops matching mid-job stays", async () => {
    const run = await createRun(admin);
    const ids = Array.from({ length: 4 }, uuid);
    await postTraces(admin, run, ids.map((id) => ({ id, name: "bulk", tags: ["old"] })));
    // One trace per chunk, in the native order (id descending here); after the first chunk, the
    // trace the job would take last is re-tagged.
    const survivor = [...ids].sort()[0]!;
    deletionTestSeam.chunkLimits = { roots: 1, sessionTraces: 1, spans: 1 };
    let patched = 0;
    deletionTestSeam.afterChunk = async () => {
      if (patched++ > 0) return;
      const patch = await call(`/v2/projects/${run.projectId}/traces/${survivor}`, { method: "PATCH", as: admin, body: { log_stream_id: run.logStreamId, tags: ["new"] } });
      expect(patch.status, JSON.stringify(patch.body)).toBe(200);
    };
    const answer = await call(`/v2/projects/${run.projectId}/traces/delete`, {
      as: admin,
      body: { log_stream_id: run.logStreamId, filters: [{ type: "collection", column_id: "tags", operator: "contains", value: "old" }] },
    });
    expect(answer.body).toMatchObject({ job_id: null, deleted: { traces: 3 } });
    const left = await call(`/v2/projects/${run.projectId}/traces/partial_search`, { as: admin, body: { log_stream_id: run.logStreamId } });
    expect(left.body.records.map((r: { id: string }) => r.id)).toEqual([survivor]);
  });
});

