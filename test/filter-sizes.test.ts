/**
 * Every compiled filter at the sizes the body caps allow (docs/search.md, "Limits": 50 leaves,
 * 200 nodes, depth 16): an `or` of 50 `contains` leaves (the explorer's search box over many
 * words: issue 30 saw a 500, "Expression tree is too large (maximum depth 100)", at 30), an
 * `and` of 50, a chain 16 deep, a comb of nested and/or with leaves at every level, on every kind
 * of leaf (columns, metadata, metrics, tags equality, annotation templates, fully_annotated).
 * Every route that compiles a filter answers it (never a 5xx): partial_search, count,
 * metrics/custom_search, export_records, delete dry run, and a queue's add, count, search and
 * remove by filter.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { SEARCH_LIMITS } from "../src/search/search-limits";
import { type AnnotatedProject, createProjectWithRun, createTemplate, ingestTraces, rate } from "./support/annotations";
import { call } from "./support/client";
import { createTenant, type Tenant } from "./support/tenants";

let tenant: Tenant;
let project: AnnotatedProject;
let traces: string[];
let likeTemplate: string;
let tagsTemplate: string;
let queueId: string;

type Node = Record<string, unknown>;

const contains = (column: string, i: number): Node => ({ type: "text", column_id: column, operator: "contains", value: `word${i}xyz`, case_sensitive: i % 2 === 0 });
/** Leaves of every kind the compiler has a branch for, the heaviest first. */
const leafKinds: Record<string, (i: number) => Node> = {
  input: (i) => contains("input", i),
  name: (i) => contains("name", i),
  user_metadata: (i) => contains(`user_metadata.key${i % 3}`, i),
  dataset_metadata: (i) => ({ type: "text", column_id: "dataset_metadata.split", operator: "one_of", value: [`s${i}`, "train"] }),
  tags_equal: (i) => ({ type: "collection", column_id: "tags", operator: "eq", value: [`t${i}`, "even"], case_sensitive: false }),
  tags_not_in: (i) => ({ type: "collection", column_id: "tags", operator: "not_in", value: [`t${i}`] }),
  metric: (i) => ({ type: "number", column_id: "metrics/toxicity", operator: "between", value: [i, i + 1] }),
  date: (i) => ({ type: "date", column_id: "created_at", operator: "gt", value: `2026-01-${String((i % 28) + 1).padStart(2, "0")}T00:00:00Z` }),
  like_template: (i) => ({ type: "boolean", column_id: `annotations/${likeTemplate}`, operator: "eq", value: i % 2 === 0 }),
  tags_template: (i) => ({ type: "collection", column_id: `annotations/${tagsTemplate}`, operator: "eq", value: [`a${i}`] }),
  fully_annotated: () => ({ type: "fully_annotated", user_ids: [tenant.userId] }),
};

const wrap = (leaf: Node): Node => ({ filter: leaf });

/** The tree shapes at the caps: each has at most 50 leaves, 200 nodes and depth 16. */
const shapes: Record<string, (leaf: (i: number) => Node) => Node> = {
  "an or of 50 leaves": (leaf) => ({ or: Array.from({ length: SEARCH_LIMITS.maxLeaves }, (_, i) => wrap(leaf(i))) }),
  "an and of 50 leaves": (leaf) => ({ and: Array.from({ length: SEARCH_LIMITS.maxLeaves }, (_, i) => wrap(leaf(i))) }),
  "a not chain 16 deep": (leaf) => {
    let node: Node = leaf(0);
    for (let depth = 1; depth < SEARCH_LIMITS.maxTreeDepth; depth++) node = { not: node };
    return node;
  },
  "a comb of and/or 16 deep, 3 leaves a level": (leaf) => {
    let node: Node = wrap(leaf(0));
    let i = 1;
    for (let depth = 2; depth < SEARCH_LIMITS.maxTreeDepth; depth++) {
      const siblings = Array.from({ length: 3 }, () => wrap(leaf(i++)));
      node = depth % 3 === 0 ? { not: node } : { [depth % 2 === 0 ? "or" : "and"]: [...siblings, node] };
    }
    return node;
  },
};

beforeAll(async () => {
  tenant = await createTenant("admin");
  project = await createProjectWithRun(tenant);
  ({ traces } = await ingestTraces(tenant, project, 3, (i) => ({ tags: i % 2 === 0 ? ["even"] : ["odd"], input: `word${i}xyz here`, user_metadata: { key0: `word${i}xyz` } })));
  likeTemplate = (await createTemplate(tenant, project.projectId, { annotation_type: "like_dislike" })).id;
  tagsTemplate = (await createTemplate(tenant, project.projectId, { annotation_type: "tags", tags: ["a0", "a1"] })).id;
  await rate(tenant, project.projectId, likeTemplate, traces[0]!, { annotation_type: "like_dislike", value: true });
  const queue = await call("/v2/annotation_queues", { as: tenant, body: { name: { value: `sizes-${crypto.randomUUID()}` } } });
  expect(queue.status).toBe(200);
  queueId = queue.body.id;
  const added = await call(`/v2/annotation_queues/${queueId}/records`, { as: tenant, body: { project_id: project.projectId, run_id: project.runId, record_selector: { type: "record_ids", record_ids: traces } } });
  expect(added.status).toBe(200);
});

function expectAnswered(what: string, answer: { status: number; body: unknown }) {
  expect(answer.status, `${what}: ${JSON.stringify(answer.body).slice(0, 400)}`).toBe(200);
}

