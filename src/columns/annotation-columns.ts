/**
 * One column per live annotation template of the project (contract section 8, "Search and
 * columns"): id `annotations/<template_id>`, labelled with the template's name, category
 * `feedback`. `is_empty` is true when no record of the run's family has a rating with it
 * (annotation_ratings_template_order). Choice and tree_choice templates, whose aggregate counts
 * ratings by value as a tags template's does, say `tags_rating_aggregate`.
 */
import type { AnnotationType } from "../db/schema";
import type { ColumnDescriptor } from "./column-descriptors";
import { type RecordFamily, RECORD_KINDS } from "./standard-columns";

const DATA_TYPE: Record<AnnotationType, string> = {
  like_dislike: "thumb_rating_aggregate",
  star: "star_rating_aggregate",
  score: "score_rating_aggregate",
  tags: "tags_rating_aggregate",
  choice: "tags_rating_aggregate",
  tree_choice: "tags_rating_aggregate",
  text: "text_rating_aggregate",
};

const FILTER_TYPE: Record<AnnotationType, string> = {
  like_dislike: "boolean",
  star: "number",
  score: "number",
  tags: "collection",
  choice: "text",
  tree_choice: "text",
  text: "text",
};

const TEMPLATE_COLUMNS = `
SELECT t.id, t.name, t.annotation_type,
  EXISTS (SELECT 1 FROM annotation_ratings AS a WHERE a.template_id = t.id
    AND a.family_key = (SELECT f.key FROM run_families AS f WHERE f.run_id = ?2 AND f.record_type = ?3)) AS rated
FROM annotation_templates AS t WHERE t.project_id = ?1 AND t.deleted_at IS NULL ORDER BY t.position, t.id`;

export interface TemplateColumnRow {
  id: string;
  name: string;
  annotation_type: AnnotationType;
  rated: number;
}

/**
 * On a shard holding another partition of the project (no templates there): whether a record of
 * the run's family there has a rating with each of the templates listed on the project's shard.
 */
const RATED_ELSEWHERE = `
SELECT j.value AS id, EXISTS (SELECT 1 FROM annotation_ratings AS a WHERE a.template_id = j.value
    AND a.family_key = (SELECT f.key FROM run_families AS f WHERE f.run_id = ?2 AND f.record_type = ?3)) AS rated
FROM json_each(?1) AS j`;

export function ratedElsewhereStatement(db: D1Database, templateIds: readonly string[], runId: string, family: RecordFamily): D1PreparedStatement {
  return db.prepare(RATED_ELSEWHERE).bind(JSON.stringify(templateIds), runId, family);
}

export function templateColumnsStatement(db: D1Database, projectId: string, runId: string, family: RecordFamily): D1PreparedStatement {
  return db.prepare(TEMPLATE_COLUMNS).bind(projectId, runId, family);
}

export function annotationColumnDescriptor(row: TemplateColumnRow): ColumnDescriptor {
  return {
    id: `annotations/${row.id}`,
    label: row.name,
    description: `Ratings with the annotation template '${row.name}' (${row.annotation_type}).`,
    category: "feedback",
    group_label: "Annotations",
    data_type: DATA_TYPE[row.annotation_type],
    filter_type: FILTER_TYPE[row.annotation_type],
    filterable: true,
    sortable: true,
    multi_valued: row.annotation_type === "tags",
    is_optional: true,
    is_empty: row.rated !== 1,
    applicable_types: [...RECORD_KINDS],
  };
}
