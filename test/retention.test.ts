/**
 * Retention (issue 11, docs/retention.md): `retention_days` on projects (set, changed, cleared,
 * admins only, validated), searches, counts and lookups that hide expired records before any job
 * ran, the hourly expiry through the real queue consumer (a property test against an
 * independent model, with redelivered messages and crashes between chunks), the jobs list, and
 * the usage answer.
 */
import { env } from "cloudflare:test";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { deletionTestSeam } from "../src/deletion/deletion-budgets";
import type { DeletionMessage } from "../src/env";
import { scheduleExpiry } from "../src/retention/schedule-expiry";
import { clearProjectRoutes } from "../src/shards/project-routing";
import { DELETION_QUEUE, type Row, capturingBindings, deliver, postSession, postTraces, waitForJob } from "./deletion-fixtures";
import { call } from "./support/client";
import { recordsOf } from "./support/record-dbs";
import { type Tenant, addUser, createTenant } from "./support/tenants";
import { textIndexDifferencesEverywhere } from "./support/text-index";

const DAY_MS = 86_400_000;
const iso = (ms: number) => new Date(ms).toISOString();

async function project(tenant: Tenant, body: Record<string, unknown> = {}) {
  const created = await call("/v2/projects", { as: tenant, body: { name: `retention-${crypto.randomUUID()}`, ...body } });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const stream = await call(`/v2/projects/${created.body.id}/log_streams`, { as: tenant, body: { name: "default" } });
  expect(stream.status).toBe(200);
  return { projectId: created.body.id as string, logStreamId: stream.body.id as string, body: created.body };
}

const patchRetention = (tenant: Tenant, projectId: string, retention_days: unknown) =>
  call(`/v2/projects/${projectId}`, { as: tenant, method: "PATCH", body: { retention_days } });

/** Every message the consumer is handed is delivered until none is left; continuations included. */
async function drain(first: DeletionMessage[], schedule: { duplicate: boolean[]; crash: boolean[] } = { duplicate: [], crash: [] }) {
  const { bindings, sent } = capturingBindings();
  const pending = [...first];
  let step = 0;
  let crashes = 0;
  let duplicates = 0;
  for (let guard = 0; pending.length > 0; guard++) {
    if (guard > 500) throw new Error("the expiry did not converge");
    const body = pending.shift()!;
    const crash = schedule.crash[step % Math.max(1, schedule.crash.length)] === true && crashes < 20;
    const duplicate = schedule.duplicate[step % Math.max(1, schedule.duplicate.length)] === true && duplicates++ < 10;
    step += 1;
    if (crash) {
      crashes += 1;
      deletionTestSeam.afterChunk = () => {
        deletionTestSeam.afterChunk = undefined;
        throw new Error("crash between chunks (test)");
      };
    }
    const result = await deliver(DELETION_QUEUE, [{ id: `m-${step}`, attempts: 1, body }], bindings);
    deletionTestSeam.afterChunk = undefined;
    // A retried message comes back; an acked one may be redelivered all the same.
    if (result.retryMessages.length > 0 || duplicate) pending.push(body);
    pending.push(...sent.splice(0));
  }
}

async function runExpiry(atMs: number) {
  const { bindings, sent } = capturingBindings();
  const outcome = await scheduleExpiry(bindings, atMs * 1000);
  return { outcome, sent };
}

afterEach(() => {
  deletionTestSeam.chunkLimits = undefined;
  deletionTestSeam.afterChunk = undefined;
});

