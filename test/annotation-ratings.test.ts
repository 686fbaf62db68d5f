/**
 * Ratings (contract section 8, "Ratings"): put/get/delete on any record kind, the trace alias, the
 * bulk route, values validated against the template with FastAPI-shaped 422s, usage counts, and
 * tenancy.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { type AnnotatedProject, createProjectWithRun, createTemplate, ingestTraces, rate, ratingPath } from "./support/annotations";
import { call } from "./support/client";
import { type Tenant, addUser, createTenant } from "./support/tenants";

let owner: Tenant;
let colleague: Tenant;
let project: AnnotatedProject;
let traces: string[];
let spans: string[];
let sessionId: string;
const t: Record<string, any> = {};

beforeAll(async () => {
  owner = await createTenant("admin");
  colleague = await addUser(owner, "member");
  project = await createProjectWithRun(owner);
  ({ traces, spans } = await ingestTraces(owner, project, 4));
  const session = await call(`/v2/projects/${project.projectId}/sessions`, { as: owner, body: { log_stream_id: project.runId, name: "conversation" } });
  sessionId = session.body.id;
  t.like = await createTemplate(owner, project.projectId, { annotation_type: "like_dislike" });
  t.star = await createTemplate(owner, project.projectId, { annotation_type: "star" });
  t.score = await createTemplate(owner, project.projectId, { annotation_type: "score", min: 1, max: 10 });
  t.tags = await createTemplate(owner, project.projectId, { annotation_type: "tags", tags: ["polite", "wrong"] });
  t.otherTags = await createTemplate(owner, project.projectId, { annotation_type: "tags", tags: ["polite"], allow_other: true });
  t.choice = await createTemplate(owner, project.projectId, { annotation_type: "choice", choices: ["good", "bad"] });
  t.tree = await createTemplate(owner, project.projectId, { annotation_type: "tree_choice", choices_tree: [{ id: "a", label: "A", children: [{ id: "a1", label: "A one" }] }] });
  t.text = await createTemplate(owner, project.projectId, { annotation_type: "text" }, { include_explanation: true });
});

describe("ratings", () => {
  it("creates, reads, replaces and removes the caller's rating", async () => {
    const path = ratingPath(project.projectId, t.star.id, traces[0]!);
    const first = await call(path, { as: owner, method: "PUT", body: { rating: { annotation_type: "star", value: 4 }, explanation: "close" } });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ rating: { annotation_type: "star", value: 4 }, explanation: "close", created_by: owner.userId });
    const again = await call(path, { as: owner, method: "PUT", body: { rating: { annotation_type: "star", value: 2 } } });
    expect(again.body).toMatchObject({ rating: { value: 2 }, explanation: null, created_at: first.body.created_at });
    expect((await call(path, { as: owner })).body.rating.value).toBe(2);
    // One rating per annotator: the colleague's is their own.
    expect((await call(path, { as: colleague })).status).toBe(404);
    await rate(colleague, project.projectId, t.star.id, traces[0]!, { annotation_type: "star", value: 5 });
    expect((await call(path, { as: colleague })).body.rating.value).toBe(5);
    expect((await call(`/v2/projects/${project.projectId}/annotation/templates/${t.star.id}`, { as: owner })).body.usage_count).toBe(2);
    expect((await call(path, { as: owner, method: "DELETE" })).status).toBe(200);
    expect((await call(path, { as: owner })).status).toBe(404);
    expect((await call(path, { as: owner, method: "DELETE" })).status).toBe(404);
    expect((await call(path, { as: colleague })).body.rating.value).toBe(5);
    expect((await call(`/v2/projects/${project.projectId}/annotation/templates/${t.star.id}`, { as: owner })).body.usage_count).toBe(1);
  });

  it("accepts every type's values on traces, spans and sessions", async () => {
    const cases: [string, unknown, string][] = [
      ["like", true, traces[1]!],
      ["star", 1, spans[1]!],
      ["score", 10, sessionId],
      ["tags", ["wrong", "polite"], traces[1]!],
      ["otherTags", ["invented"], traces[1]!],
      ["choice", "bad", spans[1]!],
      ["tree", "a1", sessionId],
      ["text", "Too long an answer", traces[1]!],
    ];
    for (const [key, value, record] of cases) {
      const answer = await rate(owner, project.projectId, t[key].id, record, { annotation_type: t[key].constraints.annotation_type, value });
      expect(answer.rating.value).toEqual(value);
    }
  });

  it("refuses values that do not fit the template, at body.rating.value", async () => {
    const cases: [string, unknown, string][] = [
      ["like", 1, "bool_type"],
      ["star", 6, "less_than_equal"],
      ["star", 0, "greater_than_equal"],
      ["star", 2.5, "int_type"],
      ["score", 11, "less_than_equal"],
      ["score", 0, "greater_than_equal"],
      ["tags", ["rude"], "value_error"],
      ["tags", [], "too_short"],
      ["tags", "polite", "list_type"],
      ["choice", "meh", "value_error"],
      ["tree", "b", "value_error"],
      ["text", "", "string_too_short"],
      ["text", 3, "string_type"],
    ];
    for (const [key, value, type] of cases) {
      const answer = await call(ratingPath(project.projectId, t[key].id, traces[2]!), {
        as: owner,
        method: "PUT",
        body: { rating: { annotation_type: t[key].constraints.annotation_type, value } },
      });
      expect(answer.status, `${key} ${JSON.stringify(value)}`).toBe(422);
      expect(answer.body.detail[0], `${key} ${JSON.stringify(value)}`).toMatchObject({ loc: ["body", "rating", "value"], type });
    }
    const wrongType = await call(ratingPath(project.projectId, t.star.id, traces[2]!), { as: owner, method: "PUT", body: { rating: { annotation_type: "score", value: 3 } } });
    expect(wrongType.status).toBe(422);
    expect(wrongType.body.detail[0]).toMatchObject({ loc: ["body", "rating", "annotation_type"], type: "literal_error", input: "score" });
    const unknownType = await call(ratingPath(project.projectId, t.star.id, traces[2]!), { as: owner, method: "PUT", body: { rating: { annotation_type: "emoji", value: 3 } } });
    expect(unknownType.status).toBe(422);
    expect(unknownType.body.detail[0].loc).toEqual(["body", "rating", "annotation_type"]);
    expect((await call(ratingPath(project.projectId, t.star.id, traces[2]!), { as: owner })).status).toBe(404);
  });

  it("rates a trace through the traces alias, and only a trace", async () => {
    const tracePath = (id: string) => `/v2/projects/${project.projectId}/annotation/templates/${t.like.id}/traces/${id}/rating`;
    const put = await call(tracePath(traces[3]!), { as: owner, method: "PUT", body: { rating: { annotation_type: "like_dislike", value: false } } });
    expect(put.status).toBe(200);
    expect((await call(ratingPath(project.projectId, t.like.id, traces[3]!), { as: owner })).body.rating.value).toBe(false);
    expect((await call(tracePath(spans[3]!), { as: owner, method: "PUT", body: { rating: { annotation_type: "like_dislike", value: true } } })).status).toBe(404);
    expect((await call(tracePath(traces[3]!), { as: owner, method: "DELETE" })).status).toBe(200);
  });

  it("answers 404 for an unknown record, a deleted template and another organization", async () => {
    const body = { rating: { annotation_type: "like_dislike", value: true } };
    expect((await call(ratingPath(project.projectId, t.like.id, crypto.randomUUID()), { as: owner, method: "PUT", body })).status).toBe(404);
    expect((await call(ratingPath(project.projectId, crypto.randomUUID(), traces[0]!), { as: owner, method: "PUT", body })).status).toBe(404);
    const doomed = await createTemplate(owner, project.projectId, { annotation_type: "like_dislike" });
    await rate(owner, project.projectId, doomed.id, traces[0]!, body.rating);
    expect((await call(`/v2/projects/${project.projectId}/annotation/templates/${doomed.id}`, { as: owner, method: "DELETE" })).status).toBe(200);
    expect((await call(ratingPath(project.projectId, doomed.id, traces[0]!), { as: owner, method: "PUT", body })).status).toBe(404);
    expect((await call(ratingPath(project.projectId, doomed.id, traces[0]!), { as: owner })).status).toBe(404);
    const stranger = await createTenant("admin");
    expect((await call(ratingPath(project.projectId, t.like.id, traces[0]!), { as: stranger, method: "PUT", body })).status).toBe(404);
    const theirs = await createProjectWithRun(stranger);
    // Their project does not reach our template or our records.
    expect((await call(ratingPath(theirs.projectId, t.like.id, traces[0]!), { as: stranger, method: "PUT", body })).status).toBe(404);
    const theirTemplate = await createTemplate(stranger, theirs.projectId, { annotation_type: "like_dislike" });
    expect((await call(ratingPath(theirs.projectId, theirTemplate.id, traces[0]!), { as: stranger, method: "PUT", body })).status).toBe(404);
  });

  it("applies bulk operations per trace, each item on its own", async () => {
    const missing = crypto.randomUUID();
    const answer = await call(`/v2/projects/${project.projectId}/annotation/ratings`, {
      as: colleague,
      body: {
        operations: [
          { operation_type: "create", annotation_template_id: t.choice.id, rating: { annotation_type: "choice", value: "good" }, explanation: "fine" },
          { operation_type: "create", annotation_template_id: t.star.id, rating: { annotation_type: "star", value: 9 } },
          { operation_type: "delete", annotation_template_id: t.like.id },
        ],
        selector: { selector_type: "traces", traces: [traces[2], missing] },
      },
    });
    expect(answer.status).toBe(200);
    expect(answer.body).toHaveLength(6);
    const item = (trace: string, operation: number) => answer.body[(trace === missing ? 3 : 0) + operation];
    expect(item(traces[2]!, 0)).toMatchObject({ selector: "traces", index: 0, trace: traces[2], operation: "create", success: true, message: null });
    expect(item(missing, 0)).toMatchObject({ index: 1, trace: missing, success: false, message: "trace not found" });
    expect(item(traces[2]!, 1)).toMatchObject({ success: false });
    expect(item(traces[2]!, 1).message).toContain("less than or equal to 5");
    expect(item(traces[2]!, 2)).toMatchObject({ operation: "delete", success: false });
    const rated = await call(ratingPath(project.projectId, t.choice.id, traces[2]!), { as: colleague });
    expect(rated.body).toMatchObject({ rating: { value: "good" }, explanation: "fine" });
    const tooMany = await call(`/v2/projects/${project.projectId}/annotation/ratings`, {
      as: colleague,
      body: { operations: [{ operation_type: "delete", annotation_template_id: t.like.id }], selector: { selector_type: "traces", traces: Array.from({ length: 1001 }, () => crypto.randomUUID()) } },
    });
    expect(tooMany.status).toBe(422);
    expect(tooMany.body.detail[0].loc).toEqual(["body", "selector", "traces"]);
  });
});
