/**
 * Where a project's records live: the catalog's `projects.shard`, cached per isolate so that a
 * request pays no catalog round trip it did not pay before sharding (docs/sharding.md, "Routing").
 *
 * A cached route may be stale after a project moved: that is safe, because the shard itself
 * knows which projects it holds (`shard_projects`). A write to a shard that no longer holds the
 * project is refused by the database (trigger `records_project_on_shard_*`), a read finds the
 * project's state there; either way the caller forgets the route, reads it afresh and tries
 * again (src/shards/project-shard.ts).
 */
import type { projects } from "../db/schema";
import type { Env } from "../env";
import type { Principal } from "../http/app-env";
import { notFound } from "../http/errors";
import { CATALOG_SHARD } from "./shard-config";
import { learnShardSize } from "./shard-sizes";

export interface ProjectRoute {
  projectId: string;
  organizationId: string;
  projectName: string;
  /** The D1 binding that holds the project's records. */
  shard: string;
  /**
   * The project's retention (days, or null): searches add its cut-off to their created_at range
   * (src/retention). Cached with the route, so a change reaches other isolates within
   * ROUTE_TTL_MS (PATCH updates the isolate that served it at once).
   */
  retentionDays: number | null;
}

const ROUTE_TTL_MS = 5 * 60_000;
const MAX_ROUTES = 10_000;
const routes = new Map<string, { route: ProjectRoute; expiresAt: number }>();

const ROUTE_QUERY = `
SELECT p.id AS project_id, p.organization_id, p.name, coalesce(p.shard, '${CATALOG_SHARD}') AS shard, p.retention_days, s.size_bytes
FROM projects AS p LEFT JOIN shards AS s ON s.name = coalesce(p.shard, '${CATALOG_SHARD}')
WHERE p.id = ?1 AND p.organization_id = ?2`;

interface RouteRow {
  project_id: string;
  organization_id: string;
  name: string;
  shard: string;
  retention_days: number | null;
  size_bytes: number | null;
}

/** Caches a route learnt elsewhere (a run lookup that joined the project, a project just placed). */
export function rememberProjectRoute(route: ProjectRoute): ProjectRoute {
  if (routes.size >= MAX_ROUTES) routes.clear();
  routes.set(route.projectId, { route, expiresAt: Date.now() + ROUTE_TTL_MS });
  return route;
}

/** Caches the route of a catalog `projects` row just read or written. */
export function rememberProjectRow(row: typeof projects.$inferSelect): ProjectRoute {
  return rememberProjectRoute({ projectId: row.id, organizationId: row.organizationId, projectName: row.name, shard: row.shard ?? CATALOG_SHARD, retentionDays: row.retentionDays });
}

export function forgetProjectRoute(projectId: string): void {
  routes.delete(projectId);
}

/** The route of a project of the caller's organization; another organization's project, or none, is a 404. */
export async function projectRoute(env: Env, principal: Principal, projectId: string): Promise<ProjectRoute> {
  const hit = routes.get(projectId);
  if (hit && hit.expiresAt > Date.now()) {
    if (hit.route.organizationId !== principal.organizationId) throw notFound("Project");
    return hit.route;
  }
  const row = await env.DB.prepare(ROUTE_QUERY).bind(projectId, principal.organizationId).first<RouteRow>();
  if (!row) throw notFound("Project");
  learnShardSize(row.shard, row.size_bytes);
  return rememberProjectRoute({ projectId: row.project_id, organizationId: row.organization_id, projectName: row.name, shard: row.shard, retentionDays: row.retention_days });
}

/** Forget every route (tests that move projects under the worker). */
export function clearProjectRoutes(): void {
  routes.clear();
}