describe("retention_days on projects", () => {
  it("is set on create, changed and cleared with PATCH, and returned everywhere", async () => {
    const admin = await createTenant("admin");
    const { projectId, body } = await project(admin, { retention_days: 30 });
    expect(body.retention_days).toBe(30);
    expect((await call(`/v2/projects/${projectId}`, { as: admin })).body.retention_days).toBe(30);
    const changed = await patchRetention(admin, projectId, 7);
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    expect(changed.body).toMatchObject({ id: projectId, retention_days: 7 });
    const listed = await call("/v2/projects", { as: admin });
    expect(listed.body.find((p: { id: string }) => p.id === projectId).retention_days).toBe(7);
    const cleared = await patchRetention(admin, projectId, null);
    expect(cleared.body.retention_days).toBeNull();
    expect((await call(`/v2/projects/${projectId}`, { as: admin })).body.retention_days).toBeNull();
    // Default: for ever.
    expect((await project(admin)).body.retention_days).toBeNull();
  });

  it("is an admin's decision: a member gets 403 on PATCH and on a create that names it, and can still create without it", async () => {
    const admin = await createTenant("admin");
    const member = await addUser(admin, "member");
    const { projectId } = await project(admin, { retention_days: 30 });
    const refused = await patchRetention(member, projectId, 1);
    expect(refused.status).toBe(403);
    expect((await call(`/v2/projects/${projectId}`, { as: admin })).body.retention_days).toBe(30);
    expect((await call("/v2/projects", { as: member, body: { name: `m-${crypto.randomUUID()}`, retention_days: 5 } })).status).toBe(403);
    expect((await call("/v2/projects", { as: member, body: { name: `m-${crypto.randomUUID()}` } })).status).toBe(200);
  });

  it("refuses what is not 1 to 3650 days or null with a 422 that names the field, and another organization's project is a 404", async () => {
    const admin = await createTenant("admin");
    const { projectId } = await project(admin);
    for (const bad of [0, -1, 3651, 1.5, "30", true, {}]) {
      const answer = await patchRetention(admin, projectId, bad);
      expect(answer.status, `retention_days ${JSON.stringify(bad)}`).toBe(422);
      expect(JSON.stringify(answer.body.detail)).toContain("retention_days");
      const created = await call("/v2/projects", { as: admin, body: { name: `bad-${crypto.randomUUID()}`, retention_days: bad } });
      expect(created.status).toBe(422);
    }
    expect((await call(`/v2/projects/${projectId}`, { method: "PATCH", as: admin, body: {} })).status).toBe(422);
    for (const good of [1, 3650]) expect((await patchRetention(admin, projectId, good)).body.retention_days).toBe(good);
    const stranger = await createTenant("admin");
    expect((await patchRetention(stranger, projectId, 5)).status).toBe(404);
    expect((await call(`/v2/projects/${projectId}`, { as: admin })).body.retention_days).toBe(3650);
  });

  it("new projects take the organization's default retention when their creator names none", async () => {
    const admin = await createTenant("admin");
    await env.DB.prepare("UPDATE organizations SET default_retention_days = 14 WHERE id = ?").bind(admin.organizationId).run();
    expect((await project(admin)).body.retention_days).toBe(14);
    expect((await project(admin, { retention_days: null })).body.retention_days).toBeNull();
    expect((await project(admin, { retention_days: 60 })).body.retention_days).toBe(60);
  });
});

