/**
 * The declared analytics metadata key (contract section 9, docs/analytics.md "Pre-aggregates")
 * lives in the catalog, with a copy on the project's shard that the cell refresh reads. A project
 * move must carry that copy: the target's refresh would otherwise compute the project's cells
 * without the key, and every grouped request would scan for ever.
 */
import { describe, expect, it } from "vitest";
import { clearProjectRoutes } from "../src/shards/project-routing";
import { createProjectWithRun } from "./support/annotations";
import { call } from "./support/client";
import { dbOf, otherShard, requestMove, shardOf, stepUntil } from "./support/moves";
import { createTenant } from "./support/tenants";

const keyOn = async (db: D1Database, projectId: string) =>
  (await db.prepare("SELECT metadata_key FROM metric_settings WHERE project_id = ?1").bind(projectId).first<{ metadata_key: string | null }>())?.metadata_key;

describe("a project move", () => {
  it("carries the declared analytics key to the target and leaves none behind", async () => {
    const admin = await createTenant("admin");
    const project = await createProjectWithRun(admin);
    const put = await call(`/v2/projects/${project.projectId}/analytics_settings`, { as: admin, method: "PUT", body: { metadata_key: "customer" } });
    expect(put.status).toBe(200);
    const source = await shardOf(project.projectId);
    const target = otherShard(source);
    expect(await keyOn(dbOf(source), project.projectId)).toBe("customer");

    const moved = await stepUntil(await requestMove(project.projectId, target));
    expect(moved.phase).toBe("completed");
    clearProjectRoutes();
    expect(await keyOn(dbOf(target), project.projectId)).toBe("customer");
    expect(await keyOn(dbOf(source), project.projectId)).toBeUndefined();
    // And the route reads it where the project now lives.
    const got = await call(`/v2/projects/${project.projectId}/analytics_settings`, { as: admin });
    expect(got.body).toEqual({ metadata_key: "customer" });
  });
});
