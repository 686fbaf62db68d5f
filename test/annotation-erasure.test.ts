/**
 * Annotations follow their records out (contract section 8, "Erasure"): a deletion takes a
 * record's ratings in its own chunks; deleting a template with many ratings is bounded work,
 * finished by the maintenance; a move carries templates and ratings, including ratings given
 * while the project is being copied, and leaves nothing behind.
 */
import { describe, expect, it } from "vitest";
import { purgeDeletedTemplates, TEMPLATE_DELETION } from "../src/annotations/template-deletion";
import { clearProjectRoutes } from "../src/shards/project-routing";
import { createProjectWithRun, createTemplate, ingestTraces, rate, ratingPath } from "./support/annotations";
import { call } from "./support/client";
import { recordsOf } from "./support/record-dbs";
import { dbOf, otherShard, requestMove, shardOf, stepUntil } from "./support/moves";
import { createTenant } from "./support/tenants";

const ratingCount = async (db: D1Database, projectId: string) =>
  (await db.prepare("SELECT count(*) AS n FROM annotation_ratings WHERE project_id = ?").bind(projectId).first<{ n: number }>())!.n;

describe("erasure", () => {
  it("a deletion by metadata takes the deleted records' ratings, and only theirs", async () => {
    const admin = await createTenant("admin");
    const project = await createProjectWithRun(admin);
    const { traces, spans } = await ingestTraces(admin, project, 2, (i) => ({ user_metadata: { doomed: i === 0 ? "yes" : "no" } }));
    const like = await createTemplate(admin, project.projectId, { annotation_type: "like_dislike" });
    for (const id of [traces[0]!, spans[0]!, traces[1]!]) await rate(admin, project.projectId, like.id, id, { annotation_type: "like_dislike", value: true });
    const db = await recordsOf(project.projectId);
    expect(await ratingCount(db, project.projectId)).toBe(3);
    const job = await call("/v2/org-jobs/delete-by-metadata?immediate=true", { as: admin, body: { metadata_key: "doomed", metadata_value: "yes" } });
    expect(job.status).toBe(200);
    // The trace and its span went, with their ratings; the other trace keeps its own.
    expect(await ratingCount(db, project.projectId)).toBe(1);
    expect((await call(`/v2/projects/${project.projectId}/annotation/templates/${like.id}`, { as: admin })).body.usage_count).toBe(1);
    expect((await call(ratingPath(project.projectId, like.id, traces[1]!), { as: admin })).status).toBe(200);
  });

  it("deleting a template with more ratings than a request removes is finished by the maintenance", async () => {
    const admin = await createTenant("admin");
    const project = await createProjectWithRun(admin);
    const { traces } = await ingestTraces(admin, project, 1);
    const star = await createTemplate(admin, project.projectId, { annotation_type: "star" });
    const kept = await createTemplate(admin, project.projectId, { annotation_type: "star" });
    await rate(admin, project.projectId, kept.id, traces[0]!, { annotation_type: "star", value: 4 });
    const db = await recordsOf(project.projectId);
    const many = TEMPLATE_DELETION.ratingChunk * TEMPLATE_DELETION.requestChunks + 2_500;
    // As many annotators' ratings as a request cannot remove (written directly: 22,500 PUTs would be slow).
    await db
      .prepare(
        `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?3)
         INSERT INTO annotation_ratings (record_rid, template_id, annotator_id, project_id, record_id, family_key, record_created_at, value, num_value, explanation, created_at, updated_at)
         SELECT r.rid, ?2, 'annotator-' || i, r.project_id, r.id, r.family_key, r.created_at, '3', 3, NULL, 1, 1 FROM n, records AS r WHERE r.project_id = ?1 AND r.id = ?4`,
      )
      .bind(project.projectId, star.id, many, traces[0])
      .run();
    expect((await call(`/v2/projects/${project.projectId}/annotation/templates/${star.id}`, { as: admin })).body.usage_count).toBe(many);
    const deleted = await call(`/v2/projects/${project.projectId}/annotation/templates/${star.id}`, { as: admin, method: "DELETE" });
    expect(deleted.status).toBe(200);
    expect(deleted.body.message).toContain("background");
    // Gone from every answer at once, its ratings included.
    expect((await call(`/v2/projects/${project.projectId}/annotation/templates/${star.id}`, { as: admin })).status).toBe(404);
    const record = await call(`/v2/projects/${project.projectId}/traces/${traces[0]}`, { as: admin });
    expect(Object.keys(record.body.annotations)).toEqual([kept.id]);
    const left = async () => (await db.prepare("SELECT count(*) AS n FROM annotation_ratings WHERE template_id = ?").bind(star.id).first<{ n: number }>())!.n;
    expect(await left()).toBe(2_500);
    const outcome = await purgeDeletedTemplates(db);
    expect(outcome.templates).toBeGreaterThanOrEqual(1);
    expect(await left()).toBe(0);
    expect(await db.prepare("SELECT count(*) AS n FROM annotation_templates WHERE id = ?").bind(star.id).first()).toEqual({ n: 0 });
    expect(await ratingCount(db, project.projectId)).toBe(1);
  });

  it("a move carries templates and ratings, those given during the copy too, and leaves none behind", async () => {
    const admin = await createTenant("admin");
    const project = await createProjectWithRun(admin);
    const { traces } = await ingestTraces(admin, project, 3);
    const like = await createTemplate(admin, project.projectId, { annotation_type: "like_dislike" });
    const score = await createTemplate(admin, project.projectId, { annotation_type: "score", min: 0, max: 3 });
    await rate(admin, project.projectId, like.id, traces[0]!, { annotation_type: "like_dislike", value: true }, "fine");
    await rate(admin, project.projectId, score.id, traces[1]!, { annotation_type: "score", value: 2 });
    const source = await shardOf(project.projectId);
    const target = otherShard(source);
    const moveId = await requestMove(project.projectId, target);
    await stepUntil(moveId, (m) => m.phase === "catching_up");
    // While the source is exporting: a new rating, a changed one, a new template.
    await rate(admin, project.projectId, like.id, traces[2]!, { annotation_type: "like_dislike", value: false });
    await rate(admin, project.projectId, score.id, traces[1]!, { annotation_type: "score", value: 3 });
    const late = await createTemplate(admin, project.projectId, { annotation_type: "text" });
    await rate(admin, project.projectId, late.id, traces[0]!, { annotation_type: "text", value: "late" });
    const done = await stepUntil(moveId);
    expect(done.phase).toBe("completed");
    clearProjectRoutes();
    expect(await shardOf(project.projectId)).toBe(target);
    expect(await ratingCount(dbOf(target), project.projectId)).toBe(4);
    expect(await ratingCount(dbOf(source), project.projectId)).toBe(0);
    expect(await dbOf(source).prepare("SELECT count(*) AS n FROM annotation_templates WHERE project_id = ?").bind(project.projectId).first()).toEqual({ n: 0 });
    const templates = await call(`/v2/projects/${project.projectId}/annotation/templates`, { as: admin });
    expect(templates.body.map((t: { id: string; usage_count: number }) => [t.id, t.usage_count])).toEqual([
      [like.id, 2],
      [score.id, 1],
      [late.id, 1],
    ]);
    const record = await call(`/v2/projects/${project.projectId}/traces/${traces[1]}`, { as: admin });
    expect(record.body.annotations[score.id][admin.userId].value).toBe(3);
    const filtered = await call(`/v2/projects/${project.projectId}/traces/partial_search`, {
      as: admin,
      body: { log_stream_id: project.runId, filters: [{ type: "boolean", column_id: `annotations/${like.id}`, operator: "eq", value: false }] },
    });
    expect(filtered.body.records.map((r: { id: string }) => r.id)).toEqual([traces[2]]);
    expect((await call(ratingPath(project.projectId, like.id, traces[0]!), { as: admin })).body).toMatchObject({ rating: { value: true }, explanation: "fine" });
  });
});