describe("expired records are hidden before any job ran", () => {
  it("searches, counts and lookups of traces, spans and sessions show only what is within the retention", async () => {
    const admin = await createTenant("admin");
    const run = await project(admin, { retention_days: 10 });
    const now = Date.now();
    const old = { id: crypto.randomUUID(), span: crypto.randomUUID(), session: crypto.randomUUID() };
    const young = { id: crypto.randomUUID(), span: crypto.randomUUID(), session: crypto.randomUUID() };
    await postSession(admin, run, { id: old.session, created_at: iso(now - 20 * DAY_MS) });
    await postSession(admin, run, { id: young.session, created_at: iso(now - 2 * DAY_MS) });
    await postTraces(admin, run, [
      { id: old.id, name: "old", created_at: iso(now - 20 * DAY_MS), session_id: old.session, spans: [{ id: old.span, type: "llm", created_at: iso(now - 20 * DAY_MS) }] },
      { id: young.id, name: "young", created_at: iso(now - 2 * DAY_MS), session_id: young.session, spans: [{ id: young.span, type: "llm", created_at: iso(now - 2 * DAY_MS) }] },
    ]);
    const base = `/v2/projects/${run.projectId}`;
    const ids = async (family: string, filters: unknown[] = []) => {
      const page = await call(`${base}/${family}/partial_search`, { as: admin, body: { log_stream_id: run.logStreamId, filters, select_columns: { column_ids: ["id"] }, limit: 100 } });
      expect(page.status, JSON.stringify(page.body)).toBe(200);
      return page.body.records.map((r: { id: string }) => r.id).sort();
    };
    expect(await ids("traces")).toEqual([young.id]);
    expect(await ids("spans")).toEqual([young.span]);
    expect(await ids("sessions")).toEqual([young.session]);
    // Asking for the old ones by date does not bring them back.
    expect(await ids("traces", [{ column_id: "created_at", operator: "lte", value: iso(now - 15 * DAY_MS), type: "date" }])).toEqual([]);
    const count = await call(`${base}/traces/count`, { as: admin, body: { log_stream_id: run.logStreamId } });
    expect(count.body.total_count).toBe(1);
    expect((await call(`${base}/traces/${old.id}`, { as: admin })).status).toBe(404);
    expect((await call(`${base}/traces/${young.id}`, { as: admin })).status).toBe(200);
    // Cleared: what was not erased yet shows again.
    await patchRetention(admin, run.projectId, null);
    expect(await ids("traces")).toEqual([old.id, young.id].sort());
  });

  it("a shorter retention applies at once in the isolate that changed it; other isolates within the route cache's five minutes", async () => {
    const admin = await createTenant("admin");
    const run = await project(admin);
    const now = Date.now();
    const id = crypto.randomUUID();
    await postTraces(admin, run, [{ id, name: "t", created_at: iso(now - 5 * DAY_MS), spans: [] }]);
    const search = () => call(`/v2/projects/${run.projectId}/traces/partial_search`, { as: admin, body: { log_stream_id: run.logStreamId, limit: 10 } });
    expect((await search()).body.records).toHaveLength(1);
    await patchRetention(admin, run.projectId, 3);
    expect((await search()).body.records).toHaveLength(0);
    clearProjectRoutes();
    expect((await search()).body.records).toHaveLength(0);
  });
});

/** Every record row of a project, keyed by id, for the model. */
async function recordsOfProject(projectId: string): Promise<Row[]> {
  const db = await recordsOf(projectId);
  return (await db.prepare("SELECT * FROM records WHERE project_id = ? ORDER BY id").bind(projectId).all<Row>()).results;
}

async function patchesOfProject(projectId: string): Promise<Row[]> {
  const db = await recordsOf(projectId);
  return (await db.prepare("SELECT * FROM record_patches WHERE project_id = ? ORDER BY record_id").bind(projectId).all<Row>()).results;
}

/**
 * The independent model of one expiry at cut-off `cutoff` (µs), from the stored rows: traces
 * older than the cut-off go with all their spans; spans older than the cut-off whose trace is
 * not left go; sessions older than the cut-off with no trace or span left go; held updates
 * received before the cut-off go.
 */
function expectedAfterExpiry(records: Row[], patches: Row[], cutoff: number): { records: Row[]; patches: Row[] } {
  const key = (run: unknown, id: unknown) => `${run}/${id}`;
  const goingTraces = new Set(records.filter((r) => r.record_type === "trace" && Number(r.created_at) < cutoff).map((r) => key(r.run_id, r.id)));
  const keptTraces = new Set(records.filter((r) => r.record_type === "trace" && !goingTraces.has(key(r.run_id, r.id))).map((r) => key(r.run_id, r.id)));
  const spanGoes = (s: Row) =>
    goingTraces.has(key(s.run_id, s.trace_id)) || (Number(s.created_at) < cutoff && !keptTraces.has(key(s.run_id, s.trace_id)));
  const kept = records.filter((r) => (r.record_type === "trace" ? !goingTraces.has(key(r.run_id, r.id)) : r.record_type === "span" ? !spanGoes(r) : true));
  const occupied = new Set(kept.filter((r) => r.record_type !== "session" && r.session_id !== null).map((r) => key(r.run_id, r.session_id)));
  return {
    records: kept.filter((r) => r.record_type !== "session" || Number(r.created_at) >= cutoff || occupied.has(key(r.run_id, r.id))),
    patches: patches.filter((p) => Number(p.created_at) >= cutoff),
  };
}

