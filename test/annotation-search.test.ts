/**
 * Searching by annotations (contract section 8, "Search and columns"): `annotations/<tid>`
 * columns in available_columns, filter leaves that match when at least one rating satisfies them,
 * in AND / OR / NOT like every leaf, the sort by the aggregate (unrated last), the
 * `fully_annotated` leaf, the 422s of a leaf that does not fit its template, and the indexes the
 * statements use.
 */
import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { bindAnnotationColumns } from "../src/search/bind-annotation-columns";
import { compileSearchQuery } from "../src/search/compile-search-query";
import { normalizeSearchRequest } from "../src/search/normalize-search-request";
import { type AnnotatedProject, createProjectWithRun, createTemplate, ingestTraces, rate } from "./support/annotations";
import { call } from "./support/client";
import { recordsOf } from "./support/record-dbs";
import { type Tenant, addUser, createTenant } from "./support/tenants";

let ann: Tenant;
let bob: Tenant;
let project: AnnotatedProject;
let traces: string[];
const t: Record<string, any> = {};

beforeAll(async () => {
  ann = await createTenant("admin");
  bob = await addUser(ann, "member");
  project = await createProjectWithRun(ann);
  ({ traces } = await ingestTraces(ann, project, 5));
  t.like = await createTemplate(ann, project.projectId, { annotation_type: "like_dislike" });
  t.score = await createTemplate(ann, project.projectId, { annotation_type: "score", min: 1, max: 5 });
  t.tags = await createTemplate(ann, project.projectId, { annotation_type: "tags", tags: ["a", "b"] });
  t.choice = await createTemplate(ann, project.projectId, { annotation_type: "choice", choices: ["x", "y"] });
  const r = (who: Tenant, template: string, trace: number, value: unknown) =>
    rate(who, project.projectId, t[template].id, traces[trace]!, { annotation_type: t[template].constraints.annotation_type, value });
  await r(ann, "like", 0, true);
  await r(bob, "like", 0, false);
  await r(ann, "score", 0, 2);
  await r(ann, "like", 1, false);
  await r(ann, "score", 1, 5);
  await r(bob, "score", 1, 4);
  await r(ann, "tags", 1, ["a"]);
  await r(ann, "like", 2, true);
  await r(ann, "score", 2, 3);
  await r(ann, "tags", 2, ["a", "b"]);
  await r(ann, "choice", 2, "x");
  // traces 3 and 4: no rating.
});

const col = (key: string) => `annotations/${t[key].id}`;

async function search(body: Record<string, unknown>, family = "traces") {
  const answer = await call(`/v2/projects/${project.projectId}/${family}/partial_search`, {
    as: ann,
    body: { log_stream_id: project.runId, select_columns: { column_ids: ["name"] }, ...body },
  });
  return answer;
}

async function matching(filter: unknown): Promise<number[]> {
  const answer = await search({ filter_tree: filter });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body.records.map((rec: { id: string }) => traces.indexOf(rec.id)).sort();
}

