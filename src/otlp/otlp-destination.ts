/**
 * Where an export request's spans go, from its headers (the names Galileo's OpenTelemetry
 * endpoint reads): `project` (a project's name, or its id), and `logstream` (a log stream's name)
 * or `experimentid` (an experiment's id). Defaults: project `default`, log stream `default`, as
 * the `galileo` SDK's. A project or log stream named and missing is created; an id must exist.
 *
 * Resolving costs a few D1 round trips (more when it creates the project, which is placed on a
 * data shard); its answer is kept in the isolate for a few minutes, so a steady exporter pays it
 * once in a while, not on every request.
 */
import { z } from "@hono/zod-openapi";
import type { Env } from "../env";
import type { Principal } from "../http/app-env";
import { ensureNamedRun, type RunByName } from "../projects/ensure-named-run";
import type { RunWithProject } from "../projects/run-access";
import { OtlpError } from "./otlp-errors";

export const DEFAULT_PROJECT = "default";
export const DEFAULT_LOG_STREAM = "default";

const isUuid = (value: string) => z.guid().safeParse(value).success;

/** Names as `POST /projects` and `POST /projects/{id}/log_streams` take them. */
function checkName(header: string, value: string): string {
  if (value.length < 1 || value.length > 256) throw new OtlpError(400, `header ${header}: a name of 1 to 256 characters is required`);
  return value;
}

export function destinationOf(header: (name: string) => string | undefined): RunByName {
  const project = header("project")?.trim() || DEFAULT_PROJECT;
  const logStream = header("logstream")?.trim();
  const experiment = header("experimentid")?.trim();
  if (logStream && experiment) throw new OtlpError(400, "send either the logstream header or the experimentid header, not both");
  if (experiment && !isUuid(experiment)) throw new OtlpError(400, "header experimentid: an experiment id (UUID) is required");
  // A UUID names a project by id (it must exist); anything else is a name (created if missing).
  const projectId = isUuid(project) ? project.toLowerCase() : null;
  return {
    projectId,
    projectName: projectId ? "" : checkName("project", project),
    experimentId: experiment ? experiment.toLowerCase() : null,
    logStreamName: checkName("logstream", logStream || DEFAULT_LOG_STREAM),
  };
}

const CACHE_TTL_MS = 5 * 60_000;
const CACHE_MAX_ENTRIES = 10_000;
const resolved = new Map<string, { run: RunWithProject; expiresAt: number }>();

export async function resolveDestination(env: Env, principal: Principal, target: RunByName): Promise<RunWithProject> {
  const key = JSON.stringify([principal.organizationId, target.projectId, target.projectName, target.experimentId, target.logStreamName]);
  const hit = resolved.get(key);
  if (hit && hit.expiresAt > Date.now()) return hit.run;
  const run = await ensureNamedRun(env, principal, target);
  if (resolved.size >= CACHE_MAX_ENTRIES) resolved.clear();
  resolved.set(key, { run, expiresAt: Date.now() + CACHE_TTL_MS });
  return run;
}
