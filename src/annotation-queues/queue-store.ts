/**
 * Annotation queues in the catalog (docs/annotations.md, "Annotation queues"): the queue row
 * (name unique among the organization's live queues, `next_seq` handing out the "as added"
 * order), its users and their roles, its templates, and the projects it holds records of. Every
 * statement is scoped to the caller's organization: another organization's queue is absent.
 */
import { microsToIso } from "../db/client";
import type { AnnotationType } from "../db/schema";
import type { Principal } from "../http/app-env";
import { ApiError, notFound } from "../http/errors";
import type { AnnotationConstraintsValue } from "../annotations/template-schemas";
import type { TemplateDefinition } from "../annotations/template-store";

export const QUEUE_ROLES = ["owner", "editor", "annotator", "viewer"] as const;
export type QueueRole = (typeof QUEUE_ROLES)[number];

/** Roles whose users may rate in the queue: the queue's annotators (contract section 8). */
export const RATING_ROLES: readonly QueueRole[] = ["owner", "editor", "annotator"];

export interface QueueRow {
  id: string;
  organization_id: string;
  name: string;
  description: string | null;
  created_by: string | null;
  created_at: number;
  updated_at: number;
  /** The caller's role in the queue, if any. */
  role: QueueRole | null;
}

/**
 * What a caller may do in a queue (Galileo's AnnotationQueueAction names, plus `read`): `update`
 * (rename, templates, records), `share` (users and roles), `delete`, `record_annotation` (rate). Organization admins manage every queue of their organization
 * (as owners do) but rate only where they hold a rating role, so that progress counts exactly
 * the queue's annotators.
 */
export type QueueAction = "read" | "record_annotation" | "update" | "share" | "delete";

export function allowed(queue: QueueRow, principal: Principal, action: QueueAction): boolean {
  const role = queue.role;
  const admin = principal.role === "admin";
  switch (action) {
    case "read":
      return admin || role !== null;
    case "record_annotation":
      return role !== null && RATING_ROLES.includes(role);
    case "update":
      return admin || role === "owner" || role === "editor";
    case "share":
    case "delete":
      return admin || role === "owner";
  }
}

export function permissions(queue: QueueRow, principal: Principal) {
  return (["update", "delete", "share", "record_annotation"] as const).map((action) => ({ action, allowed: allowed(queue, principal, action) }));
}

const QUEUE_COLUMNS = `q.id, q.organization_id, q.name, q.description, q.created_by, q.created_at, q.updated_at,
  (SELECT u.role FROM annotation_queue_users AS u WHERE u.queue_id = q.id AND u.user_id = ?3) AS role`;

/** A live queue of the caller's organization, with the caller's role. */
export function queueStatement(db: D1Database, principal: Principal, queueId: string): D1PreparedStatement {
  return db
    .prepare(`SELECT ${QUEUE_COLUMNS} FROM annotation_queues AS q WHERE q.id = ?1 AND q.organization_id = ?2 AND q.deleted_at IS NULL`)
    .bind(queueId, principal.organizationId, principal.userId);
}

/**
 * The queue, if the caller may do `action` in it: another organization's queue (or none) is a
 * 404, a queue of the caller's organization the caller may not act on a 403.
 */
export async function queueFor(db: D1Database, principal: Principal, queueId: string, action: QueueAction): Promise<QueueRow> {
  const queue = await queueStatement(db, principal, queueId).first<QueueRow>();
  if (!queue) throw notFound("Annotation queue");
  if (!allowed(queue, principal, action)) throw new ApiError(403, `Your role in this annotation queue does not allow this (${action})`);
  return queue;
}

/** Queues of the organization the caller may read, by name substring, newest first. */
export function listQueuesStatement(db: D1Database, principal: Principal, nameContains: string | null, limit: number, offset: number): D1PreparedStatement {
  return db
    .prepare(
      `SELECT ${QUEUE_COLUMNS} FROM annotation_queues AS q
       WHERE q.organization_id = ?2 AND q.deleted_at IS NULL
         AND (?4 = 'admin' OR EXISTS (SELECT 1 FROM annotation_queue_users AS u WHERE u.queue_id = q.id AND u.user_id = ?3))
         AND (?5 IS NULL OR instr(lower(q.name), lower(?5)) > 0)
       ORDER BY q.created_at DESC, q.id DESC LIMIT ?6 OFFSET ?7`,
    )
    .bind(null, principal.organizationId, principal.userId, principal.role, nameContains, limit, offset);
}

export function countQueuesStatement(db: D1Database, principal: Principal, nameContains: string | null): D1PreparedStatement {
  return db
    .prepare(
      `SELECT count(*) AS n FROM annotation_queues AS q
       WHERE q.organization_id = ?1 AND q.deleted_at IS NULL
         AND (?3 = 'admin' OR EXISTS (SELECT 1 FROM annotation_queue_users AS u WHERE u.queue_id = q.id AND u.user_id = ?2))
         AND (?4 IS NULL OR instr(lower(q.name), lower(?4)) > 0)`,
    )
    .bind(principal.organizationId, principal.userId, principal.role, nameContains);
}