describe("searching by annotations", () => {
  it("matches a record when at least one of its ratings satisfies the leaf", async () => {
    const like = (value: boolean) => ({ filter: { type: "boolean", column_id: col("like"), operator: "eq", value } });
    expect(await matching(like(false))).toEqual([0, 1]);
    expect(await matching(like(true))).toEqual([0, 2]);
    expect(await matching({ not: like(true) })).toEqual([1, 3, 4]);
    expect(await matching({ filter: { type: "number", column_id: col("score"), operator: "lt", value: 3 } })).toEqual([0]);
    expect(await matching({ filter: { type: "number", column_id: col("score"), operator: "between", value: [4, 5] } })).toEqual([1]);
    expect(await matching({ filter: { type: "collection", column_id: col("tags"), operator: "contains", value: "b" } })).toEqual([2]);
    expect(await matching({ filter: { type: "collection", column_id: col("tags"), operator: "one_of", value: ["a"] } })).toEqual([1, 2]);
    expect(await matching({ filter: { type: "collection", column_id: col("tags"), operator: "not_in", value: ["b"] } })).toEqual([1]);
    expect(await matching({ filter: { type: "collection", column_id: col("tags"), operator: "eq", value: ["b", "a"] } })).toEqual([2]);
    expect(await matching({ filter: { type: "text", column_id: col("choice"), operator: "eq", value: "x" } })).toEqual([2]);
    expect(await matching({ filter: { type: "text", column_id: col("choice"), operator: "eq", value: "X", case_sensitive: false } })).toEqual([2]);
    expect(await matching({ and: [like(false), { filter: { type: "number", column_id: col("score"), operator: "lt", value: 3 } }] })).toEqual([0]);
    expect(await matching({ or: [like(false), { filter: { type: "text", column_id: col("choice"), operator: "eq", value: "x" } }] })).toEqual([0, 1, 2]);
    const viaFilters = await search({ filters: [{ type: "boolean", column_id: col("like"), operator: "eq", value: false }] });
    expect(viaFilters.body.records).toHaveLength(2);
  });

  it("matches fully annotated records, by anyone or by the users named", async () => {
    expect(await matching({ filter: { type: "fully_annotated" } })).toEqual([2]);
    expect(await matching({ filter: { type: "fully_annotated", user_ids: [ann.userId] } })).toEqual([2]);
    expect(await matching({ filter: { type: "fully_annotated", user_ids: [ann.userId, bob.userId] } })).toEqual([]);
    expect(await matching({ not: { filter: { type: "fully_annotated" } } })).toEqual([0, 1, 3, 4]);
  });

  it("sorts by the aggregate, unrated last in both directions", async () => {
    const order = async (key: string, ascending: boolean) =>
      (await search({ sort: { column_id: col(key), ascending } })).body.records.map((rec: { id: string }) => traces.indexOf(rec.id));
    // Like shares: 0 -> 0.5, 1 -> 0, 2 -> 1; 3 and 4 unrated (by id in the sort's direction).
    const unrated = (ascending: boolean) => [3, 4].sort((a, b) => (traces[a]! < traces[b]! ? -1 : 1) * (ascending ? 1 : -1));
    expect(await order("like", false)).toEqual([2, 0, 1, ...unrated(false)]);
    expect(await order("like", true)).toEqual([1, 0, 2, ...unrated(true)]);
    // Score averages: 0 -> 2, 1 -> 4.5, 2 -> 3.
    expect(await order("score", true)).toEqual([0, 2, 1, ...unrated(true)]);
    // Tags: the number of ratings (1 each on traces 1 and 2): ties broken by id, the rest after.
    const byTags = await order("tags", true);
    expect(byTags.slice(0, 2).sort()).toEqual([1, 2]);
    expect(byTags.slice(2)).toEqual([0, 3, 4].sort((a, b) => (traces[a]! < traces[b]! ? -1 : 1)));
  });

  it("refuses a leaf that does not fit its template, and an unknown template, at the leaf", async () => {
    const misfit = await search({ filters: [{ type: "number", column_id: col("like"), operator: "eq", value: 1 }] });
    expect(misfit.status).toBe(422);
    expect(misfit.body.detail[0]).toMatchObject({ loc: ["body", "filters", 0, "type"], type: "value_error" });
    const unknown = await search({ filter_tree: { and: [{ filter: { type: "boolean", column_id: `annotations/${crypto.randomUUID()}`, value: true } }] } });
    expect(unknown.status).toBe(422);
    expect(unknown.body.detail[0].loc).toEqual(["body", "filter_tree", "and", 0, "filter", "column_id"]);
    const untyped = await search({ filters: [{ column_id: col("like"), value: true }] });
    expect(untyped.status).toBe(422);
    expect(untyped.body.detail[0]).toMatchObject({ loc: ["body", "filters", 0, "type"], type: "missing" });
    const notUuid = await search({ filters: [{ type: "boolean", column_id: "annotations/thumbs", value: true }] });
    expect(notUuid.status).toBe(422);
    const sort = await search({ sort: { column_id: `annotations/${crypto.randomUUID()}` } });
    expect(sort.status).toBe(422);
    expect(sort.body.detail[0].loc).toEqual(["body", "sort", "column_id"]);
  });

  it("counts with annotation leaves too", async () => {
    const answer = await call(`/v2/projects/${project.projectId}/traces/count`, {
      as: ann,
      body: { log_stream_id: project.runId, filters: [{ type: "boolean", column_id: col("like"), operator: "eq", value: true }] },
    });
    expect(answer.status).toBe(200);
    expect(answer.body.total_count).toBe(2);
  });

  it("lists one feedback column per template in available_columns", async () => {
    const answer = await call(`/v2/projects/${project.projectId}/traces/available_columns`, { as: ann, body: { log_stream_id: project.runId } });
    expect(answer.status).toBe(200);
    const feedback = answer.body.columns.filter((c: { category: string }) => c.category === "feedback");
    expect(feedback.map((c: { id: string }) => c.id)).toEqual([col("like"), col("score"), col("tags"), col("choice")]);
    expect(feedback[0]).toMatchObject({
      label: t.like.name,
      group_label: "Annotations",
      data_type: "thumb_rating_aggregate",
      filter_type: "boolean",
      filterable: true,
      sortable: true,
      is_empty: false,
    });
    expect(feedback.map((c: { data_type: string }) => c.data_type)).toEqual(["thumb_rating_aggregate", "score_rating_aggregate", "tags_rating_aggregate", "tags_rating_aggregate"]);
    const spans = await call(`/v2/projects/${project.projectId}/spans/available_columns`, { as: ann, body: { log_stream_id: project.runId } });
    expect(spans.body.columns.filter((c: { category: string }) => c.category === "feedback").every((c: { is_empty: boolean }) => c.is_empty)).toBe(true);
  });

  it("reads ratings through their indexes, never by scanning them", async () => {
    const db = await recordsOf(project.projectId);
    for (const body of [
      { filters: [{ type: "boolean", column_id: col("like"), operator: "eq", value: false }] },
      { filters: [{ type: "collection", column_id: col("tags"), operator: "contains", value: "a" }] },
      { filters: [{ type: "fully_annotated", user_ids: [ann.userId] }] },
      { sort: { column_id: col("score") } },
      { select_columns: { include_all_feedback: true } },
    ]) {
      const query = normalizeSearchRequest({ log_stream_id: project.runId, ...body } as never, "trace", "partial");
      await bindAnnotationColumns(db, project.projectId, query);
      const compiled = compileSearchQuery(query, { organizationId: ann.organizationId, projectId: project.projectId, runId: project.runId, runKind: "log_stream" });
      const plan = await db.prepare(`EXPLAIN QUERY PLAN ${compiled.sql}`).bind(...compiled.params).all<{ detail: string }>();
      const details = plan.results.map((row) => row.detail);
      const scans = details.filter((d) => /^SCAN (la|sa|fa|faa|fat|ft|annotation_ratings|annotation_templates)\b/.test(d) && !/USING/.test(d));
      expect(scans, `${JSON.stringify(body)}\n${details.join("\n")}`).toEqual([]);
    }
  });
});
