/**
 * Annotation work on the project's shard (templates and ratings live beside the records:
 * docs/annotations.md). Reads start their batch with the project's state there, writes with the
 * project's registration and the refusal of a copy a move is still filling (as ingestion does:
 * src/ingest/write-guards.ts), so a stale route is re-routed by onProjectShard and
 * a write for a project the shard no longer holds is refused by the database
 * (annotation_*_project_on_shard_* triggers) and rolled back.
 */
import type { Context } from "hono";
import type { AppEnv } from "../http/app-env";
import { ProjectNotOnShardError, onProjectShard } from "../shards/project-shard";
import { projectStateStatement, readableHere, registerProjectStatement } from "../shards/shard-membership";
import { refuseWhileImportingStatement } from "../ingest/write-guards";
import { onProjectReadShards, onRecordShardsForWrite, type ShardAnswer } from "../partitions/read-shards";

/** Runs `statements` as one read batch on the project's shard; answers their results. */
export function readOnShard(c: Context<AppEnv>, projectId: string, statements: (db: D1Database) => D1PreparedStatement[]): Promise<D1Result[]> {
  return onProjectShard(c, projectId, "read", async ({ db }) => {
    const [state, ...results] = await db.batch([projectStateStatement(db, projectId), ...statements(db)]);
    if (!readableHere(state)) throw new ProjectNotOnShardError(projectId);
    return results;
  });
}

/**
 * Runs `statements` as one atomic write batch on the project's shard, after the project's
 * registration there; answers their results.
 */
export function writeOnShard(c: Context<AppEnv>, projectId: string, statements: (db: D1Database) => D1PreparedStatement[]): Promise<D1Result[]> {
  const { organizationId } = c.get("principal");
  return onProjectShard(c, projectId, "write", async ({ db }) => {
    const [, , ...results] = await db.batch([registerProjectStatement(db, { projectId, organizationId }), refuseWhileImportingStatement(db, projectId), ...statements(db)]);
    return results;
  });
}

/** Runs `work` with the project's shard session for writes (several dependent steps). */
export function onShardForWrite<T>(c: Context<AppEnv>, projectId: string, work: (db: D1Database) => Promise<T>): Promise<T> {
  return onProjectShard(c, projectId, "write", ({ db }) => work(db));
}

/**
 * Ratings and queue entries live beside their record, on the shard of the record's partition
 * (contract section 13; docs/partitions.md, "Annotations"); templates stay on the project's own
 * shard. This runs `statements(db, true)` as writeOnShard does on the project's shard; then, when
 * the project has partitions on other shards and `elsewhere(results)` names statements (the
 * records or the work the project's shard did not cover), those as one atomic write batch on each
 * other shard, in parallel. Answers the project's shard's results first, then each other shard's.
 */
export async function writeWhereRecordsLive(
  c: Context<AppEnv>,
  projectId: string,
  statements: (db: D1Database) => D1PreparedStatement[],
  elsewhere: (homeResults: D1Result[]) => ((db: D1Database) => D1PreparedStatement[]) | null,
): Promise<D1Result[][]> {
  const { organizationId } = c.get("principal");
  const write = (make: (db: D1Database) => D1PreparedStatement[]) => async ({ db }: { db: D1Database }) => {
    const [, , ...results] = await db.batch([registerProjectStatement(db, { projectId, organizationId }), refuseWhileImportingStatement(db, projectId), ...make(db)]);
    return results;
  };
  const { home, others } = await onRecordShardsForWrite(c, projectId, write(statements), (results) => {
    const more = elsewhere(results);
    return more ? write(more) : null;
  });
  return [home, ...others];
}

/**
 * Runs `statements(db, home)` as one read batch on every shard holding a partition of the project
 * (the project's own shard first, as readOnShard; the others in parallel once it answered).
 */
export function readOnRecordShards(c: Context<AppEnv>, projectId: string, statements: (db: D1Database, home: boolean) => D1PreparedStatement[]): Promise<ShardAnswer<D1Result[]>[]> {
  return onProjectReadShards(c, projectId, async ({ db }, home) => {
    const [state, ...results] = await db.batch([projectStateStatement(db, projectId), ...statements(db, home)]);
    if (!readableHere(state)) throw new ProjectNotOnShardError(projectId);
    return results;
  });
}

/** readOnShard's statements on every shard holding a partition of the project: one result list per shard, the project's shard first. */
export async function readOnEveryShard(c: Context<AppEnv>, projectId: string, statements: (db: D1Database) => D1PreparedStatement[]): Promise<D1Result[][]> {
  return (await readOnRecordShards(c, projectId, (db) => statements(db))).map((a) => a.answer);
}

/**
 * writeOnShard's statements, then (a project with partitions on other shards) the same on each of
 * those, in parallel: for statements that touch only the records a shard holds (a queue's entries
 * added or removed by id), so each record is written once, on its own shard.
 */
export function writeOnEveryShard(c: Context<AppEnv>, projectId: string, statements: (db: D1Database) => D1PreparedStatement[]): Promise<D1Result[][]> {
  return writeWhereRecordsLive(c, projectId, statements, () => statements);
}
