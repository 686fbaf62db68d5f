/**
 * A queue's partial_search with feedback leaves scoped to the queue (contract section 8):
 * `fully_annotated` = rated with every queue template by each of the queue's annotators (or by
 * each of `user_ids`), and leaves on the queue's own templates (`annotations/<queue template id>`).
 */
import { beforeAll, describe, expect, it } from "vitest";
import { type AnnotatedProject, createProjectWithRun, createTemplate, ingestTraces } from "./support/annotations";
import { call } from "./support/client";
import { addUser, createTenant, type Tenant } from "./support/tenants";

let owner: Tenant;
let annotator: Tenant;
let project: AnnotatedProject;
let traces: string[];
let qid: string;
let like: string;
let score: string;

const rate = (as: Tenant, rid: string, tid: string, rating: Record<string, unknown>) =>
  call(`/v2/annotation_queues/${qid}/records/${rid}/rating?annotation_template_id=${tid}`, { as, method: "PUT", body: { rating } });

async function ids(filter_tree: unknown): Promise<string[]> {
  const answer = await call(`/v2/annotation_queues/${qid}/partial_search`, { as: owner, body: { filter_tree } });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body.records.map((r: { id: string }) => r.id);
}

beforeAll(async () => {
  owner = await createTenant("member");
  annotator = await addUser(owner, "member");
  project = await createProjectWithRun(owner);
  ({ traces } = await ingestTraces(owner, project, 4));
  const queue = await call("/v2/annotation_queues", { as: owner, body: { name: { value: `scoped-${crypto.randomUUID()}` }, annotator_emails: [annotator.email] } });
  expect(queue.status).toBe(200);
  qid = queue.body.id;
  like = (await call(`/v2/annotation_queues/${qid}/templates`, { as: owner, body: { template: { name: "helpful", constraints: { annotation_type: "like_dislike" } } } })).body.id;
  score = (await call(`/v2/annotation_queues/${qid}/templates`, { as: owner, body: { template: { name: "score", constraints: { annotation_type: "score", min: 0, max: 10 } } } })).body.id;
  const added = await call(`/v2/annotation_queues/${qid}/records`, { as: owner, body: { project_id: project.projectId, run_id: project.runId, record_selector: { type: "record_ids", record_ids: traces } } });
  expect(added.status).toBe(200);
  // Trace 0: both templates by both annotators. Trace 1: both templates by the owner only.
  // Trace 2: one template by both. Trace 3: nothing.
  for (const who of [owner, annotator]) {
    expect((await rate(who, traces[0]!, like, { annotation_type: "like_dislike", value: true })).status).toBe(200);
    expect((await rate(who, traces[0]!, score, { annotation_type: "score", value: 7 })).status).toBe(200);
    expect((await rate(who, traces[2]!, like, { annotation_type: "like_dislike", value: false })).status).toBe(200);
  }
  expect((await rate(owner, traces[1]!, like, { annotation_type: "like_dislike", value: true })).status).toBe(200);
  expect((await rate(owner, traces[1]!, score, { annotation_type: "score", value: 2 })).status).toBe(200);
});

describe("a queue's search with feedback leaves scoped to the queue", () => {
  it("fully_annotated: every queue template rated by each of the queue's annotators", async () => {
    expect(await ids({ filter: { type: "fully_annotated" } })).toEqual([traces[0]]);
  });

  it("fully_annotated with user_ids: by each of them", async () => {
    expect((await ids({ filter: { type: "fully_annotated", user_ids: [owner.userId] } })).sort()).toEqual([traces[0], traces[1]].sort());
    expect(await ids({ not: { filter: { type: "fully_annotated" } } })).toEqual(expect.arrayContaining([traces[1], traces[2], traces[3]]));
  });

  it("leaves on the queue's own templates", async () => {
    expect((await ids({ filter: { type: "boolean", column_id: `annotations/${like}`, operator: "eq", value: true } })).sort()).toEqual([traces[0], traces[1]].sort());
    expect(await ids({ filter: { type: "boolean", column_id: `annotations/${like}`, operator: "eq", value: false } })).toEqual([traces[2]]);
    expect(await ids({ filter: { type: "number", column_id: `annotations/${score}`, operator: "lt", value: 5 } })).toEqual([traces[1]]);
  });

  it("a leaf that does not fit the queue template is a 422 at the leaf", async () => {
    const answer = await call(`/v2/annotation_queues/${qid}/partial_search`, { as: owner, body: { filter_tree: { filter: { type: "number", column_id: `annotations/${like}`, operator: "gt", value: 1 } } } });
    expect(answer.status, JSON.stringify(answer.body)).toBe(422);
    expect(answer.body.detail[0].msg).toContain("like_dislike");
  });
});

