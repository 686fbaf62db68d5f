/**
 * Creating a project or a run, with what sharding adds (docs/sharding.md): a new project is
 * placed on a data shard (src/shards/placement.ts) and registered there; a new run is copied to
 * its project's shard. Both stay idempotent by name, also under concurrent creates (the galileo
 * SDK races several): the catalog's unique index decides which insert wins, and every caller
 * registers what actually won, which the shard's INSERT OR IGNORE makes harmless to repeat.
 */
import { and, eq, sql } from "drizzle-orm";
import { database, nowMicros } from "../db/client";
import { type RunKind, organizations, projectPartitions, projects, runs } from "../db/schema";
import type { Env } from "../env";
import type { Principal } from "../http/app-env";
import { rememberProjectRow } from "../shards/project-routing";
import { chooseShard } from "../shards/placement";
import { CATALOG_SHARD, shardDatabase } from "../shards/shard-config";
import { copyRunStatement, registerProjectStatement } from "../shards/shard-membership";
import { type PartitionRoute, type PartitionRow, firstPartitionByName, openPartitionOf, rememberPartitionRows } from "../partitions/partition-catalog";
import { registerPartitionStatement } from "../partitions/shard-partitions";

export type ProjectRow = typeof projects.$inferSelect;
export type RunRow = typeof runs.$inferSelect;

const shardOf = (project: ProjectRow) => project.shard ?? CATALOG_SHARD;

const partitionRowOf = (p: typeof projectPartitions.$inferSelect): PartitionRow => ({
  id: p.id,
  project_id: p.projectId,
  seq: p.seq,
  shard: p.shard,
  state: p.state,
  opened_at: p.openedAt,
  closed_at: p.closedAt,
});

/**
 * The project's registration on its shard, with its open partition's (docs/partitions.md: a
 * project always has one open partition, empty at first; the catalog batch that created the
 * project gave it). Idempotent: every creator of the same project (concurrent creates by name)
 * runs it.
 */
async function registerOnShard(env: Env, project: ProjectRow, partitions: readonly PartitionRoute[]): Promise<void> {
  const open = openPartitionOf(partitions);
  const db = shardDatabase(env, open?.shard ?? shardOf(project));
  await db.batch([
    registerProjectStatement(db, { projectId: project.id, organizationId: project.organizationId }),
    ...(open ? [registerPartitionStatement(db, open)] : []),
  ]);
  rememberProjectRow(project);
}

/**
 * The organization's project of this name, created (and placed) if missing. A new project keeps
 * its records `retentionDays` days; undefined: the organization's default (null: for ever). An
 * existing project is answered as it is (its retention is changed with PATCH).
 */
export async function ensureProject(env: Env, principal: Principal, name: string, type: string, retentionDays?: number | null): Promise<ProjectRow> {
  const db = database(env.DB);
  const byName = () => db.select().from(projects).where(and(eq(projects.organizationId, principal.organizationId), eq(projects.name, name))).limit(1);
  const [existing] = await byName();
  if (existing) return existing;
  const shard = await chooseShard(env);
  const now = nowMicros();
  const first = firstPartitionByName(principal.organizationId, name);
  const [, rows, , partitionRows] = await db.batch([
    db
      .insert(projects)
      .values({
        id: crypto.randomUUID(),
        organizationId: principal.organizationId,
        name,
        type,
        createdBy: principal.userId,
        createdAt: now,
        updatedAt: now,
        shard,
        retentionDays:
          retentionDays !== undefined
            ? retentionDays
            : sql`(SELECT ${organizations.defaultRetentionDays} FROM ${organizations} WHERE ${organizations.id} = ${principal.organizationId})`,
      })
      .onConflictDoNothing({ target: [projects.organizationId, projects.name] }),
    byName(),
    db.insert(projectPartitions).select(first.ensure).onConflictDoNothing(),
    db.select().from(projectPartitions).where(sql`${projectPartitions.projectId} = ${first.project}`).orderBy(projectPartitions.seq),
  ]);
  const project = rows[0]!;
  await registerOnShard(env, project, rememberPartitionRows(project.id, partitionRows.map(partitionRowOf)));
  return project;
}

/** The project's run of this kind and name, created (and copied to the project's shard) if missing. */
export async function ensureRun(
  env: Env,
  principal: Principal,
  project: ProjectRow,
  run: { kind: RunKind; name: string; taskType: string | null },
): Promise<RunRow> {
  const db = database(env.DB);
  const now = nowMicros();
  const [, rows] = await db.batch([
    db
      .insert(runs)
      .values({
        id: crypto.randomUUID(),
        organizationId: principal.organizationId,
        projectId: project.id,
        kind: run.kind,
        name: run.name,
        taskType: run.taskType,
        createdBy: principal.userId,
        createdAt: now,
        updatedAt: now,
      })
      .onConflictDoNothing({ target: [runs.projectId, runs.kind, runs.name] }),
    db
      .select()
      .from(runs)
      .where(and(eq(runs.projectId, project.id), eq(runs.kind, run.kind), eq(runs.name, run.name)))
      .limit(1),
  ]);
  const row = rows[0]!;
  const shard = shardDatabase(env, shardOf(project));
  await shard.batch([registerProjectStatement(shard, { projectId: project.id, organizationId: project.organizationId }), copyRunStatement(shard, row)]);
  return row;
}
