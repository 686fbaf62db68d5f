/**
 * Queue entries follow their records (contract section 8, "Erasure"; docs/annotations.md,
 * "Annotation queues"): a deletion takes a deleted record's entries in its own chunks; a move
 * carries entries with their records (those added during the copy too) and verifies ratings and
 * entries before it switches; a queue deleted is finished by the maintenance if a request could
 * not remove everything.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { purgeDeletedQueues } from "../src/annotation-queues/queue-deletion";
import { clearProjectRoutes } from "../src/shards/project-routing";
import { createProjectWithRun, createTemplate, ingestTraces, rate } from "./support/annotations";
import { call } from "./support/client";
import { recordsOf } from "./support/record-dbs";
import { dbOf, otherShard, requestMove, shardOf, stepUntil } from "./support/moves";
import { type Tenant, createTenant } from "./support/tenants";

const entryCount = async (db: D1Database, projectId: string) =>
  (await db.prepare("SELECT count(*) AS n FROM annotation_queue_entries WHERE project_id = ?").bind(projectId).first<{ n: number }>())!.n;

async function queueOf(admin: Tenant, projectId: string, runId: string, ids: readonly string[]) {
  const queue = await call("/v2/annotation_queues", { as: admin, body: { name: { value: `erasure-${crypto.randomUUID()}` } } });
  const qid = queue.body.id as string;
  const added = await call(`/v2/annotation_queues/${qid}/records`, { as: admin, body: { project_id: projectId, run_id: runId, record_selector: { type: "record_ids", record_ids: ids } } });
  expect(added.body.num_records_added).toBe(ids.length);
  return qid;
}

const queueIds = async (admin: Tenant, qid: string) =>
  (await call(`/v2/annotation_queues/${qid}/partial_search`, { as: admin, body: { limit: 100 } })).body.records.map((r: { id: string }) => r.id);

describe("queue entries", () => {
  it("go with their records in a deletion by metadata, and only theirs", async () => {
    const admin = await createTenant("admin");
    const project = await createProjectWithRun(admin);
    const { traces, spans } = await ingestTraces(admin, project, 3, (i) => ({ user_metadata: { doomed: i === 0 ? "yes" : "no" } }));
    const qid = await queueOf(admin, project.projectId, project.runId, [traces[0]!, spans[0]!, traces[1]!, traces[2]!]);
    const job = await call("/v2/org-jobs/delete-by-metadata?immediate=true", { as: admin, body: { metadata_key: "doomed", metadata_value: "yes" } });
    expect(job.status).toBe(200);
    expect(await queueIds(admin, qid)).toEqual([traces[1], traces[2]]);
    expect((await call(`/v2/annotation_queues/${qid}`, { as: admin })).body.num_log_records).toBe(2);
    expect(await entryCount(await recordsOf(project.projectId), project.projectId)).toBe(2);
  });

  it("go with their records in a deletion by filter", async () => {
    const admin = await createTenant("admin");
    const project = await createProjectWithRun(admin);
    const { traces } = await ingestTraces(admin, project, 3, (i) => ({ tags: i === 1 ? ["old"] : [] }));
    const qid = await queueOf(admin, project.projectId, project.runId, traces);
    const answer = await call(`/v2/projects/${project.projectId}/traces/delete`, {
      as: admin,
      body: { log_stream_id: project.runId, filters: [{ type: "collection", column_id: "tags", operator: "contains", value: "old" }] },
    });
    expect(answer.body).toMatchObject({ deleted: { traces: 1 } });
    expect(await queueIds(admin, qid)).toEqual([traces[0], traces[2]]);
    expect(await entryCount(await recordsOf(project.projectId), project.projectId)).toBe(2);
  });

  it("travel with a moved project, those added during the copy too, in their order, and none stay behind", async () => {
    const admin = await createTenant("admin");
    const project = await createProjectWithRun(admin);
    const { traces } = await ingestTraces(admin, project, 4);
    const qid = await queueOf(admin, project.projectId, project.runId, [traces[2]!, traces[0]!]);
    const template = await call(`/v2/annotation_queues/${qid}/templates`, { as: admin, body: { template: { name: "ok", constraints: { annotation_type: "like_dislike" } } } });
    await call(`/v2/annotation_queues/${qid}/users`, { as: admin, body: [{ user_id: admin.userId, role: "annotator" }] });
    const rated = await call(`/v2/annotation_queues/${qid}/records/${traces[2]}/rating?annotation_template_id=${template.body.id}`, { as: admin, method: "PUT", body: { rating: { annotation_type: "like_dislike", value: true } } });
    expect(rated.status).toBe(200);
    const source = await shardOf(project.projectId);
    const target = otherShard(source);
    const moveId = await requestMove(project.projectId, target);
    await stepUntil(moveId, (m) => m.phase === "catching_up");
    // While the source is exporting: one added, one removed.
    await call(`/v2/annotation_queues/${qid}/records`, { as: admin, body: { project_id: project.projectId, run_id: project.runId, record_selector: { type: "record_ids", record_ids: [traces[3]] } } });
    await call(`/v2/annotation_queues/${qid}/records/remove`, { as: admin, body: { record_selector: { type: "record_ids", record_ids: [traces[0]] } } });
    const done = await stepUntil(moveId);
    expect(done.phase).toBe("completed");
    clearProjectRoutes();
    expect(await entryCount(dbOf(target), project.projectId)).toBe(2);
    expect(await entryCount(dbOf(source), project.projectId)).toBe(0);
    expect(await queueIds(admin, qid)).toEqual([traces[2], traces[3]]);
    const queue = await call(`/v2/annotation_queues/${qid}`, { as: admin });
    expect(queue.body).toMatchObject({ num_log_records: 2, num_logs_annotated: { [admin.userId]: 1 } });
  });

  it("are verified before a move switches: a rating missing on the target is a difference", async () => {
    const admin = await createTenant("admin");
    const project = await createProjectWithRun(admin);
    const { traces } = await ingestTraces(admin, project, 2);
    const like = await createTemplate(admin, project.projectId, { annotation_type: "like_dislike" });
    await rate(admin, project.projectId, like.id, traces[0]!, { annotation_type: "like_dislike", value: true });
    await queueOf(admin, project.projectId, project.runId, [traces[1]!]);
    const source = await shardOf(project.projectId);
    const target = otherShard(source);
    const moveId = await requestMove(project.projectId, target);
    await stepUntil(moveId, (m) => m.step === "verify");
    // The copy lost a rating and an entry (nothing logs a change on a copy being filled).
    await dbOf(target).prepare("DELETE FROM annotation_ratings WHERE project_id = ?").bind(project.projectId).run();
    await dbOf(target).prepare("DELETE FROM annotation_queue_entries WHERE project_id = ?").bind(project.projectId).run();
    const checked = await stepUntil(moveId, (m) => m.error_message !== null || m.phase === "completed");
    expect(checked.phase).not.toBe("completed");
    expect(checked.error_message).toMatch(/1 (ratings|queue entries) on the source, 0 on the target/);
  });

  it("of a deleted queue that a request could not all remove are finished by the maintenance", async () => {
    const admin = await createTenant("admin");
    const project = await createProjectWithRun(admin);
    const { traces } = await ingestTraces(admin, project, 2);
    const qid = await queueOf(admin, project.projectId, project.runId, traces);
    const db = await recordsOf(project.projectId);
    // The request's share ran out (as with 100,000 entries): mark it deleted without purging.
    await env.DB.prepare("UPDATE annotation_queues SET deleted_at = 1 WHERE id = ?").bind(qid).run();
    expect((await call(`/v2/annotation_queues/${qid}`, { as: admin })).status).toBe(404);
    expect(await entryCount(db, project.projectId)).toBe(2);
    const outcome = await purgeDeletedQueues(env as never);
    expect(outcome.queues).toBeGreaterThanOrEqual(1);
    expect(await entryCount(db, project.projectId)).toBe(0);
    expect(await env.DB.prepare("SELECT count(*) AS n FROM annotation_queues WHERE id = ?").bind(qid).first()).toEqual({ n: 0 });
  });
});
