/**
 * Deleting a template with its ratings in bounded work (contract section 8, "Erasure"). The
 * template is marked deleted at once (`deleted_at`: it leaves every answer, its name is free
 * again, and its ratings stop counting anywhere, since every read joins live templates); its
 * ratings are then removed RATING_CHUNK at a time (D1 advises about 1,000 rows a DELETE), and
 * the row itself goes in the batch that finds none left. The request does up to
 * REQUEST_CHUNKS chunks; what a template with more ratings leaves is finished by the minutely
 * maintenance (src/maintenance/scheduled.ts), MAINTENANCE_CHUNKS a run on each database.
 * Every step is idempotent: a repeated DELETE or a chunk run twice removes nothing more.
 */
import { refuseWhileImportingStatement } from "../ingest/write-guards";

export const TEMPLATE_DELETION = {
  ratingChunk: 1000,
  requestChunks: 20,
  maintenanceChunks: 100,
  maintenanceTemplates: 20,
} as const;

const DELETE_RATING_CHUNK = `
DELETE FROM annotation_ratings WHERE (record_rid, template_id, annotator_id) IN (
  SELECT record_rid, template_id, annotator_id FROM annotation_ratings WHERE template_id = ?1 LIMIT ?2)`;

const DELETE_EMPTY_TEMPLATE = `
DELETE FROM annotation_templates WHERE id = ?1 AND deleted_at IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM annotation_ratings WHERE template_id = ?1)`;

/** Marks a live template of the project deleted; answers whether there was one. */
export async function markTemplateDeleted(db: D1Database, projectId: string, templateId: string, now: number): Promise<boolean> {
  const [, result] = await db.batch([
    // A copy a move is still filling takes no client write (src/ingest/write-guards.ts).
    refuseWhileImportingStatement(db, projectId),
    db.prepare("UPDATE annotation_templates SET deleted_at = ?3, updated_at = ?3 WHERE id = ?1 AND project_id = ?2 AND deleted_at IS NULL").bind(templateId, projectId, now),
  ]);
  return (result?.meta.changes ?? 0) > 0;
}

/**
 * Removes up to `maxChunks` chunks of a deleted template's ratings, and the template once none
 * are left. Answers whether the template is gone, and the chunks (batches) it took.
 */
export async function purgeDeletedTemplate(db: D1Database, templateId: string, maxChunks: number): Promise<{ gone: boolean; chunks: number }> {
  for (let chunk = 1; chunk <= maxChunks; chunk++) {
    const [ratings, template] = await db.batch([
      db.prepare(DELETE_RATING_CHUNK).bind(templateId, TEMPLATE_DELETION.ratingChunk),
      db.prepare(DELETE_EMPTY_TEMPLATE).bind(templateId),
    ]);
    if ((template?.meta.changes ?? 0) > 0) return { gone: true, chunks: chunk };
    if ((ratings?.meta.changes ?? 0) === 0) {
      // Nothing deleted and the row stayed: it is gone already, or not marked deleted.
      const left = await db.prepare("SELECT 1 FROM annotation_templates WHERE id = ?1").bind(templateId).first();
      return { gone: left === null, chunks: chunk };
    }
  }
  return { gone: false, chunks: maxChunks };
}

/** The maintenance's share: finishes the deletions of templates a request left unfinished. */
export async function purgeDeletedTemplates(db: D1Database): Promise<{ templates: number; complete: boolean }> {
  const { results } = await db
    .prepare("SELECT id FROM annotation_templates WHERE deleted_at IS NOT NULL ORDER BY deleted_at LIMIT ?1")
    .bind(TEMPLATE_DELETION.maintenanceTemplates)
    .all<{ id: string }>();
  let budget: number = TEMPLATE_DELETION.maintenanceChunks;
  let finished = 0;
  for (const { id } of results) {
    if (budget <= 0) break;
    const outcome = await purgeDeletedTemplate(db, id, budget);
    budget -= outcome.chunks;
    if (outcome.gone) finished += 1;
  }
  return { templates: finished, complete: finished === results.length && results.length < TEMPLATE_DELETION.maintenanceTemplates };
}