const ageArb = fc.integer({ min: 0, max: 40 });

const datasetArb = fc.record({
  sessions: fc.array(ageArb, { maxLength: 4 }),
  traces: fc.array(
    fc.record({ age: ageArb, session: fc.option(fc.nat(3), { nil: null }), spanAges: fc.array(ageArb, { maxLength: 3 }) }),
    { minLength: 1, maxLength: 8 },
  ),
  patches: fc.nat(2),
});

describe("the hourly expiry", () => {
  it("removes exactly the expired traces, spans, held updates and empty expired sessions, and nothing of other projects or organizations (property)", async () => {
    await fc.assert(
      fc.asyncProperty(
        datasetArb,
        datasetArb,
        fc.integer({ min: 1, max: 30 }),
        fc.integer({ min: 0, max: 10 }),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 6 }),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 6 }),
        fc.constantFrom(1, 2, 50),
        async (mine, others, retention, laterDays, duplicate, crash, chunk) => {
          const admin = await createTenant("admin");
          const stranger = await createTenant("admin");
          const now = Date.now();
          const fill = async (tenant: Tenant, run: { projectId: string; logStreamId: string }, data: typeof mine) => {
            const sessionIds = data.sessions.map(() => crypto.randomUUID());
            for (const [i, age] of data.sessions.entries()) await postSession(tenant, run, { id: sessionIds[i], created_at: iso(now - age * DAY_MS) });
            await postTraces(
              tenant,
              run,
              data.traces.map((t) => ({
                id: crypto.randomUUID(),
                name: "t",
                created_at: iso(now - t.age * DAY_MS),
                ...(t.session !== null && sessionIds.length > 0 ? { session_id: sessionIds[t.session % sessionIds.length] } : {}),
                spans: t.spanAges.map((age) => ({ id: crypto.randomUUID(), type: "llm", created_at: iso(now - age * DAY_MS) })),
              })),
            );
            // Held updates: streamed updates of traces that never arrive.
            for (let i = 0; i < data.patches; i++) {
              const held = await call(`/v2/projects/${run.projectId}/traces/${crypto.randomUUID()}`, {
                as: tenant,
                method: "PATCH",
                body: { log_stream_id: run.logStreamId, output: "late", is_complete: true },
              });
              expect(held.status, JSON.stringify(held.body)).toBeLessThan(300);
            }
          };
          const expiring = await project(admin, { retention_days: retention });
          const keepsAll = await project(admin);
          const strangers = await project(stranger, { retention_days: retention });
          await fill(admin, expiring, mine);
          await fill(admin, keepsAll, others);
          await fill(stranger, strangers, others);

          const atMs = now + laterDays * DAY_MS;
          const cutoff = (atMs - retention * DAY_MS) * 1000;
          const before = { records: await recordsOfProject(expiring.projectId), patches: await patchesOfProject(expiring.projectId) };
          const untouched = await Promise.all([keepsAll, strangers].map(async (p) => ({ records: await recordsOfProject(p.projectId), patches: await patchesOfProject(p.projectId) })));
          const strangerBefore = untouched[1]!;
          const expected = expectedAfterExpiry(before.records, before.patches, cutoff);

          deletionTestSeam.chunkLimits = { roots: chunk, sessionTraces: 2 * chunk, spans: chunk };
          const { outcome, sent } = await runExpiry(atMs);
          const myJob = outcome.jobs.find((j) => j.organizationId === admin.organizationId);
          const somethingExpired = before.records.length !== expected.records.length || before.patches.length !== expected.patches.length;
          expect(myJob !== undefined, "a job exactly when something expired").toBe(somethingExpired);
          await drain(sent, { duplicate, crash });

          const after = { records: await recordsOfProject(expiring.projectId), patches: await patchesOfProject(expiring.projectId) };
          expect(after.records.map((r) => r.id).sort()).toEqual(expected.records.map((r) => r.id).sort());
          expect(after.patches.map((p) => p.record_id).sort()).toEqual(expected.patches.map((p) => p.record_id).sort());
          // Kept records are untouched, byte for byte.
          const keptBefore = new Map(before.records.map((r) => [r.id, r]));
          for (const row of after.records) expect(row).toEqual(keptBefore.get(row.id));
          // The project without retention is untouched; the other organization's project is too,
          // as its own expiry (the same cron run) is judged by the same model.
          expect({ records: await recordsOfProject(keepsAll.projectId), patches: await patchesOfProject(keepsAll.projectId) }).toEqual(untouched[0]);
          const strangerExpected = expectedAfterExpiry(strangerBefore.records, strangerBefore.patches, cutoff);
          expect((await recordsOfProject(strangers.projectId)).map((r) => r.id).sort()).toEqual(strangerExpected.records.map((r) => r.id).sort());

          if (myJob) {
            const job = await call(`/v2/org-jobs/${myJob.jobId}`, { as: admin });
            expect(job.body).toMatchObject({ job_name: "expire_retention", status: "completed", created_by: "system:retention" });
            const gone = before.records.filter((r) => !after.records.some((a) => a.id === r.id));
            expect(job.body.progress).toEqual({
              sessions_deleted: gone.filter((r) => r.record_type === "session").length,
              traces_deleted: gone.filter((r) => r.record_type === "trace").length,
              spans_deleted: gone.filter((r) => r.record_type === "span").length,
            });
            expect(job.body.request_data.projects).toMatchObject([{ project_id: expiring.projectId, retention_days: retention }]);
            expect(Date.parse(job.body.request_data.projects[0].cutoff)).toBe(cutoff / 1000);
            // The stranger cannot see it.
            expect((await call(`/v2/org-jobs/${myJob.jobId}`, { as: stranger })).status).toBe(404);
          }
          // A second run at the same time finds nothing more to do for this organization.
          const again = await runExpiry(atMs);
          expect(again.outcome.jobs.some((j) => j.organizationId === admin.organizationId)).toBe(false);
          await drain(again.sent);
          // The text index follows every write and removal (migration 0012).
          expect(await textIndexDifferencesEverywhere()).toEqual([]);
        },
      ),
      { numRuns: 12 },
    );
  }, 240_000);

  it("erases old spans whose trace never arrived, and keeps an old span of a young trace with its trace", async () => {
    const admin = await createTenant("admin");
    const run = await project(admin, { retention_days: 10 });
    const now = Date.now();
    const young = crypto.randomUUID();
    const oldSpanOfYoung = crypto.randomUUID();
    await postTraces(admin, run, [{ id: young, name: "young", created_at: iso(now - DAY_MS), spans: [{ id: oldSpanOfYoung, type: "tool", created_at: iso(now - 30 * DAY_MS) }] }]);
    // A span streamed alone into a trace that never arrives.
    const orphan = crypto.randomUUID();
    const streamed = await call(`/v2/projects/${run.projectId}/spans`, {
      as: admin,
      body: { log_stream_id: run.logStreamId, trace_id: crypto.randomUUID(), parent_id: crypto.randomUUID(), spans: [{ id: orphan, type: "llm", created_at: iso(now - 30 * DAY_MS) }] },
    });
    expect(streamed.status, JSON.stringify(streamed.body)).toBe(200);
    const { sent } = await runExpiry(now);
    await drain(sent);
    const left = (await recordsOfProject(run.projectId)).map((r) => r.id);
    expect(left).toContain(young);
    expect(left).toContain(oldSpanOfYoung);
    expect(left).not.toContain(orphan);
  });

  it("a retention made longer, or cleared, while its expiry runs applies before the expiry's next chunk", async () => {
    const admin = await createTenant("admin");
    const now = Date.now();
    const longer = await project(admin, { retention_days: 10 });
    const cleared = await project(admin, { retention_days: 10 });
    const ids = { longer: { old: [] as string[], middle: [] as string[] }, cleared: [] as string[] };
    for (let i = 0; i < 3; i++) {
      ids.longer.old.push(crypto.randomUUID());
      ids.longer.middle.push(crypto.randomUUID());
      ids.cleared.push(crypto.randomUUID());
    }
    await postTraces(admin, longer, [
      ...ids.longer.old.map((id) => ({ id, name: "old", created_at: iso(now - 30 * DAY_MS) })),
      ...ids.longer.middle.map((id) => ({ id, name: "middle", created_at: iso(now - 15 * DAY_MS) })),
    ]);
    await postTraces(admin, cleared, ids.cleared.map((id) => ({ id, name: "old", created_at: iso(now - 30 * DAY_MS) })));
    const { sent } = await runExpiry(now);
    expect(sent.length).toBeGreaterThan(0);
    // One trace per chunk; after the first chunk an admin keeps one project 20 days, the other for ever.
    deletionTestSeam.chunkLimits = { roots: 1, sessionTraces: 1, spans: 100 };
    let changed = false;
    deletionTestSeam.afterChunk = async () => {
      if (changed) return;
      changed = true;
      expect((await patchRetention(admin, longer.projectId, 20)).status).toBe(200);
      expect((await patchRetention(admin, cleared.projectId, null)).status).toBe(200);
    };
    await drain(sent);
    const left = async (run: { projectId: string }) => (await recordsOfProject(run.projectId)).map((r) => r.id as string);
    const longerLeft = await left(longer);
    for (const id of ids.longer.old) expect(longerLeft).not.toContain(id);
    for (const id of ids.longer.middle) expect(longerLeft).toContain(id);
    // At most the one chunk before the change erased anything of the cleared project.
    expect((await left(cleared)).length).toBeGreaterThanOrEqual(2);
  });

  it("skips an organization whose previous expiry still runs, and lists jobs newest first, filtered and paginated", async () => {
    const admin = await createTenant("admin");
    const member = await addUser(admin, "member");
    const run = await project(admin, { retention_days: 1 });
    const now = Date.now();
    await postTraces(admin, run, [{ id: crypto.randomUUID(), name: "old", created_at: iso(now - 5 * DAY_MS), spans: [] }]);
    const first = await runExpiry(now);
    const job = first.outcome.jobs.find((j) => j.organizationId === admin.organizationId)!;
    expect(job).toBeDefined();
    // Not delivered yet: the next hour skips the organization.
    const second = await runExpiry(now + 3_600_000);
    expect(second.outcome.jobs.some((j) => j.organizationId === admin.organizationId)).toBe(false);
    await drain(first.sent);
    // And a deletion request, to have two kinds of jobs.
    const deletion = await call("/v2/org-jobs/delete-by-metadata", { as: admin, body: { metadata_key: "nothing", metadata_value: "matches" } });
    expect(deletion.status).toBe(200);
    await postTraces(admin, run, [{ id: crypto.randomUUID(), name: "old", created_at: iso(now - 5 * DAY_MS), user_metadata: { k: "v" }, spans: [] }]);
    const queued = await call("/v2/org-jobs/delete-by-metadata", { as: admin, body: { metadata_key: "k", metadata_value: "v" } });
    expect(queued.body.job_id).toBeTruthy();

    const all = await call("/v2/org-jobs", { as: admin });
    expect(all.status, JSON.stringify(all.body)).toBe(200);
    expect(all.body.jobs.map((j: { id: string }) => j.id)).toEqual([queued.body.job_id, job.jobId]);
    expect(all.body).toMatchObject({ starting_token: 0, limit: 100, paginated: false, next_starting_token: null });
    const expiries = await call("/v2/org-jobs?job_name=expire_retention", { as: admin });
    expect(expiries.body.jobs.map((j: { id: string }) => j.id)).toEqual([job.jobId]);
    expect(expiries.body.jobs[0].status).toBe("completed");
    await waitForJob(admin, queued.body.job_id);
    const completed = await call("/v2/org-jobs?status=completed", { as: admin });
    expect(completed.body.jobs.map((j: { id: string }) => j.id)).toEqual([queued.body.job_id, job.jobId]);
    expect((await call("/v2/org-jobs?status=failed&job_name=delete_by_metadata", { as: admin })).body.jobs).toEqual([]);
    const page1 = await call("/v2/org-jobs?limit=1", { as: admin });
    expect(page1.body).toMatchObject({ paginated: true, next_starting_token: 1 });
    const page2 = await call("/v2/org-jobs?limit=1&starting_token=1", { as: admin });
    expect(page2.body.jobs.map((j: { id: string }) => j.id)).toEqual([job.jobId]);
    expect(page2.body.paginated).toBe(false);
    for (const bad of ["limit=0", "limit=1001", "starting_token=-1", "job_name=other", "status=done", "limit=x"]) {
      expect((await call(`/v2/org-jobs?${bad}`, { as: admin })).status, bad).toBe(422);
    }
    expect((await call("/v2/org-jobs", { as: member })).status).toBe(403);
    const stranger = await createTenant("admin");
    expect((await call("/v2/org-jobs", { as: stranger })).body.jobs).toEqual([]);
  });
});

