/**
 * The deletion endpoints over HTTP (contract, section 6): who may call them, the FastAPI-shaped
 * 422s, nothing-matched and dry-run answers, immediate mode within and beyond its budget, and the
 * job answer (another organization's job is a 404).
 */
import { env } from "cloudflare:test";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { deletionTestSeam } from "../src/deletion/deletion-budgets";
import { IMMEDIATE_FALLBACK_DELAY_SECONDS, deleteWithinRequest } from "../src/deletion/start-deletion";
import type { DeletionMessage } from "../src/env";
import {
  DELETION_QUEUE,
  createRun,
  deleteByMetadata,
  expectedDeletion,
  getJob,
  postSession,
  postTraces,
  deliver,
  snapshot,
  waitForJob,
  without,
} from "./deletion-fixtures";
import { call } from "./support/client";
import { type Tenant, addUser, createTenant } from "./support/tenants";

const uuid = () => crypto.randomUUID();
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

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

const span = (extra: Record<string, unknown> = {}) => ({ id: uuid(), type: "llm", name: "llm", input: "q", output: "a", tags: ["t"], metrics: { toxicity: 0.1 }, ...extra });

/**
 * One tenant's data with `user = value` on: a session (2 traces, nested spans), a trace in a
 * session that does not match, a trace without session; plus near misses that must survive: a
 * different case, a span whose own metadata matches, the same key on a non-matching value.
 */
async function seed(tenant: Tenant, value: string) {
  const run = await createRun(tenant);
  const matchingSession = uuid();
  const otherSession = uuid();
  await postSession(tenant, run, { id: matchingSession, user_metadata: { user: value } });
  await postSession(tenant, run, { id: otherSession, user_metadata: { user: `${value}-not` } });
  await postTraces(tenant, run, [
    { id: uuid(), session_id: matchingSession, name: "in session", user_metadata: { other: "x" }, spans: [{ ...span(), type: "workflow", spans: [span(), span()] }] },
    { id: uuid(), session_id: matchingSession, name: "in session, no spans" },
    { id: uuid(), session_id: otherSession, name: "matching trace", user_metadata: { user: value }, tags: ["a", "b"], spans: [span()] },
    { id: uuid(), name: "sessionless match", user_metadata: { user: value, env: "prod" }, metrics: { toxicity: 0.5 }, spans: [span(), span()] },
    { id: uuid(), name: "case differs", user_metadata: { user: value.toUpperCase() }, spans: [span()] },
    { id: uuid(), name: "span matches only", spans: [span({ user_metadata: { user: value } })] },
  ]);
  return run;
}

describe("who may delete", () => {
  it("refuses a member with 403 before looking at the body", async () => {
    for (const body of [{ metadata_key: "user", metadata_value: "x" }, {}]) {
      const answer = await deleteByMetadata(member, body);
      expect(answer.status).toBe(403);
      expect(answer.body).toEqual({ detail: expect.any(String) });
    }
    const job = await call(`/v2/org-jobs/${uuid()}`, { as: member });
    expect(job.status).toBe(403);
  });

  it("refuses an anonymous caller with 401", async () => {
    const answer = await call("/v2/org-jobs/delete-by-metadata", { body: { metadata_key: "user", metadata_value: "x" } });
    expect(answer.status).toBe(401);
    expect(answer.headers.get("www-authenticate")).toBeTruthy();
  });
});

