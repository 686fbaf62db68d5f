import { and, eq } from "drizzle-orm";
import type { Database } from "../db/client";
import { projects, runs } from "../db/schema";
import type { Principal } from "../http/app-env";
import { notFound } from "../http/errors";
import { rememberProjectRoute } from "../shards/project-routing";
import { CATALOG_SHARD } from "../shards/shard-config";
import type { RunCopy } from "../shards/shard-membership";
import type { RunSelector } from "./run-selector";

/**
 * The query that proves a run is the caller's: its project, its kind and its organization in one
 * indexed primary-key lookup. Kept as a builder so callers can put it in the same `batch` as
 * their own statements (one D1 round trip per request).
 */
export function runOwnershipQuery(db: Database, principal: Principal, projectId: string, selector: RunSelector) {
  return db
    .select({ id: runs.id, projectId: runs.projectId, kind: runs.kind, name: runs.name })
    .from(runs)
    .where(
      and(
        eq(runs.id, selector.runId),
        eq(runs.projectId, projectId),
        eq(runs.kind, selector.kind),
        eq(runs.organizationId, principal.organizationId),
      ),
    )
    .limit(1);
}

export type OwnedRun = Awaited<ReturnType<typeof runOwnershipQuery>>[number];

export function ownedRunOrThrow(rows: OwnedRun[]): OwnedRun {
  const run = rows[0];
  if (!run) throw notFound("Project or run");
  return run;
}

export function projectOwnershipQuery(db: Database, principal: Principal, projectId: string) {
  return db
    .select()
    .from(projects)
    .where(and(eq(projects.id, projectId), eq(projects.organizationId, principal.organizationId)))
    .limit(1);
}

export async function ownedProjectOrThrow(db: Database, principal: Principal, projectId: string) {
  const [project] = await projectOwnershipQuery(db, principal, projectId);
  if (!project) throw notFound("Project");
  return project;
}

export interface RunWithProject {
  runId: string;
  kind: RunSelector["kind"];
  projectId: string;
  projectName: string;
  /** The catalog's row of the run, as the project's shard keeps a copy of it. */
  copy: RunCopy;
}

/**
 * Ownership never changes once a run exists, so a positive answer is cached in the isolate:
 * writers that send many requests to one run (ingestion) pay the lookup once.
 */
const ownedRunCache = new Map<string, RunWithProject>();

export async function ownedRunWithProject(
  db: Database,
  principal: Principal,
  projectId: string,
  selector: RunSelector,
): Promise<RunWithProject> {
  const cacheKey = `${principal.organizationId}/${projectId}/${selector.kind}/${selector.runId}`;
  const hit = ownedRunCache.get(cacheKey);
  if (hit) return hit;
  const [row] = await db
    .select({ run: runs, projectName: projects.name, shard: projects.shard, retentionDays: projects.retentionDays })
    .from(runs)
    .innerJoin(projects, eq(projects.id, runs.projectId))
    .where(
      and(
        eq(runs.id, selector.runId),
        eq(runs.projectId, projectId),
        eq(runs.kind, selector.kind),
        eq(runs.organizationId, principal.organizationId),
      ),
    )
    .limit(1);
  if (!row) throw notFound("Project or run");
  // The project's route comes with it: an ingest that looked its run up pays no second lookup.
  rememberProjectRoute({ projectId, organizationId: principal.organizationId, projectName: row.projectName, shard: row.shard ?? CATALOG_SHARD, retentionDays: row.retentionDays });
  const owned: RunWithProject = { runId: row.run.id, kind: row.run.kind, projectId, projectName: row.projectName, copy: row.run };
  if (ownedRunCache.size > 10_000) ownedRunCache.clear();
  ownedRunCache.set(cacheKey, owned);
  return owned;
}