describe("GET /v2/projects/{project_id}/usage", () => {
  it("counts per kind, the oldest and newest created_at, what the retention hides, and approximate bytes", async () => {
    const admin = await createTenant("admin");
    const member = await addUser(admin, "member");
    const run = await project(admin, { retention_days: 10 });
    const now = Date.now();
    const session = crypto.randomUUID();
    await postSession(admin, run, { id: session, created_at: iso(now - 3 * DAY_MS) });
    await postTraces(admin, run, [
      { id: crypto.randomUUID(), name: "old", created_at: iso(now - 20 * DAY_MS), spans: [{ type: "llm", created_at: iso(now - 20 * DAY_MS) }] },
      { id: crypto.randomUUID(), name: "new", created_at: iso(now - DAY_MS), session_id: session, spans: [{ type: "llm", created_at: iso(now - DAY_MS) }, { type: "tool", created_at: iso(now - DAY_MS) }] },
    ]);
    const usage = await call(`/v2/projects/${run.projectId}/usage`, { as: member });
    expect(usage.status, JSON.stringify(usage.body)).toBe(200);
    expect(usage.body).toMatchObject({
      project_id: run.projectId,
      retention_days: 10,
      sessions: { records: 1, expired: 0 },
      traces: { records: 2, expired: 1 },
      spans: { records: 3, expired: 1 },
      records: 6,
      held_updates: 0,
    });
    const at = (text: string) => Date.parse(text);
    expect(at(usage.body.traces.oldest_created_at)).toBe(now - 20 * DAY_MS);
    expect(at(usage.body.traces.newest_created_at)).toBe(now - DAY_MS);
    expect(at(usage.body.oldest_created_at)).toBe(now - 20 * DAY_MS);
    expect(at(usage.body.newest_created_at)).toBe(now - DAY_MS);
    expect(usage.body.approximate_bytes).toBe(6 * usage.body.bytes_per_record);
    expect(usage.body.expired_approximate_bytes).toBe(2 * usage.body.bytes_per_record);
    expect(Date.parse(usage.body.cutoff)).toBeGreaterThan(now - 10 * DAY_MS - 60_000);
    const empty = await project(admin);
    expect((await call(`/v2/projects/${empty.projectId}/usage`, { as: admin })).body).toMatchObject({ records: 0, oldest_created_at: null, cutoff: null, retention_days: null });
    const stranger = await createTenant("admin");
    expect((await call(`/v2/projects/${run.projectId}/usage`, { as: stranger })).status).toBe(404);
  });
});