describe("validation", () => {
  it("reports missing fields in the FastAPI shape", async () => {
    const answer = await deleteByMetadata(admin, {});
    expect(answer.status).toBe(422);
    expect(answer.body).toEqual({
      detail: [
        { loc: ["body", "metadata_key"], msg: "Field required", type: "missing", input: {} },
        { loc: ["body", "metadata_value"], msg: "Field required", type: "missing", input: {} },
      ],
    });
  });

  it("bounds metadata_key to 1..256 characters", async () => {
    const empty = await deleteByMetadata(admin, { metadata_key: "", metadata_value: "v" });
    expect(empty.status).toBe(422);
    expect(empty.body.detail).toEqual([
      { loc: ["body", "metadata_key"], msg: "String should have at least 1 character", type: "string_too_short", input: "", ctx: { min_length: 1 } },
    ]);
    const long = "k".repeat(257);
    const tooLong = await deleteByMetadata(admin, { metadata_key: long, metadata_value: "v" });
    expect(tooLong.status).toBe(422);
    expect(tooLong.body.detail).toEqual([
      { loc: ["body", "metadata_key"], msg: "String should have at most 256 characters", type: "string_too_long", input: long, ctx: { max_length: 256 } },
    ]);
    const longest = await deleteByMetadata(admin, { metadata_key: "k".repeat(256), metadata_value: "v" }, "?dry_run=true");
    expect(longest.status).toBe(200);
  });

  it("wants strings, not numbers or null", async () => {
    const answer = await deleteByMetadata(admin, { metadata_key: null, metadata_value: 5 });
    expect(answer.status).toBe(422);
    expect(answer.body.detail).toEqual([
      { loc: ["body", "metadata_key"], msg: "Input should be a valid string", type: "string_type", input: null },
      { loc: ["body", "metadata_value"], msg: "Input should be a valid string", type: "string_type", input: 5 },
    ]);
  });

  it("refuses a body that is not JSON, or not an object", async () => {
    const broken = await call("/v2/org-jobs/delete-by-metadata", { as: admin, rawBody: "{not json", headers: { "content-type": "application/json" } });
    expect(broken.status).toBe(422);
    expect(broken.body.detail[0].type).toBe("json_invalid");
    const list = await deleteByMetadata(admin, ["user", "x"]);
    expect(list.status).toBe(422);
    expect(list.body.detail[0]).toMatchObject({ loc: ["body"], type: "model_attributes_type" });
  });

  it("parses immediate and dry_run as FastAPI booleans", async () => {
    const answer = await deleteByMetadata(admin, { metadata_key: "user", metadata_value: "v" }, "?immediate=maybe&dry_run=2");
    expect(answer.status).toBe(422);
    expect(answer.body.detail).toEqual([
      { loc: ["query", "immediate"], msg: "Input should be a valid boolean, unable to interpret input", type: "bool_parsing", input: "maybe" },
      { loc: ["query", "dry_run"], msg: "Input should be a valid boolean, unable to interpret input", type: "bool_parsing", input: "2" },
    ]);
    for (const ok of ["?immediate=false&dry_run=yes", "?immediate=0&dry_run=on", "?dry_run=True"]) {
      expect((await deleteByMetadata(admin, { metadata_key: "user", metadata_value: "v" }, ok)).status).toBe(200);
    }
  });

  it("wants a UUID job id", async () => {
    const answer = await call("/v2/org-jobs/not-a-uuid", { as: admin });
    expect(answer.status).toBe(422);
    expect(answer.body.detail[0]).toMatchObject({ loc: ["path", "job_id"], type: "uuid_parsing", input: "not-a-uuid" });
  });
});

async function jobCount(organizationId: string): Promise<number> {
  const row = await env.DB.prepare("SELECT count(*) AS n FROM org_jobs WHERE organization_id = ?").bind(organizationId).first<{ n: number }>();
  return row!.n;
}

