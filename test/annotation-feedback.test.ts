/**
 * The feedback fields on records (contract section 8, "On records"): partial_search with
 * `include_all_feedback`, the full-record `search` routes and the record lookups carry every
 * user's ratings, the five aggregate shapes (wrapped in `aggregate`), the agreement, the caller's
 * own ratings and the queue ids.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { type AnnotatedProject, createProjectWithRun, createTemplate, ingestTraces, rate } from "./support/annotations";
import { call } from "./support/client";
import { type Tenant, addUser, createTenant } from "./support/tenants";

let ann: Tenant;
let bob: Tenant;
let cat: Tenant;
let project: AnnotatedProject;
let traces: string[];
let spans: string[];
const t: Record<string, any> = {};

beforeAll(async () => {
  ann = await createTenant("admin");
  bob = await addUser(ann, "member");
  cat = await addUser(ann, "member");
  project = await createProjectWithRun(ann);
  ({ traces, spans } = await ingestTraces(ann, project, 2));
  t.like = await createTemplate(ann, project.projectId, { annotation_type: "like_dislike" });
  t.star = await createTemplate(ann, project.projectId, { annotation_type: "star" });
  t.score = await createTemplate(ann, project.projectId, { annotation_type: "score", min: 1, max: 10 });
  t.tags = await createTemplate(ann, project.projectId, { annotation_type: "tags", tags: ["a", "b"] });
  t.choice = await createTemplate(ann, project.projectId, { annotation_type: "choice", choices: ["x", "y"] });
  t.text = await createTemplate(ann, project.projectId, { annotation_type: "text" });
  t.unused = await createTemplate(ann, project.projectId, { annotation_type: "star" });
  const trace = traces[0]!;
  await rate(ann, project.projectId, t.like.id, trace, { annotation_type: "like_dislike", value: true }, "good");
  await rate(bob, project.projectId, t.like.id, trace, { annotation_type: "like_dislike", value: true });
  await rate(cat, project.projectId, t.like.id, trace, { annotation_type: "like_dislike", value: false });
  await rate(ann, project.projectId, t.star.id, trace, { annotation_type: "star", value: 5 });
  await rate(bob, project.projectId, t.star.id, trace, { annotation_type: "star", value: 3 });
  await rate(ann, project.projectId, t.score.id, trace, { annotation_type: "score", value: 2 });
  await rate(bob, project.projectId, t.score.id, trace, { annotation_type: "score", value: 9 });
  await rate(ann, project.projectId, t.tags.id, trace, { annotation_type: "tags", value: ["a", "b"] });
  await rate(bob, project.projectId, t.tags.id, trace, { annotation_type: "tags", value: ["b"] });
  await rate(bob, project.projectId, t.choice.id, trace, { annotation_type: "choice", value: "y" });
  await rate(ann, project.projectId, t.text.id, trace, { annotation_type: "text", value: "terse" });
  await rate(bob, project.projectId, t.text.id, trace, { annotation_type: "text", value: "fine" });
  await rate(cat, project.projectId, t.star.id, spans[0]!, { annotation_type: "star", value: 2 });
});

function expectFeedbackOfFirstTrace(record: any, caller: Tenant) {
  expect(record.annotations[t.like.id]).toEqual({
    [ann.userId]: { annotation_type: "like_dislike", value: true, explanation: "good" },
    [bob.userId]: { annotation_type: "like_dislike", value: true, explanation: null },
    [cat.userId]: { annotation_type: "like_dislike", value: false, explanation: null },
  });
  expect(Object.keys(record.annotations).sort()).toEqual([t.like.id, t.star.id, t.score.id, t.tags.id, t.choice.id, t.text.id].sort());
  const aggregates = record.annotation_aggregates;
  expect(aggregates[t.like.id]).toEqual({ aggregate: { annotation_type: "like_dislike", like_count: 2, dislike_count: 1, unrated_count: 0, tie_count: 0 } });
  expect(aggregates[t.star.id]).toEqual({ aggregate: { annotation_type: "star", average: 4, counts: { "1": 0, "2": 0, "3": 1, "4": 0, "5": 1 }, unrated_count: 0 } });
  expect(aggregates[t.score.id]).toEqual({
    aggregate: {
      annotation_type: "score",
      average: 5.5,
      buckets: [
        { min_inclusive: 1, max_exclusive: 3, count: 1 },
        { min_inclusive: 3, max_exclusive: 5, count: 0 },
        { min_inclusive: 5, max_exclusive: 7, count: 0 },
        { min_inclusive: 7, max_exclusive: 9, count: 0 },
        { min_inclusive: 9, max_exclusive: 11, count: 1 },
      ],
      unrated_count: 0,
    },
  });
  expect(aggregates[t.tags.id]).toEqual({ aggregate: { annotation_type: "tags", counts: { a: 1, b: 2 }, unrated_count: 0 } });
  expect(aggregates[t.choice.id]).toEqual({ aggregate: { annotation_type: "choice", counts: { y: 1 }, unrated_count: 0 } });
  expect(aggregates[t.text.id]).toEqual({ aggregate: { annotation_type: "text", count: 2, unrated_count: 0 } });
  expect(aggregates[t.unused.id]).toBeUndefined();
  const agreement = record.annotation_agreement;
  expect(agreement[t.like.id]).toBeCloseTo(1 / 3, 10);
  expect(agreement[t.star.id]).toBe(0);
  expect(agreement[t.score.id]).toBeCloseTo(1 - 7 / 9, 10);
  expect(agreement[t.tags.id]).toBeCloseTo(0.5, 10);
  expect(agreement[t.choice.id]).toBeUndefined();
  expect(agreement[t.text.id]).toBeUndefined();
  expect(record.annotation_queue_ids).toEqual([]);
  const own = caller === ann ? { [t.like.id]: true, [t.star.id]: 5, [t.score.id]: 2, [t.tags.id]: ["a", "b"], [t.text.id]: "terse" } : { [t.like.id]: false };
  expect(Object.fromEntries(Object.entries(record.feedback_rating_info).map(([id, info]: [string, any]) => [id, info.value]))).toEqual(own);
  if (caller === ann) expect(record.feedback_rating_info[t.like.id]).toEqual({ feedback_type: "like_dislike", value: true, explanation: "good" });
}

describe("feedback on records", () => {
  it("partial_search with include_all_feedback carries ratings, aggregates, agreement and the caller's own", async () => {
    for (const caller of [ann, cat]) {
      const answer = await call(`/v2/projects/${project.projectId}/traces/partial_search`, {
        as: caller,
        body: { log_stream_id: project.runId, select_columns: { column_ids: ["name"], include_all_feedback: true }, sort: { column_id: "name", ascending: true } },
      });
      expect(answer.status).toBe(200);
      const record = answer.body.records.find((r: any) => r.id === traces[0]);
      expectFeedbackOfFirstTrace(record, caller);
      const other = answer.body.records.find((r: any) => r.id === traces[1]);
      expect(other).toMatchObject({ annotations: {}, annotation_aggregates: {}, annotation_agreement: {}, feedback_rating_info: {}, annotation_queue_ids: [] });
    }
  });

  it("partial_search without include_all_feedback leaves them out", async () => {
    const answer = await call(`/v2/projects/${project.projectId}/traces/partial_search`, {
      as: ann,
      body: { log_stream_id: project.runId, select_columns: { column_ids: ["name"] } },
    });
    expect(answer.body.records[0]).not.toHaveProperty("feedback_rating_info");
    expect(answer.body.records[0]).not.toHaveProperty("annotation_aggregates");
  });

  it("the full-record search and the record lookups always carry them", async () => {
    const search = await call(`/v2/projects/${project.projectId}/traces/search`, { as: ann, body: { log_stream_id: project.runId } });
    expect(search.status).toBe(200);
    expectFeedbackOfFirstTrace(search.body.records.find((r: any) => r.id === traces[0]), ann);
    const lookup = await call(`/v2/projects/${project.projectId}/traces/${traces[0]}`, { as: ann });
    expect(lookup.status).toBe(200);
    expectFeedbackOfFirstTrace(lookup.body, ann);
    const span = await call(`/v2/projects/${project.projectId}/spans/${spans[0]}`, { as: cat });
    expect(span.body.annotation_aggregates[t.star.id].aggregate).toMatchObject({ average: 2, counts: { "2": 1 } });
    expect(span.body.feedback_rating_info).toEqual({ [t.star.id]: { feedback_type: "star", value: 2, explanation: null } });
  });

  it("a deleted template's ratings leave the records at once", async () => {
    const doomed = await createTemplate(ann, project.projectId, { annotation_type: "like_dislike" });
    await rate(ann, project.projectId, doomed.id, traces[1]!, { annotation_type: "like_dislike", value: true });
    const before = await call(`/v2/projects/${project.projectId}/traces/${traces[1]}`, { as: ann });
    expect(Object.keys(before.body.annotations)).toEqual([doomed.id]);
    await call(`/v2/projects/${project.projectId}/annotation/templates/${doomed.id}`, { as: ann, method: "DELETE" });
    const after = await call(`/v2/projects/${project.projectId}/traces/${traces[1]}`, { as: ann });
    expect(after.body.annotations).toEqual({});
  });
});
