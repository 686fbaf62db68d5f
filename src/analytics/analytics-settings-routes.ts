/**
 * A project's analytics settings: the `user_metadata` key whose values metrics/search
 * pre-aggregates as groups (docs/analytics.md, "Pre-aggregates"). Grouping by any other key
 * still works, by a scan. The catalog's project_analytics_settings is the source; the project's
 * shard keeps a copy (metric_settings) that its cell refresh reads in its own transaction, and a
 * change marks the project's computed hours for recomputation with the new key (until then
 * those hours are scanned, so answers stay exact).
 */
import { createRoute, z } from "@hono/zod-openapi";
import { adminOnly } from "../auth/authenticate";
import { database, nowMicros } from "../db/client";
import { adminOnlyResponse, commonErrorResponses, ProjectIdParam, tooLargeResponse } from "../http/common-schemas";
import type { Router } from "../http/create-router";
import { ownedProjectOrThrow } from "../projects/run-access";
import { onProjectShard } from "../shards/project-shard";

const AnalyticsSettings = z
  .object({
    metadata_key: z.string().min(1).max(255).nullable().openapi({
      description:
        "The user_metadata key whose values metrics/search pre-aggregates (group_by `user_metadata.<key>` then answers from pre-aggregates, as `name` and `tags` do); null: none.",
      example: "customer",
    }),
  })
  .openapi("AnalyticsSettings");

const getSettings = createRoute({
  method: "get",
  path: "/projects/{project_id}/analytics_settings",
  tags: ["Metrics"],
  summary: "A project's analytics settings",
  request: { params: ProjectIdParam },
  responses: { 200: { content: { "application/json": { schema: AnalyticsSettings } }, description: "The settings" }, ...commonErrorResponses },
});

const putSettings = createRoute({
  method: "put",
  path: "/projects/{project_id}/analytics_settings",
  tags: ["Metrics"],
  summary: "Declare the metadata key metrics are pre-aggregated by",
  description:
    "Sets the `user_metadata` key whose values metrics/search pre-aggregates as groups. Hours computed for another key are recomputed by the next minutely refresh and scanned until then (answers stay exact). Admins only.",
  middleware: [adminOnly] as const,
  request: { params: ProjectIdParam, body: { content: { "application/json": { schema: AnalyticsSettings } }, required: true } },
  responses: {
    200: { content: { "application/json": { schema: AnalyticsSettings } }, description: "The settings, changed" },
    ...adminOnlyResponse,
    ...tooLargeResponse,
    ...commonErrorResponses,
  },
});

/** Marks the hours of the project's runs whose cells were computed for another key. */
const MARK_OTHER_KEY = `INSERT OR IGNORE INTO metric_dirty_hours (run_id, hour)
  SELECT c.run_id, c.hour FROM runs AS ru JOIN metric_cells AS c ON c.run_id = ru.id AND c.grouping = '' WHERE ru.project_id = ?1 AND c.metadata_key IS NOT ?2`;

export function registerAnalyticsSettings(app: Router): void {
  app.openapi(getSettings, async (c) => {
    const { project_id } = c.req.valid("param");
    await ownedProjectOrThrow(database(c.env.DB), c.get("principal"), project_id);
    const row = await c.env.DB.prepare("SELECT metadata_key FROM project_analytics_settings WHERE project_id = ?1").bind(project_id).first<{ metadata_key: string | null }>();
    return c.json({ metadata_key: row?.metadata_key ?? null }, 200);
  });

  app.openapi(putSettings, async (c) => {
    const { project_id } = c.req.valid("param");
    const { metadata_key } = c.req.valid("json");
    await ownedProjectOrThrow(database(c.env.DB), c.get("principal"), project_id);
    await c.env.DB.prepare(
      `INSERT INTO project_analytics_settings (project_id, metadata_key, updated_at) VALUES (?1, ?2, ?3)
       ON CONFLICT (project_id) DO UPDATE SET metadata_key = excluded.metadata_key, updated_at = excluded.updated_at`,
    )
      .bind(project_id, metadata_key, nowMicros())
      .run();
    await onProjectShard(c, project_id, "write", async ({ db }) => {
      await db.batch([
        db
          .prepare("INSERT INTO metric_settings (project_id, metadata_key) VALUES (?1, ?2) ON CONFLICT (project_id) DO UPDATE SET metadata_key = excluded.metadata_key")
          .bind(project_id, metadata_key),
        db.prepare(MARK_OTHER_KEY).bind(project_id, metadata_key),
      ]);
    });
    return c.json({ metadata_key }, 200);
  });
}