describe("answers that create no job", () => {
  it("says so when nothing matches", async () => {
    const value = `nobody-${uuid()}`;
    const jobsBefore = await jobCount(admin.organizationId);
    for (const query of ["", "?immediate=true"]) {
      const answer = await deleteByMetadata(admin, { metadata_key: "user", metadata_value: value }, query);
      expect(answer.status).toBe(200);
      expect(answer.body.job_id).toBeNull();
      expect(answer.body.message).toMatch(/nothing to delete/);
    }
    expect(await jobCount(admin.organizationId)).toBe(jobsBefore);
  });

  it("counts a dry run exactly and deletes nothing", async () => {
    const value = `dry-${uuid()}`;
    await seed(admin, value);
    await seed(otherAdmin, value);
    const before = await snapshot();
    const expected = expectedDeletion(before.records, admin.organizationId, "user", value);
    expect(expected.counts).toEqual({ sessions: 1, traces: 4, spans: 7 });
    const jobsBefore = await jobCount(admin.organizationId);
    // Dry run wins over immediate: nothing is deleted either way.
    for (const query of ["?dry_run=true", "?dry_run=true&immediate=true"]) {
      const answer = await deleteByMetadata(admin, { metadata_key: "user", metadata_value: value }, query);
      expect(answer.status).toBe(200);
      expect(answer.body).toEqual({ job_id: null, message: expect.stringContaining("1 session, 4 traces and 7 spans"), would_delete: expected.counts, would_delete_is_exact: true });
    }
    expect(await snapshot()).toEqual(before);
    expect(await jobCount(admin.organizationId)).toBe(jobsBefore);
  });
});

describe("immediate mode", () => {
  it("finishes within the budget: no job id, the counts, exactly the matching subtrees gone", async () => {
    const value = `now-${uuid()}`;
    await seed(admin, value);
    await seed(otherAdmin, value);
    const before = await snapshot();
    const expected = expectedDeletion(before.records, admin.organizationId, "user", value);
    const answer = await deleteByMetadata(admin, { metadata_key: "user", metadata_value: value }, "?immediate=true");
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ job_id: null, message: expect.stringContaining("Deleted 1 session, 4 traces and 7 spans"), deleted: expected.counts });
    expect(await snapshot()).toEqual(without(before, expected.ids));
    // The job is kept as a completed audit record.
    const audit = await env.DB.prepare("SELECT status, request_data FROM org_jobs WHERE organization_id = ? AND request_data LIKE ?")
      .bind(admin.organizationId, `%${value}%`)
      .first<{ status: string; request_data: string }>();
    expect(audit?.status).toBe("completed");
    expect(JSON.parse(audit!.request_data)).toEqual({ metadata_key: "user", metadata_value: value, immediate: true });
  });

  it("beyond the budget, hands the rest to the queue and returns that job", async () => {
    const value = `big-${uuid()}`;
    const run = await createRun(admin);
    const traces = Array.from({ length: 12 }, (_, i) => ({
      id: uuid(),
      name: `t${i}`,
      user_metadata: { user: value },
      spans: [span(), span(), span()],
    }));
    await postTraces(admin, run, traces);
    const before = await snapshot();
    const expected = expectedDeletion(before.records, admin.organizationId, "user", value);
    expect(expected.ids.size).toBe(48);
    deletionTestSeam.chunkLimits = { roots: 2, sessionTraces: 2, spans: 4 };
    deletionTestSeam.immediateBudget = { maxMillis: 60_000, maxRecords: 10, maxQueries: 1000 };
    const answer = await deleteByMetadata(admin, { metadata_key: "user", metadata_value: value }, "?immediate=true");
    expect(answer.status).toBe(200);
    const jobId = answer.body.job_id as string;
    expect(jobId).toMatch(/^[0-9a-f-]{36}$/);
    expect(answer.body.message).toContain(`continues as job ${jobId}`);
    const deletedInRequest = answer.body.deleted.sessions + answer.body.deleted.traces + answer.body.deleted.spans;
    // The budget is checked between chunks: at least 10 records, at most one chunk (6) more.
    expect(deletedInRequest).toBeGreaterThanOrEqual(10);
    expect(deletedInRequest).toBeLessThan(16);
    // The real queue consumer finishes it (default budgets for the message).
    delete deletionTestSeam.immediateBudget;
    const { job } = await waitForJob(admin, jobId);
    expect(job.status).toBe("completed");
    expect(job.request_data).toEqual({ metadata_key: "user", metadata_value: value, immediate: true });
    expect(job.progress).toEqual({ sessions_deleted: 0, traces_deleted: 12, spans_deleted: 36 });
    expect(await snapshot()).toEqual(without(before, expected.ids));
  });
  it("resumes through a delayed fallback message if the request dies mid-way", async () => {
    const value = `dies-${uuid()}`;
    const run = await createRun(admin);
    const traces = Array.from({ length: 4 }, (_, i) => ({ id: uuid(), name: `t${i}`, user_metadata: { user: value }, spans: [span(), span()] }));
    await postTraces(admin, run, traces);
    const before = await snapshot();
    const expected = expectedDeletion(before.records, admin.organizationId, "user", value);

    const sent: { body: DeletionMessage; delaySeconds?: number }[] = [];
    const queue = {
      send: async (body: DeletionMessage, options?: QueueSendOptions) => {
        sent.push({ body, delaySeconds: options?.delaySeconds });
      },
    } as unknown as Queue<DeletionMessage>;
    // The request's isolate "dies" after its first chunk: the work never goes on, nothing
    // after that point in the request runs.
    deletionTestSeam.chunkLimits = { roots: 1, sessionTraces: 1, spans: 1 };
    let firstChunkDone!: () => void;
    const died = new Promise<void>((resolve) => (firstChunkDone = resolve));
    deletionTestSeam.afterChunk = () => {
      firstChunkDone();
      return new Promise<never>(() => {});
    };
    const submitter = { organizationId: admin.organizationId, userId: admin.userId };
    void deleteWithinRequest({ ...env, DELETION_QUEUE: queue }, submitter, { metadata_key: "user", metadata_value: value, immediate: true }, () => {});
    await died;

    expect(sent).toHaveLength(1);
    const fallback = sent[0]!;
    expect(fallback.delaySeconds).toBe(IMMEDIATE_FALLBACK_DELAY_SECONDS);
    const jobId = fallback.body.jobId;
    expect((await getJob(admin, jobId)).status).toBe("running");

    // A minute later the queue delivers the fallback, and the job ends as if nothing happened.
    delete deletionTestSeam.afterChunk;
    delete deletionTestSeam.chunkLimits;
    const result = await deliver(DELETION_QUEUE, [{ id: uuid(), attempts: 1, body: fallback.body }]);
    expect(result.explicitAcks).toHaveLength(1);
    const job = await getJob(admin, jobId);
    expect(job.status).toBe("completed");
    expect(job.progress).toEqual({ sessions_deleted: 0, traces_deleted: 4, spans_deleted: 8 });
    expect(await snapshot()).toEqual(without(before, expected.ids));
  });
});

