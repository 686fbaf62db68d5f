/**
 * What a shard knows of the projects and runs it holds: `shard_projects` (which projects, in what
 * state) and its copy of their `runs` (the catalog's rows, so that a search checks ownership and
 * a record's run in the same database, in the same round trip).
 *
 * Both are written when a project or run is created, and again, idempotently (INSERT OR IGNORE),
 * at the head of every ingest batch: a copy lost to a failure between the catalog's write and
 * the shard's heals with the next write. Rows of shard_projects are never deleted, so a shard
 * that gave a project away (state `gone`) never takes writes for it again.
 */
import { nowMicros } from "../db/client";

/** States in which a shard serves reads of the project. */
export const READABLE_STATES = new Set(["active", "exporting", "frozen"]);

const REGISTER_PROJECT = `INSERT OR IGNORE INTO shard_projects (project_id, organization_id, state, updated_at) VALUES (?1, ?2, 'active', ?3)`;

const COPY_RUN = `
INSERT OR IGNORE INTO runs (id, organization_id, project_id, kind, name, task_type, created_by, created_at, updated_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)`;

export interface RunCopy {
  id: string;
  organizationId: string;
  projectId: string;
  kind: string;
  name: string;
  taskType: string | null;
  createdBy: string | null;
  createdAt: number;
  updatedAt: number;
}

export function registerProjectStatement(db: D1Database, project: { projectId: string; organizationId: string }): D1PreparedStatement {
  return db.prepare(REGISTER_PROJECT).bind(project.projectId, project.organizationId, nowMicros());
}

export function copyRunStatement(db: D1Database, run: RunCopy): D1PreparedStatement {
  return db
    .prepare(COPY_RUN)
    .bind(run.id, run.organizationId, run.projectId, run.kind, run.name, run.taskType, run.createdBy, run.createdAt, run.updatedAt);
}

/** The project's state on this shard: the first statement of a read batch. */
export function projectStateStatement(db: D1Database, projectId: string): D1PreparedStatement {
  return db.prepare("SELECT state FROM shard_projects WHERE project_id = ?1").bind(projectId);
}

/** Whether the state row (from projectStateStatement) lets this shard answer reads of the project. */
export function readableHere(result: D1Result | undefined): boolean {
  const state = (result?.results[0] as { state?: string } | undefined)?.state;
  return state !== undefined && READABLE_STATES.has(state);
}
