/**
 * Annotation templates (contract section 8, "Templates"): the seven types and their constraints,
 * FastAPI-shaped 422s, 409 on a duplicate name, list in position order, rename, reorder, usage
 * counts, deletion, and tenancy (another organization's project or template is a 404).
 */
import { beforeAll, describe, expect, it } from "vitest";
import { createProjectWithRun, createTemplate } from "./support/annotations";
import { call } from "./support/client";
import { type Tenant, addUser, createTenant } from "./support/tenants";

const SEVEN = [
  { annotation_type: "like_dislike" },
  { annotation_type: "star" },
  { annotation_type: "score", min: 1, max: 10 },
  { annotation_type: "tags", tags: ["polite", "wrong"], allow_other: true },
  { annotation_type: "choice", choices: ["good", "bad"] },
  { annotation_type: "tree_choice", choices_tree: [{ id: "a", label: "A", children: [{ id: "a1", label: "A one" }] }, { id: "b", label: "B" }] },
  { annotation_type: "text" },
];

let owner: Tenant;
let projectId: string;
const templatesPath = () => `/v2/projects/${projectId}/annotation/templates`;

beforeAll(async () => {
  owner = await createTenant("admin");
  projectId = (await createProjectWithRun(owner)).projectId;
});

describe("annotation templates", () => {
  it("creates the seven types and lists them in position order", async () => {
    const created = [];
    for (const constraints of SEVEN) created.push(await createTemplate(owner, projectId, constraints, { criteria: "Is it right?" }));
    expect(created.map((t) => t.position)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(created[3]).toMatchObject({
      include_explanation: false,
      criteria: "Is it right?",
      constraints: { annotation_type: "tags", tags: ["polite", "wrong"], allow_other: true },
      usage_count: 0,
      created_by: owner.userId,
    });
    expect(created[4].constraints).toEqual({ annotation_type: "choice", choices: ["good", "bad"], allow_other: false });
    expect(created[5].constraints.choices_tree[1]).toEqual({ id: "b", label: "B", children: [] });
    expect(Date.parse(created[0].created_at)).toBeGreaterThan(0);
    const list = await call(templatesPath(), { as: owner });
    expect(list.status).toBe(200);
    expect(list.body.map((t: { id: string }) => t.id)).toEqual(created.map((t) => t.id));
    const one = await call(`${templatesPath()}/${created[2].id}`, { as: owner });
    expect(one.body).toEqual(created[2]);
  });

  it("refuses bad templates with FastAPI's 422s", async () => {
    const post = (body: unknown) => call(templatesPath(), { as: owner, body });
    const empty = await post({ name: "", constraints: { annotation_type: "star" } });
    expect(empty.status).toBe(422);
    expect(empty.body.detail[0]).toMatchObject({ loc: ["body", "name"], type: "string_too_short" });
    const unknownType = await post({ name: "x", constraints: { annotation_type: "emoji" } });
    expect(unknownType.status).toBe(422);
    expect(unknownType.body.detail[0]).toMatchObject({ loc: ["body", "constraints", "annotation_type"], type: "union_tag_invalid", input: "emoji" });
    const score = await post({ name: "x", constraints: { annotation_type: "score", min: 5, max: 5 } });
    expect(score.status).toBe(422);
    expect(score.body.detail[0]).toMatchObject({ loc: ["body", "constraints", "max"], type: "value_error" });
    const negative = await post({ name: "x", constraints: { annotation_type: "score", min: -1, max: 5 } });
    expect(negative.status).toBe(422);
    const noTags = await post({ name: "x", constraints: { annotation_type: "tags", tags: [] } });
    expect(noTags.status).toBe(422);
    const wide = await post({
      name: "x",
      constraints: { annotation_type: "tree_choice", choices_tree: Array.from({ length: 51 }, (_, i) => ({ id: `n${i}`, label: `N${i}` })) },
    });
    expect(wide.status).toBe(422);
    const missing = await post({ name: "x" });
    expect(missing.body.detail[0]).toMatchObject({ loc: ["body", "constraints"], type: "missing" });
    expect((await call(templatesPath(), { as: owner })).body.some((t: { name: string }) => t.name === "x")).toBe(false);
  });

  it("answers 409 for a duplicate name, and frees the name when the template is deleted", async () => {
    const first = await createTemplate(owner, projectId, { annotation_type: "star" });
    const again = await call(templatesPath(), { as: owner, body: { name: first.name, constraints: { annotation_type: "text" } } });
    expect(again.status).toBe(409);
    const other = await createTemplate(owner, projectId, { annotation_type: "star" });
    const rename = await call(`${templatesPath()}/${other.id}`, { as: owner, method: "PATCH", body: { name: first.name } });
    expect(rename.status).toBe(409);
    expect((await call(`${templatesPath()}/${first.id}`, { as: owner, method: "DELETE" })).status).toBe(200);
    expect((await call(`${templatesPath()}/${first.id}`, { as: owner })).status).toBe(404);
    expect((await call(`${templatesPath()}/${first.id}`, { as: owner, method: "DELETE" })).status).toBe(404);
    const reused = await call(templatesPath(), { as: owner, body: { name: first.name, constraints: { annotation_type: "text" } } });
    expect(reused.status).toBe(200);
  });

  it("renames and changes the criteria, never the type", async () => {
    const template = await createTemplate(owner, projectId, { annotation_type: "choice", choices: ["x", "y"] }, { criteria: "old" });
    const changed = await call(`${templatesPath()}/${template.id}`, { as: owner, method: "PATCH", body: { name: `renamed ${template.id}`, criteria: null } });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ name: `renamed ${template.id}`, criteria: null, constraints: template.constraints, position: template.position });
    const nameOnly = await call(`${templatesPath()}/${template.id}`, { as: owner, method: "PATCH", body: { criteria: "new" } });
    expect(nameOnly.body).toMatchObject({ name: `renamed ${template.id}`, criteria: "new" });
  });

  it("reorders, and refuses an ordering that is not every template once", async () => {
    const { projectId: fresh } = await createProjectWithRun(owner);
    const a = await createTemplate(owner, fresh, { annotation_type: "star" });
    const b = await createTemplate(owner, fresh, { annotation_type: "text" });
    const c = await createTemplate(owner, fresh, { annotation_type: "like_dislike" });
    const path = `/v2/projects/${fresh}/annotation/templates/reorder`;
    const reordered = await call(path, { as: owner, body: { ordering: [c.id, a.id, b.id] } });
    expect(reordered.body).not.toHaveProperty("detail");
    expect(reordered.status).toBe(200);
    expect(reordered.body.map((t: { id: string; position: number }) => [t.id, t.position])).toEqual([
      [c.id, 0],
      [a.id, 1],
      [b.id, 2],
    ]);
    for (const ordering of [[c.id, a.id], [c.id, a.id, b.id, crypto.randomUUID()], [c.id, a.id, a.id]]) {
      const refused = await call(path, { as: owner, body: { ordering } });
      expect(refused.status).toBe(422);
      expect(refused.body.detail[0].loc).toEqual(["body", "ordering"]);
    }
    const list = await call(`/v2/projects/${fresh}/annotation/templates`, { as: owner });
    expect(list.body.map((t: { id: string }) => t.id)).toEqual([c.id, a.id, b.id]);
  });

  it("lets any member of the organization manage templates", async () => {
    const member = await addUser(owner, "member");
    const template = await createTemplate(member, projectId, { annotation_type: "star" });
    expect(template.created_by).toBe(member.userId);
  });

  it("hides another organization's project and template (404)", async () => {
    const stranger = await createTenant("admin");
    const template = await createTemplate(owner, projectId, { annotation_type: "star" });
    expect((await call(templatesPath(), { as: stranger })).status).toBe(404);
    expect((await call(templatesPath(), { as: stranger, body: { name: "mine", constraints: { annotation_type: "star" } } })).status).toBe(404);
    expect((await call(`${templatesPath()}/${template.id}`, { as: stranger, method: "DELETE" })).status).toBe(404);
    // Their own project does not reach our template either.
    const theirs = await createProjectWithRun(stranger);
    const path = `/v2/projects/${theirs.projectId}/annotation/templates/${template.id}`;
    expect((await call(path, { as: stranger })).status).toBe(404);
    expect((await call(path, { as: stranger, method: "PATCH", body: { name: "taken" } })).status).toBe(404);
    expect((await call(path, { as: stranger, method: "DELETE" })).status).toBe(404);
    expect((await call(`${templatesPath()}/${template.id}`, { as: owner })).body.name).toBe(template.name);
  });

  it("answers 422 for a malformed template id", async () => {
    const answer = await call(`${templatesPath()}/not-a-uuid`, { as: owner });
    expect(answer.status).toBe(422);
    expect(answer.body.detail[0]).toMatchObject({ loc: ["path", "template_id"], type: "uuid_parsing" });
  });
});