describe("the job answer", () => {
  it("gives status, request data, progress, creator and ISO timestamps; another organization gets 404", async () => {
    const value = `q-${uuid()}`;
    await seed(admin, value);
    const answer = await deleteByMetadata(admin, { metadata_key: "user", metadata_value: value });
    expect(answer.status).toBe(200);
    const jobId = answer.body.job_id as string;
    expect(answer.body.message).toContain(jobId);
    const job = await getJob(admin, jobId);
    expect(job).toEqual({
      id: jobId,
      organization_id: admin.organizationId,
      job_name: "delete_by_metadata",
      status: expect.stringMatching(/^(queued|running|completed)$/),
      request_data: { metadata_key: "user", metadata_value: value, immediate: false },
      error_message: null,
      created_by: admin.userId,
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
      progress: { sessions_deleted: expect.any(Number), traces_deleted: expect.any(Number), spans_deleted: expect.any(Number) },
    });
    const { job: done } = await waitForJob(admin, jobId);
    expect(done.progress).toEqual({ sessions_deleted: 1, traces_deleted: 4, spans_deleted: 7 });
    expect(Date.parse(done.updated_at)).toBeGreaterThanOrEqual(Date.parse(done.created_at));

    const foreign = await call(`/v2/org-jobs/${jobId}`, { as: otherAdmin });
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual({ detail: "Job not found" });
    const unknown = await call(`/v2/org-jobs/${uuid()}`, { as: admin });
    expect(unknown.status).toBe(404);
  });
});
