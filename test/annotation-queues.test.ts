/**
 * Annotation queues (contract section 8, "Queues"): CRUD and names, users and roles, queue
 * templates, adding records by ids and by filter (skipping what is there), the queue's search in
 * "as added" order across projects with queue-scoped feedback, rating with queue roles,
 * progress, details with agreement, removal, counting, deletion, and tenancy.
 */
import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { deleteUser, runStatements } from "../src/admin/provisioning";
import { type AnnotatedProject, createProjectWithRun, ingestTraces } from "./support/annotations";
import { call } from "./support/client";
import { type Tenant, addUser, createTenant } from "./support/tenants";

let owner: Tenant;
let annotator: Tenant;
let viewer: Tenant;
let outsider: Tenant;
let stranger: Tenant;
let first: AnnotatedProject;
let second: AnnotatedProject;
let firstTraces: string[];
let secondTraces: string[];

async function createQueue(as: Tenant, name: string, extra: Record<string, unknown> = {}) {
  return call("/v2/annotation_queues", { as, body: { name: { value: name }, ...extra } });
}

async function queueWithTemplates(name: string) {
  const queue = await createQueue(owner, name, { annotator_emails: [annotator.email] });
  expect(queue.status).toBe(200);
  const qid = queue.body.id as string;
  const like = await call(`/v2/annotation_queues/${qid}/templates`, { as: owner, body: { template: { name: "helpful", constraints: { annotation_type: "like_dislike" } } } });
  const score = await call(`/v2/annotation_queues/${qid}/templates`, { as: owner, body: { template: { name: "score", constraints: { annotation_type: "score", min: 0, max: 10 } } } });
  expect(like.status).toBe(200);
  expect(score.status).toBe(200);
  return { qid, like: like.body.id as string, score: score.body.id as string };
}

const rate = (as: Tenant, qid: string, rid: string, tid: string, rating: Record<string, unknown>) =>
  call(`/v2/annotation_queues/${qid}/records/${rid}/rating?annotation_template_id=${tid}`, { as, method: "PUT", body: { rating } });

beforeAll(async () => {
  owner = await createTenant("member");
  annotator = await addUser(owner, "member");
  viewer = await addUser(owner, "member");
  outsider = await addUser(owner, "member");
  stranger = await createTenant("admin");
  first = await createProjectWithRun(owner);
  second = await createProjectWithRun(owner);
  ({ traces: firstTraces } = await ingestTraces(owner, first, 6, (i) => ({ tags: i % 2 === 0 ? ["even"] : ["odd"] })));
  ({ traces: secondTraces } = await ingestTraces(owner, second, 3));
});