/**
 * A queue over two projects: its records/count and records/remove by filter read the feedback
 * leaves as its partial_search does (scoped to the queue), the same for every project. Before,
 * they bound the filter to the project's own templates, on one filter object shared by the
 * projects read side by side: the first project's live templates decided for every project.
 */
describe("a queue of two projects: count and remove by filter as its search reads them", () => {
  let queueId: string;
  let doneA: string;
  let doneB: string;
  let open: string[];

  const inQueue = async (filter_tree: unknown) => {
    const answer = await call(`/v2/annotation_queues/${queueId}/partial_search`, { as: owner, body: { filter_tree } });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    return answer.body.records.map((r: { id: string }) => r.id as string).sort();
  };
  const countOf = async (filter_tree: unknown) => {
    const answer = await call(`/v2/annotation_queues/${queueId}/records/count`, { as: owner, body: { filter_tree, record_type: "trace" } });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    return answer.body.count as number;
  };

  beforeAll(async () => {
    const a = await createProjectWithRun(owner);
    const b = await createProjectWithRun(owner);
    // Project A has a template of its own that nothing is rated with: a project-scoped
    // `fully_annotated` would find nothing of A fully annotated, and none of B (no template).
    await createTemplate(owner, a.projectId, { annotation_type: "like_dislike" });
    const tracesA = (await ingestTraces(owner, a, 2)).traces;
    const tracesB = (await ingestTraces(owner, b, 2)).traces;
    const queue = await call("/v2/annotation_queues", { as: owner, body: { name: { value: `two-projects-${crypto.randomUUID()}` } } });
    expect(queue.status).toBe(200);
    queueId = queue.body.id;
    const done = (await call(`/v2/annotation_queues/${queueId}/templates`, { as: owner, body: { template: { name: "done", constraints: { annotation_type: "like_dislike" } } } })).body.id;
    for (const [project, ids] of [[a, tracesA], [b, tracesB]] as const) {
      const added = await call(`/v2/annotation_queues/${queueId}/records`, { as: owner, body: { project_id: project.projectId, run_id: project.runId, record_selector: { type: "record_ids", record_ids: ids } } });
      expect(added.status, JSON.stringify(added.body)).toBe(200);
    }
    [doneA, doneB] = [tracesA[0]!, tracesB[0]!];
    open = [tracesA[1]!, tracesB[1]!].sort();
    for (const rid of [doneA, doneB]) {
      const rated = await call(`/v2/annotation_queues/${queueId}/records/${rid}/rating?annotation_template_id=${done}`, { as: owner, method: "PUT", body: { rating: { annotation_type: "like_dislike", value: true } } });
      expect(rated.status, JSON.stringify(rated.body)).toBe(200);
    }
  });

  it("records/count with fully_annotated counts what partial_search finds, in both projects", async () => {
    expect(await inQueue({ filter: { type: "fully_annotated" } })).toEqual([doneA, doneB].sort());
    expect(await countOf({ filter: { type: "fully_annotated" } })).toBe(2);
    expect(await countOf({ not: { filter: { type: "fully_annotated" } } })).toBe(2);
  });

  it("records/remove by fully_annotated removes the finished records of both projects, and only them", async () => {
    const removed = await call(`/v2/annotation_queues/${queueId}/records/remove`, { as: owner, body: { record_selector: { type: "filter_tree", record_type: "trace", filter_tree: { filter: { type: "fully_annotated" } } } } });
    expect(removed.status, JSON.stringify(removed.body)).toBe(200);
    expect(removed.body.num_records_removed).toBe(2);
    expect(await inQueue(null)).toEqual(open);
  });
});