/** A write refused because the name is taken among the organization's live queues. */
export function isDuplicate(error: unknown, columns: string): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 6 && current; depth++) {
    if (String(current instanceof Error ? current.message : current).includes(columns)) return true;
    current = current instanceof Error ? current.cause : undefined;
  }
  return false;
}
export const QUEUE_NAME_COLUMNS = "annotation_queues.organization_id, annotation_queues.name";
export const QUEUE_TEMPLATE_NAME_COLUMNS = "annotation_queue_templates.queue_id, annotation_queue_templates.name";

// ---- users ----------------------------------------------------------------------------------------

export interface QueueUserRow {
  user_id: string;
  email: string;
  role: QueueRole;
  created_at: number;
}

export function queueUsersStatement(db: D1Database, queueId: string): D1PreparedStatement {
  return db
    .prepare(
      `SELECT qu.user_id, u.email, qu.role, qu.created_at FROM annotation_queue_users AS qu JOIN users AS u ON u.id = qu.user_id
       WHERE qu.queue_id = ?1 ORDER BY qu.created_at, qu.user_id`,
    )
    .bind(queueId);
}

/**
 * Gives users of the organization a role in the queue (replacing their role), by id or by email;
 * RETURNING the users set. A user of another organization, or none, is simply not set.
 */
export function setUsersStatement(db: D1Database, organizationId: string, queueId: string, users: readonly { user_id?: string; user_email?: string; role: QueueRole }[], now: number): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO annotation_queue_users (queue_id, user_id, role, created_at)
       SELECT ?2, u.id, j.value ->> 'role', ?4 FROM json_each(?3) AS j
         JOIN users AS u ON u.organization_id = ?1 AND (u.id = j.value ->> 'user_id' OR lower(u.email) = lower(j.value ->> 'user_email'))
       WHERE true
       ON CONFLICT (queue_id, user_id) DO UPDATE SET role = excluded.role
       RETURNING user_id`,
    )
    .bind(organizationId, queueId, JSON.stringify(users), now);
}

/** The users of the organization among these ids and emails (lower-cased emails). */
export function organizationUsersStatement(db: D1Database, organizationId: string, ids: readonly string[], emails: readonly string[]): D1PreparedStatement {
  return db
    .prepare(
      `SELECT id, lower(email) AS email FROM users WHERE organization_id = ?1
         AND (id IN (SELECT value FROM json_each(?2)) OR lower(email) IN (SELECT lower(value) FROM json_each(?3)))`,
    )
    .bind(organizationId, JSON.stringify(ids), JSON.stringify(emails));
}

// ---- templates ------------------------------------------------------------------------------------

export interface QueueTemplateRow {
  id: string;
  queue_id: string;
  name: string;
  annotation_type: AnnotationType;
  constraints: string;
  include_explanation: number;
  criteria: string | null;
  position: number;
  created_by: string | null;
  created_at: number;
}

const TEMPLATE_COLUMNS = `id, queue_id, name, annotation_type, constraints, include_explanation, criteria, position, created_by, created_at`;

export function queueTemplatesStatement(db: D1Database, queueId: string): D1PreparedStatement {
  return db.prepare(`SELECT ${TEMPLATE_COLUMNS} FROM annotation_queue_templates WHERE queue_id = ?1 AND deleted_at IS NULL ORDER BY position, id`).bind(queueId);
}

export function queueTemplateStatement(db: D1Database, queueId: string, templateId: string): D1PreparedStatement {
  return db.prepare(`SELECT ${TEMPLATE_COLUMNS} FROM annotation_queue_templates WHERE id = ?1 AND queue_id = ?2 AND deleted_at IS NULL`).bind(templateId, queueId);
}

export function definitionOfQueueTemplate(row: QueueTemplateRow): TemplateDefinition {
  return {
    id: row.id,
    name: row.name,
    annotationType: row.annotation_type,
    constraints: JSON.parse(row.constraints) as AnnotationConstraintsValue,
    includeExplanation: row.include_explanation === 1,
  };
}

export function queueTemplateShape(row: QueueTemplateRow, usageCount = 0) {
  return {
    id: row.id,
    name: row.name,
    include_explanation: row.include_explanation === 1,
    criteria: row.criteria,
    constraints: JSON.parse(row.constraints) as AnnotationConstraintsValue,
    position: row.position,
    usage_count: usageCount,
    created_at: microsToIso(row.created_at),
    created_by: row.created_by,
  };
}

// ---- projects ---------------------------------------------------------------------------------------

/** The projects the queue holds records of (its entries are on their shards). */
export function queueProjectsStatement(db: D1Database, queueId: string): D1PreparedStatement {
  return db.prepare("SELECT project_id FROM annotation_queue_projects WHERE queue_id = ?1 ORDER BY project_id").bind(queueId);
}

export async function queueProjects(db: D1Database, queueId: string): Promise<string[]> {
  const { results } = await queueProjectsStatement(db, queueId).all<{ project_id: string }>();
  return results.map((r) => r.project_id);
}

/**
 * Reserves `count` consecutive positions in the queue's "as added" order; answers the first.
 * One atomic UPDATE, so concurrent adds never share a position.
 */
export async function reserveSeq(db: D1Database, queueId: string, count: number): Promise<number> {
  const row = await db
    .prepare("UPDATE annotation_queues SET next_seq = next_seq + ?2 WHERE id = ?1 RETURNING next_seq - ?2 AS first")
    .bind(queueId, count)
    .first<{ first: number }>();
  if (!row) throw notFound("Annotation queue");
  return row.first;
}