describe("annotation queues", () => {
  it("creates a queue whose creator is its owner, with unique names (409, or a suffix when asked)", async () => {
    const name = `queue-${crypto.randomUUID()}`;
    const queue = await createQueue(owner, name, { description: "first pass", annotator_emails: [annotator.email] });
    expect(queue.status).toBe(200);
    expect(queue.body).toMatchObject({ name, description: "first pass", num_log_records: 0, num_annotators: 2, num_users: 2, num_templates: 0, overall_progress: 0, created_by_user: { id: owner.userId } });
    expect(queue.body.permissions).toContainEqual({ action: "record_annotation", allowed: true });
    expect((await createQueue(owner, name)).status).toBe(409);
    const suffixed = await createQueue(owner, name, { name: { value: name, append_suffix_if_duplicate: true } });
    expect(suffixed.body.name).toBe(`${name} (1)`);
    const again = await createQueue(owner, name, { name: { value: name, append_suffix_if_duplicate: true } });
    expect(again.body.name).toBe(`${name} (2)`);
    // An annotator who is not of the organization is a 422 at the email.
    const foreign = await createQueue(owner, `q-${crypto.randomUUID()}`, { annotator_emails: [stranger.email] });
    expect(foreign.status).toBe(422);
    expect(foreign.body.detail[0].loc).toEqual(["body", "annotator_emails", 0]);
    // Search by name, and count.
    const found = await call("/v2/annotation_queues/query", { as: owner, body: { name } });
    expect(found.body.annotation_queues.map((q: any) => q.name).sort()).toEqual([name, `${name} (1)`, `${name} (2)`]);
    expect((await call("/v2/annotation_queues/count", { as: owner, body: { name } })).body.count).toBe(3);
    // The annotator sees the first; a user with no role sees none.
    expect((await call("/v2/annotation_queues/count", { as: annotator, body: { name } })).body.count).toBe(1);
    expect((await call("/v2/annotation_queues/count", { as: outsider, body: { name } })).body.count).toBe(0);
  });

  it("adds records by ids and by filter, skips what is there, searches in the order added across projects", async () => {
    const { qid } = await queueWithTemplates(`order-${crypto.randomUUID()}`);
    const byIds = await call(`/v2/annotation_queues/${qid}/records`, {
      as: owner,
      body: { project_id: second.projectId, run_id: second.runId, record_selector: { type: "record_ids", record_ids: [secondTraces[2], secondTraces[0]] } },
    });
    expect(byIds.body).toEqual({ num_records_added: 2 });
    const byFilter = await call(`/v2/annotation_queues/${qid}/records`, {
      as: owner,
      body: { project_id: first.projectId, run_id: first.runId, record_selector: { type: "filter_tree", filter_tree: { filter: { column_id: "tags", operator: "contains", value: "even", type: "collection" } } } },
    });
    expect(byFilter.status).toBe(200);
    expect(byFilter.body).toEqual({ num_records_added: 3 });
    // Adding again is a no-op; an id of another run is not added.
    const again = await call(`/v2/annotation_queues/${qid}/records`, {
      as: owner,
      body: { project_id: second.projectId, run_id: second.runId, record_selector: { type: "record_ids", record_ids: [secondTraces[0], secondTraces[1], firstTraces[1]] } },
    });
    expect(again.body).toEqual({ num_records_added: 1 });
    const page = await call(`/v2/annotation_queues/${qid}/partial_search`, { as: owner, body: { limit: 4 } });
    expect(page.status).toBe(200);
    // As added: the ids in request order, then the filter's matches in native order (newest first).
    const expected = [secondTraces[2], secondTraces[0], firstTraces[4], firstTraces[2], firstTraces[0], secondTraces[1]];
    expect(page.body.records.map((r: any) => r.id)).toEqual(expected.slice(0, 4));
    expect(page.body).toMatchObject({ paginated: true, next_starting_token: 4 });
    const rest = await call(`/v2/annotation_queues/${qid}/partial_search`, { as: owner, body: { limit: 4, starting_token: 4 } });
    expect(rest.body.records.map((r: any) => r.id)).toEqual(expected.slice(4));
    expect(rest.body.paginated).toBe(false);
    expect(page.body.records[0].annotation_queue_ids).toEqual([qid]);
    expect((await call(`/v2/annotation_queues/${qid}/records/count`, { as: owner, body: {} })).body.count).toBe(6);
    const filtered = await call(`/v2/annotation_queues/${qid}/records/count`, {
      as: owner,
      body: { filter_tree: { filter: { column_id: "tags", operator: "contains", value: "even", type: "collection" } } },
    });
    expect(filtered.body.count).toBe(3);
    // Removing by ids, then by filter.
    const removed = await call(`/v2/annotation_queues/${qid}/records/remove`, { as: owner, body: { record_selector: { type: "record_ids", record_ids: [secondTraces[2]] } } });
    expect(removed.body).toEqual({ num_records_removed: 1 });
    const removedByFilter = await call(`/v2/annotation_queues/${qid}/records/remove`, {
      as: owner,
      body: { record_selector: { type: "filter_tree", filter_tree: { filter: { column_id: "tags", operator: "contains", value: "even", type: "collection" } } } },
    });
    expect(removedByFilter.body).toEqual({ num_records_removed: 3 });
    expect((await call(`/v2/annotation_queues/${qid}`, { as: owner })).body.num_log_records).toBe(2);
  });

  it("rates inside the queue with queue roles, and counts progress, aggregates and agreement", async () => {
    const { qid, like, score } = await queueWithTemplates(`rating-${crypto.randomUUID()}`);
    expect((await call(`/v2/annotation_queues/${qid}/users`, { as: owner, body: [{ user_email: viewer.email, role: "viewer" }] })).status).toBe(200);
    await call(`/v2/annotation_queues/${qid}/records`, { as: owner, body: { project_id: first.projectId, run_id: first.runId, record_selector: { type: "record_ids", record_ids: firstTraces.slice(0, 2) } } });
    const [a, b] = firstTraces as [string, string];
    expect((await rate(owner, qid, a, like, { annotation_type: "like_dislike", value: true })).status).toBe(200);
    expect((await rate(owner, qid, a, score, { annotation_type: "score", value: 8 })).status).toBe(200);
    expect((await rate(annotator, qid, a, like, { annotation_type: "like_dislike", value: true })).status).toBe(200);
    const put = await rate(annotator, qid, a, score, { annotation_type: "score", value: 6 });
    expect(put.body).toMatchObject({ rating: { annotation_type: "score", value: 6 }, created_by: annotator.userId });
    expect((await rate(annotator, qid, b, like, { annotation_type: "like_dislike", value: false })).status).toBe(200);
    // Viewers, users without a role, and misfit values.
    expect((await rate(viewer, qid, a, like, { annotation_type: "like_dislike", value: true })).status).toBe(403);
    expect((await rate(outsider, qid, a, like, { annotation_type: "like_dislike", value: true })).status).toBe(403);
    const misfit = await rate(annotator, qid, a, score, { annotation_type: "score", value: 11 });
    expect(misfit.status).toBe(422);
    expect(misfit.body.detail[0].loc).toEqual(["body", "rating", "value"]);
    // A record not in the queue.
    expect((await rate(annotator, qid, firstTraces[3]!, like, { annotation_type: "like_dislike", value: true })).status).toBe(404);

    const queue = await call(`/v2/annotation_queues/${qid}`, { as: viewer });
    expect(queue.body).toMatchObject({ num_log_records: 2, num_annotators: 2, num_logs_annotated: { [owner.userId]: 1, [annotator.userId]: 1 }, progress: { [owner.userId]: 0.5, [annotator.userId]: 0.5 }, overall_progress: 0.5 });
    const record = await call(`/v2/annotation_queues/${qid}/records/${a}`, { as: annotator });
    expect(record.status).toBe(200);
    expect(record.body.annotations[like]).toEqual({ [owner.userId]: { annotation_type: "like_dislike", value: true, explanation: null }, [annotator.userId]: { annotation_type: "like_dislike", value: true, explanation: null } });
    expect(record.body.annotation_agreement).toEqual({ [like]: 1, [score]: 0.8 });
    expect(record.body.feedback_rating_info[score]).toMatchObject({ value: 6 });
    const other = await call(`/v2/annotation_queues/${qid}/records/${b}`, { as: annotator });
    // One of the two annotators has not rated b with like, neither with score.
    expect(other.body.annotation_aggregates[like].aggregate).toMatchObject({ like_count: 0, dislike_count: 1, unrated_count: 1 });
    expect(other.body.annotation_aggregates[score].aggregate).toMatchObject({ unrated_count: 2 });

    const details = await call(`/v2/annotation_queues/${qid}/details`, { as: owner });
    expect(details.status).toBe(200);
    expect(details.body.num_logs_fully_annotated).toBe(1);
    expect(details.body.annotation_aggregates[like].aggregate).toMatchObject({ like_count: 2, dislike_count: 1, unrated_count: 1 });
    expect(details.body.annotation_aggregates_by_annotator[annotator.userId][score].aggregate).toMatchObject({ average: 6, unrated_count: 1 });
    expect(details.body.overall_annotation_agreement.average_agreement).toBeCloseTo(0.9);
    expect(details.body.overall_annotation_agreement.buckets[8].count + details.body.overall_annotation_agreement.buckets[9].count).toBe(2);
    // Deleting a rating.
    const unrate = await call(`/v2/annotation_queues/${qid}/records/${b}/rating?annotation_template_id=${like}`, { as: annotator, method: "DELETE" });
    expect(unrate.status).toBe(200);
    expect((await call(`/v2/annotation_queues/${qid}/records/${b}`, { as: annotator })).body.annotations).toEqual({});
  });

  it("manages users and templates by role, and deletes a queue with its entries and ratings", async () => {
    const { qid, like } = await queueWithTemplates(`roles-${crypto.randomUUID()}`);
    // An annotator may not change the queue; the owner may; a user of another organization is a 422.
    expect((await call(`/v2/annotation_queues/${qid}`, { as: annotator, method: "PATCH", body: { description: "x" } })).status).toBe(403);
    expect((await call(`/v2/annotation_queues/${qid}`, { as: owner, method: "PATCH", body: { description: "second pass" } })).body.description).toBe("second pass");
    const foreignUser = await call(`/v2/annotation_queues/${qid}/users`, { as: owner, body: [{ user_id: stranger.userId, role: "viewer" }] });
    expect(foreignUser.status).toBe(422);
    expect(foreignUser.body.detail[0].loc).toEqual(["body", 0, "user_id"]);
    const changed = await call(`/v2/annotation_queues/${qid}/users/${annotator.userId}`, { as: owner, method: "PATCH", body: { role: "viewer" } });
    expect(changed.body).toMatchObject({ user_id: annotator.userId, role: "viewer" });
    expect((await call(`/v2/annotation_queues/${qid}`, { as: owner })).body.num_annotators).toBe(1);
    expect((await call(`/v2/annotation_queues/${qid}/users/${annotator.userId}`, { as: owner, method: "DELETE" })).status).toBe(200);
    expect((await call(`/v2/annotation_queues/${qid}`, { as: annotator })).status).toBe(403);
    const templates = await call(`/v2/annotation_queues/${qid}/templates`, { as: owner });
    expect(templates.body.map((t: any) => t.name)).toEqual(["helpful", "score"]);
    expect((await call(`/v2/annotation_queues/${qid}/templates`, { as: owner, body: { template: { name: "helpful", constraints: { annotation_type: "star" } } } })).status).toBe(409);

    await call(`/v2/annotation_queues/${qid}/records`, { as: owner, body: { project_id: second.projectId, run_id: second.runId, record_selector: { type: "record_ids", record_ids: secondTraces } } });
    expect((await rate(owner, qid, secondTraces[0]!, like, { annotation_type: "like_dislike", value: true })).status).toBe(200);
    expect((await call(`/v2/annotation_queues/${qid}/templates`, { as: owner })).body[0].usage_count).toBe(1);
    expect((await call(`/v2/annotation_queues/${qid}`, { as: annotator, method: "DELETE" })).status).toBe(403);
    expect((await call(`/v2/annotation_queues/${qid}`, { as: owner, method: "DELETE" })).status).toBe(200);
    expect((await call(`/v2/annotation_queues/${qid}`, { as: owner })).status).toBe(404);
    // The records stay; the queue no longer lists them.
    const search = await call(`/v2/projects/${second.projectId}/traces/partial_search`, { as: owner, body: { log_stream_id: second.runId, select_columns: { include_all_feedback: true } } });
    expect(search.body.records).toHaveLength(3);
    for (const record of search.body.records) expect(record.annotation_queue_ids).not.toContain(qid);
  });

  it("keeps a deleted user's ratings and drops its queue roles", async () => {
    const { qid, like } = await queueWithTemplates(`leaver-${crypto.randomUUID()}`);
    const leaver = await addUser(owner, "member");
    await call(`/v2/annotation_queues/${qid}/users`, { as: owner, body: [{ user_id: leaver.userId, role: "annotator" }] });
    await call(`/v2/annotation_queues/${qid}/records`, { as: owner, body: { project_id: first.projectId, run_id: first.runId, record_selector: { type: "record_ids", record_ids: [firstTraces[5]] } } });
    expect((await rate(leaver, qid, firstTraces[5]!, like, { annotation_type: "like_dislike", value: false })).status).toBe(200);
    await runStatements(env.DB, deleteUser(leaver.userId).statements);
    const users = await call(`/v2/annotation_queues/${qid}/users`, { as: owner });
    expect(users.body.map((u: any) => u.user_id)).not.toContain(leaver.userId);
    const record = await call(`/v2/annotation_queues/${qid}/records/${firstTraces[5]}`, { as: owner });
    expect(record.body.annotations[like][leaver.userId]).toMatchObject({ value: false });
  });

  it("keeps another organization out: its queue, template and records are a 404", async () => {
    const { qid, like } = await queueWithTemplates(`tenancy-${crypto.randomUUID()}`);
    await call(`/v2/annotation_queues/${qid}/records`, { as: owner, body: { project_id: first.projectId, run_id: first.runId, record_selector: { type: "record_ids", record_ids: [firstTraces[0]] } } });
    expect((await call(`/v2/annotation_queues/${qid}`, { as: stranger })).status).toBe(404);
    expect((await call(`/v2/annotation_queues/${qid}/partial_search`, { as: stranger, body: {} })).status).toBe(404);
    expect((await call(`/v2/annotation_queues/${qid}/templates/${like}`, { as: stranger, method: "DELETE" })).status).toBe(404);
    expect((await rate(stranger, qid, firstTraces[0]!, like, { annotation_type: "like_dislike", value: true })).status).toBe(404);
    // Another organization's project cannot be added from, nor its queue be added to.
    const strangerProject = await createProjectWithRun(stranger);
    const { traces } = await ingestTraces(stranger, strangerProject, 1);
    const foreign = await call(`/v2/annotation_queues/${qid}/records`, { as: owner, body: { project_id: strangerProject.projectId, run_id: strangerProject.runId, record_selector: { type: "record_ids", record_ids: traces } } });
    expect(foreign.status).toBe(404);
    expect((await call(`/v2/annotation_queues/${qid}/records/count`, { as: owner, body: {} })).body.count).toBe(1);
  });
});
