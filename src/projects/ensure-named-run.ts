/**
 * A project and a run found by name, or created when missing: what the `galileo` SDK does with
 * two or three calls (look the project up, create it, create the log stream), for clients that
 * name where their records go instead of creating it first (the OpenTelemetry intake's `project`
 * and `logstream` headers). Creation goes through the same path as `POST /projects` and
 * `POST /projects/{id}/log_streams` (create-project.ts): idempotent under concurrent requests,
 * a new project placed on a data shard, a new run copied to it.
 */
import { and, eq } from "drizzle-orm";
import { database } from "../db/client";
import { runs } from "../db/schema";
import type { Env } from "../env";
import type { Principal } from "../http/app-env";
import { notFound } from "../http/errors";
import { rememberProjectRow } from "../shards/project-routing";
import { ensureProject, ensureRun, type ProjectRow, type RunRow } from "./create-project";
import { ownedProjectOrThrow, type RunWithProject } from "./run-access";

export interface RunByName {
  /** The project's id, when the client gave one (it must exist: ids are never created). */
  projectId: string | null;
  /** The project's name, created when missing (ignored when projectId is given). */
  projectName: string;
  /** An experiment of the project, by id (it must exist), or else a log stream by name (created when missing). */
  experimentId: string | null;
  logStreamName: string;
}

async function experimentOf(env: Env, project: ProjectRow, experimentId: string): Promise<RunRow> {
  const [row] = await database(env.DB)
    .select()
    .from(runs)
    .where(and(eq(runs.id, experimentId), eq(runs.projectId, project.id), eq(runs.kind, "experiment")))
    .limit(1);
  if (!row) throw notFound("Experiment");
  return row;
}

/**
 * The run `target` names, in the caller's organization, creating the project (by name) and the
 * log stream when missing. An unknown project id or experiment id is a 404.
 */
export async function ensureNamedRun(env: Env, principal: Principal, target: RunByName): Promise<RunWithProject> {
  const project =
    target.projectId !== null
      ? await ownedProjectOrThrow(database(env.DB), principal, target.projectId)
      : await ensureProject(env, principal, target.projectName, "gen_ai");
  rememberProjectRow(project);
  const run =
    target.experimentId !== null
      ? await experimentOf(env, project, target.experimentId)
      : await ensureRun(env, principal, project, { kind: "log_stream", name: target.logStreamName, taskType: null });
  return { runId: run.id, kind: run.kind, projectId: project.id, projectName: project.name, copy: run };
}
