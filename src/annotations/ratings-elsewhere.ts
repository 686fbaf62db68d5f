/**
 * A template's ratings on the shards of the project's other partitions (docs/partitions.md,
 * "Annotations"): a rating lives beside its record, in the record's partition, while the
 * template lives on the project's own shard. Its usage_count adds the ratings there, and its
 * deletion purges them there too, in the same bounded chunks as on the project's shard.
 */
import type { Context } from "hono";
import type { AppEnv } from "../http/app-env";
import { onOtherPartitionShards } from "../partitions/read-shards";
import { projectStateStatement, readableHere } from "../shards/shard-membership";
import { ProjectNotOnShardError } from "../shards/project-shard";
import { TEMPLATE_DELETION } from "./template-deletion";
import type { TemplateRow } from "./template-store";

/** Ratings per template: a count over the prefix of annotation_ratings_template_order, per listed id. */
const USAGE_BY_ID = `SELECT j.value AS id, (SELECT count(*) FROM annotation_ratings AS u WHERE u.template_id = j.value) AS n FROM json_each(?1) AS j`;

const DELETE_RATING_CHUNK = `
DELETE FROM annotation_ratings WHERE (record_rid, template_id, annotator_id) IN (
  SELECT record_rid, template_id, annotator_id FROM annotation_ratings WHERE template_id = ?1 AND project_id = ?2 LIMIT ?3)`;

/** Adds to each row's usage_count the template's ratings on the project's other shards (nothing to do on one shard). */
export async function addUsageElsewhere(c: Context<AppEnv>, projectId: string, rows: TemplateRow[]): Promise<void> {
  if (rows.length === 0) return;
  const ids = JSON.stringify(rows.map((row) => row.id));
  const counts = await onOtherPartitionShards(c, projectId, "read", async ({ db }) => {
    const [state, usage] = await db.batch<{ id: string; n: number }>([projectStateStatement(db, projectId), db.prepare(USAGE_BY_ID).bind(ids)]);
    if (!readableHere(state)) throw new ProjectNotOnShardError(projectId);
    return usage?.results ?? [];
  });
  const byId = new Map<string, number>();
  for (const row of counts.flat()) byId.set(row.id, (byId.get(row.id) ?? 0) + row.n);
  for (const row of rows) row.usage_count = (row.usage_count ?? 0) + (byId.get(row.id) ?? 0);
}

/**
 * Removes a deleted template's ratings on the project's other shards, up to `maxChunks` chunks on
 * each (in parallel); answers whether none is left on any. Run before the project's shard's own
 * purge, which removes the template's row once its shard has no rating left: so a template row
 * outlives its ratings elsewhere only when a shard still had more than `maxChunks` chunks.
 */
export async function purgeRatingsElsewhere(c: Context<AppEnv>, projectId: string, templateId: string, maxChunks: number): Promise<boolean> {
  const done = await onOtherPartitionShards(c, projectId, "write", async ({ db }) => {
    for (let chunk = 0; chunk < maxChunks; chunk++) {
      const result = await db.prepare(DELETE_RATING_CHUNK).bind(templateId, projectId, TEMPLATE_DELETION.ratingChunk).run();
      if ((result.meta.changes ?? 0) < TEMPLATE_DELETION.ratingChunk) return true;
    }
    return false;
  });
  return done.every(Boolean);
}
