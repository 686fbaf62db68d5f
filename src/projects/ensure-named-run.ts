/**
 * A project and a run found by name, or created when missing, in one D1 round trip: what the
 * `galileo` SDK does with two or three calls (look the project up, create it, create the log
 * stream), for clients that name where their records go instead of creating it first (the
 * OpenTelemetry intake's `project` and `logstream` headers). Creation is idempotent under
 * concurrent requests, as `POST /projects` and `POST /projects/{id}/log_streams` are: a unique
 * index plus insert-or-ignore, then a read of whatever row won.
 */
import type { Principal } from "../http/app-env";
import { notFound } from "../http/errors";
import type { RunWithProject } from "./run-access";

const INSERT_PROJECT = `
INSERT INTO projects (id, organization_id, name, type, created_by, created_at, updated_at)
VALUES (?1, ?2, ?3, 'gen_ai', ?4, ?5, ?5)
ON CONFLICT (organization_id, name) DO NOTHING`;

/** The project named by ?2 (id) or ?3 (name) in organization ?1. */
const PROJECT_MATCH = "p.organization_id = ?1 AND (p.id = ?2 OR (?2 IS NULL AND p.name = ?3))";

const INSERT_LOG_STREAM = `
INSERT INTO runs (id, organization_id, project_id, kind, name, task_type, created_by, created_at, updated_at)
SELECT ?4, ?1, p.id, 'log_stream', ?5, NULL, ?6, ?7, ?7 FROM projects AS p WHERE ${PROJECT_MATCH}
ON CONFLICT (project_id, kind, name) DO NOTHING`;

const SELECT_RUN = `
SELECT p.id AS projectId, p.name AS projectName, r.id AS runId, r.kind AS kind
FROM projects AS p LEFT JOIN runs AS r
  ON r.project_id = p.id AND ((?4 IS NOT NULL AND r.id = ?4 AND r.kind = 'experiment') OR (?4 IS NULL AND r.kind = 'log_stream' AND r.name = ?5))
WHERE ${PROJECT_MATCH}
LIMIT 1`;

export interface RunByName {
  /** The project's id, when the client gave one (it must exist: ids are never created). */
  projectId: string | null;
  /** The project's name, created when missing (ignored when projectId is given). */
  projectName: string;
  /** An experiment of the project, by id (it must exist), or else a log stream by name (created when missing). */
  experimentId: string | null;
  logStreamName: string;
}

/**
 * The run `target` names, in the caller's organization, creating the project (by name) and the
 * log stream when missing. An unknown project id or experiment id is a 404.
 */
export async function ensureNamedRun(d1: D1Database, principal: Principal, target: RunByName, nowMicros: number): Promise<RunWithProject> {
  const org = principal.organizationId;
  const statements: D1PreparedStatement[] = [];
  if (target.projectId === null) {
    statements.push(d1.prepare(INSERT_PROJECT).bind(crypto.randomUUID(), org, target.projectName, principal.userId, nowMicros));
  }
  if (target.experimentId === null) {
    statements.push(
      d1.prepare(INSERT_LOG_STREAM).bind(org, target.projectId, target.projectName, crypto.randomUUID(), target.logStreamName, principal.userId, nowMicros),
    );
  }
  statements.push(d1.prepare(SELECT_RUN).bind(org, target.projectId, target.projectName, target.experimentId, target.logStreamName));
  const results = await d1.batch(statements);
  const row = results[results.length - 1]!.results[0] as
    | { projectId: string; projectName: string; runId: string | null; kind: RunWithProject["kind"] | null }
    | undefined;
  if (!row) throw notFound("Project");
  if (row.runId === null || row.kind === null) throw notFound("Experiment");
  return { projectId: row.projectId, projectName: row.projectName, runId: row.runId, kind: row.kind };
}