describe("filters at the body caps compile on every route", () => {
  for (const [shapeName, shape] of Object.entries(shapes)) {
    it(`${shapeName}, on every kind of leaf: search, count, custom metrics, export, delete dry run`, async () => {
      const base = `/v2/projects/${project.projectId}`;
      for (const [kind, leaf] of Object.entries(leafKinds)) {
        const filter_tree = shape(leaf);
        const what = `${shapeName} of ${kind}`;
        for (const segment of ["traces", "spans"]) {
          expectAnswered(`${what}, ${segment}`, await call(`${base}/${segment}/partial_search`, { as: tenant, body: { log_stream_id: project.runId, filter_tree } }));
        }
        // The same tree as a sort driver's residual, and as `filters` beside the tree.
        expectAnswered(`${what}, sorted`, await call(`${base}/traces/partial_search`, { as: tenant, body: { log_stream_id: project.runId, filter_tree, sort: { column_id: "metrics/toxicity", ascending: false } } }));
        expectAnswered(`${what}, count`, await call(`${base}/traces/count`, { as: tenant, body: { log_stream_id: project.runId, filter_tree } }));
        expectAnswered(
          `${what}, custom_search`,
          await call(`${base}/metrics/custom_search`, {
            as: tenant,
            body: { log_stream_id: project.runId, filter_tree, record_type: "trace", start_time: "2026-10-01T00:00:00Z", end_time: "2026-12-01T00:00:00Z", interval_minutes: 1440, metric_details: [{ id: "n", metric_name: "duration_ns", aggregation: "Count" }] },
          }),
        );
        const exported = await call(`${base}/export_records`, { as: tenant, body: { log_stream_id: project.runId, root_type: "trace", filter_tree } });
        expectAnswered(`${what}, export`, exported);
        expectAnswered(`${what}, delete dry run`, await call(`${base}/traces/delete?dry_run=true`, { as: tenant, body: { log_stream_id: project.runId, filter_tree } }));
      }
    });

    it(`${shapeName}, on every kind of leaf: a queue's search, count, add and remove`, async () => {
      for (const [kind, leaf] of Object.entries(leafKinds)) {
        const filter_tree = shape(leaf);
        const what = `${shapeName} of ${kind}`;
        expectAnswered(`${what}, queue search`, await call(`/v2/annotation_queues/${queueId}/partial_search`, { as: tenant, body: { filter_tree } }));
        const selector = { type: "filter_tree", filter_tree, record_type: "trace" };
        expectAnswered(`${what}, queue count`, await call(`/v2/annotation_queues/${queueId}/records/count`, { as: tenant, body: { record_selector: selector } }));
        expectAnswered(`${what}, queue add`, await call(`/v2/annotation_queues/${queueId}/records`, { as: tenant, body: { project_id: project.projectId, run_id: project.runId, record_selector: selector } }));
        expectAnswered(`${what}, queue remove`, await call(`/v2/annotation_queues/${queueId}/records/remove`, { as: tenant, body: { record_selector: selector } }));
        // Put the records back for the next shape.
        await call(`/v2/annotation_queues/${queueId}/records`, { as: tenant, body: { project_id: project.projectId, run_id: project.runId, record_selector: { type: "record_ids", record_ids: traces } } });
      }
    });
  }

  it("issue 30's search: spans/partial_search with an or of 30 contains leaves answers its matches", async () => {
    const filter_tree = { or: Array.from({ length: 30 }, (_, i) => wrap(contains("input", i))) };
    const answer = await call(`/v2/projects/${project.projectId}/spans/partial_search`, { as: tenant, body: { log_stream_id: project.runId, filter_tree } });
    expectAnswered("or of 30", answer);
    expect(answer.body.records).toEqual([]);
    // On traces, whose inputs hold word0xyz, word1xyz and word2xyz: the three of them.
    const onTraces = await call(`/v2/projects/${project.projectId}/traces/partial_search`, { as: tenant, body: { log_stream_id: project.runId, filter_tree } });
    expectAnswered("or of 30 on traces", onTraces);
    expect(onTraces.body.records.map((record: { id: string }) => record.id).sort()).toEqual([...traces].sort());
  });
});

describe("metrics/custom_search binds annotation columns as partial_search does", () => {
  it("a leaf on a template the project does not have is a 422 at the leaf, not a silent answer", async () => {
    const missing = crypto.randomUUID();
    const answer = await call(`/v2/projects/${project.projectId}/metrics/custom_search`, {
      as: tenant,
      body: {
        log_stream_id: project.runId,
        filter_tree: { filter: { type: "boolean", column_id: `annotations/${missing}`, operator: "eq", value: true } },
        start_time: "2026-10-01T00:00:00Z",
        end_time: "2026-12-01T00:00:00Z",
        interval_minutes: 1440,
        metric_details: [{ id: "n", metric_name: "duration_ns", aggregation: "Count" }],
      },
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(422);
    expect(answer.body.detail[0].msg).toContain("no such annotation template");
  });

  it("fully_annotated counts the records rated on every template of the project", async () => {
    const count = (filter_tree: unknown) => call(`/v2/projects/${project.projectId}/metrics/custom_search`, {
      as: tenant,
      body: {
        log_stream_id: project.runId,
        filter_tree,
        start_time: "2026-10-01T00:00:00Z",
        end_time: "2026-12-01T00:00:00Z",
        interval_minutes: 1440 * 61,
        metric_details: [{ id: "n", metric_name: "is_complete", aggregation: "Count" }],
      },
    });
    const all = await count({ and: [] });
    expect(all.status, JSON.stringify(all.body)).toBe(200);
    expect(all.body.aggregate_metrics).toMatchObject({ n: 3 });
    const answer = await count({ filter: { type: "fully_annotated" } });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    // Two templates, and only trace 0 rated (with one of them): no record is fully annotated.
    expect(answer.body.aggregate_metrics).toMatchObject({ n: 0 });
  });
});
