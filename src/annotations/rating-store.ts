/**
 * Rating rows on the project's shard (docs/annotations.md). A rating is written by one upsert
 * keyed by (record, template, annotator) that also requires the record to be the project's and
 * the template to be live, so a retried or concurrent PUT leaves exactly one row, and a rating
 * never outlives its record (ON DELETE CASCADE) or lands on a deleted template.
 */
import { microsToIso } from "../db/client";
import type { CheckedRating } from "./rating-values";

/** `trace` for the trace alias and the bulk route: only a trace of the project is rated there. */
export type RecordFamilyFilter = "trace" | null;

const RECORD_OF_PROJECT = `r.project_id = ?1 AND r.id IN (SELECT value FROM json_each(?4)) AND (?9 IS NULL OR r.record_type = ?9)`;
/**
 * ?10 = 1: the template was found live on the project's own shard in the round trip before (a
 * record in a partition on another shard, where the project's templates are not: docs/partitions.md).
 */
const LIVE_TEMPLATE = `(?10 = 1 OR EXISTS (SELECT 1 FROM annotation_templates AS t WHERE t.id = ?2 AND t.project_id = ?1 AND t.deleted_at IS NULL))`;

const UPSERT = `
INSERT INTO annotation_ratings (record_rid, template_id, annotator_id, project_id, record_id, family_key, record_created_at, value, num_value, explanation, created_at, updated_at)
SELECT r.rid, ?2, ?3, r.project_id, r.id, r.family_key, r.created_at, ?5, ?6, ?7, ?8, ?8
FROM records AS r WHERE ${RECORD_OF_PROJECT} AND ${LIVE_TEMPLATE}
ON CONFLICT (record_rid, template_id, annotator_id) DO UPDATE SET
  value = excluded.value, num_value = excluded.num_value, explanation = excluded.explanation, updated_at = excluded.updated_at
RETURNING record_id`;

const DELETE = `
DELETE FROM annotation_ratings WHERE template_id = ?2 AND annotator_id = ?3
  AND record_rid IN (SELECT r.rid FROM records AS r WHERE ${RECORD_OF_PROJECT})
RETURNING record_id`;

export interface RatingTarget {
  projectId: string;
  templateId: string;
  annotatorId: string;
  recordIds: readonly string[];
  family: RecordFamilyFilter;
  /** The template was found live on the project's own shard (this write or read is on another). */
  templateLiveElsewhere?: boolean;
}

/** Creates or replaces the annotator's rating on each record; RETURNING the ids rated. */
export function upsertRatingsStatement(db: D1Database, target: RatingTarget, rating: CheckedRating, explanation: string | null, now: number): D1PreparedStatement {
  return db
    .prepare(UPSERT)
    .bind(target.projectId, target.templateId, target.annotatorId, JSON.stringify(target.recordIds), rating.json, rating.num, explanation, now, target.family, target.templateLiveElsewhere ? 1 : 0);
}

/** Removes the annotator's rating on each record; RETURNING the ids whose rating went. */
export function deleteRatingsStatement(db: D1Database, target: RatingTarget): D1PreparedStatement {
  return db.prepare(DELETE).bind(target.projectId, target.templateId, target.annotatorId, JSON.stringify(target.recordIds), null, null, null, null, target.family);
}

export interface StoredRating {
  value: string;
  explanation: string | null;
  created_at: number;
  annotator_id: string;
}

/** The annotator's rating of one record with a live template. */
export function ratingStatement(db: D1Database, target: RatingTarget): D1PreparedStatement {
  return db
    .prepare(
      `SELECT a.value, a.explanation, a.created_at, a.annotator_id FROM records AS r
       JOIN annotation_ratings AS a ON a.record_rid = r.rid AND a.template_id = ?2 AND a.annotator_id = ?3
       WHERE ${RECORD_OF_PROJECT} AND ${LIVE_TEMPLATE}`,
    )
    .bind(target.projectId, target.templateId, target.annotatorId, JSON.stringify(target.recordIds), null, null, null, null, target.family, target.templateLiveElsewhere ? 1 : 0);
}

export function ratingShape(annotationType: string, row: StoredRating) {
  return {
    rating: { annotation_type: annotationType, value: JSON.parse(row.value) as unknown },
    explanation: row.explanation,
    created_at: microsToIso(row.created_at),
    created_by: row.annotator_id,
  };
}
