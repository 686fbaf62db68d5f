/**
 * Annotation templates on the project's shard (docs/annotations.md, "What is stored where"):
 * the statements that read and write them, and the stored row as the API shows it. A template's
 * `usage_count` is counted from its rating rows when read (annotation_ratings_template_order),
 * never kept as a counter, so it cannot drift under concurrent ratings.
 */
import { microsToIso } from "../db/client";
import type { AnnotationType } from "../db/schema";
import type { AnnotationConstraintsValue, AnnotationTemplate } from "./template-schemas";

export interface TemplateRow {
  id: string;
  project_id: string;
  name: string;
  annotation_type: AnnotationType;
  constraints: string;
  include_explanation: number;
  criteria: string | null;
  position: number;
  created_by: string | null;
  created_at: number;
  usage_count?: number;
}

/** A template as the service reasons about it: its type and constraints parsed. */
export interface TemplateDefinition {
  id: string;
  name: string;
  annotationType: AnnotationType;
  constraints: AnnotationConstraintsValue;
  includeExplanation: boolean;
}

const COLUMNS = `t.id, t.project_id, t.name, t.annotation_type, t.constraints, t.include_explanation, t.criteria, t.position, t.created_by, t.created_at`;
const USAGE = `(SELECT count(*) FROM annotation_ratings AS u WHERE u.template_id = t.id) AS usage_count`;

/** The project's live templates in position order, with their usage counts. */
export function listTemplatesStatement(db: D1Database, projectId: string, withUsage = true): D1PreparedStatement {
  return db
    .prepare(`SELECT ${COLUMNS}${withUsage ? `, ${USAGE}` : ""} FROM annotation_templates AS t WHERE t.project_id = ?1 AND t.deleted_at IS NULL ORDER BY t.position, t.id`)
    .bind(projectId);
}

/** One live template of the project (none: another project's, deleted, or unknown). */
export function templateStatement(db: D1Database, projectId: string, templateId: string, withUsage = true): D1PreparedStatement {
  return db
    .prepare(`SELECT ${COLUMNS}${withUsage ? `, ${USAGE}` : ""} FROM annotation_templates AS t WHERE t.id = ?1 AND t.project_id = ?2 AND t.deleted_at IS NULL`)
    .bind(templateId, projectId);
}

export interface NewTemplate {
  id: string;
  organizationId: string;
  projectId: string;
  name: string;
  constraints: AnnotationConstraintsValue;
  includeExplanation: boolean;
  criteria: string | null;
  createdBy: string;
  now: number;
}

/** Appends the template after the project's last one (position = max + 1). */
export function insertTemplateStatement(db: D1Database, t: NewTemplate): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO annotation_templates (id, organization_id, project_id, name, annotation_type, constraints, include_explanation, criteria, position, created_by, created_at, updated_at)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8,
         coalesce((SELECT max(position) + 1 FROM annotation_templates WHERE project_id = ?3 AND deleted_at IS NULL), 0), ?9, ?10, ?10)`,
    )
    .bind(t.id, t.organizationId, t.projectId, t.name, t.constraints.annotation_type, JSON.stringify(t.constraints), t.includeExplanation ? 1 : 0, t.criteria, t.createdBy, t.now);
}

export function definitionOf(row: TemplateRow): TemplateDefinition {
  return {
    id: row.id,
    name: row.name,
    annotationType: row.annotation_type,
    constraints: JSON.parse(row.constraints) as AnnotationConstraintsValue,
    includeExplanation: row.include_explanation === 1,
  };
}

export function templateShape(row: TemplateRow): AnnotationTemplate {
  return {
    id: row.id,
    name: row.name,
    include_explanation: row.include_explanation === 1,
    criteria: row.criteria,
    constraints: JSON.parse(row.constraints) as AnnotationConstraintsValue,
    position: row.position,
    usage_count: row.usage_count ?? 0,
    created_at: microsToIso(row.created_at),
    created_by: row.created_by,
  };
}

/** A write refused because the name is taken among the project's live templates. */
export function isDuplicateTemplateName(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 6 && current; depth++) {
    if (String(current instanceof Error ? current.message : current).includes("annotation_templates.project_id, annotation_templates.name")) return true;
    current = current instanceof Error ? current.cause : undefined;
  }
  return false;
}
