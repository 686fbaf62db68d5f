/**
 * Deleting a queue, or one of its templates, in bounded work (contract section 8, "Erasure").
 * The row is marked deleted at once (it leaves every answer; a queue's name is free again); then,
 * on every shard holding records of each project the queue holds records of (the project's own
 * shard and the shards of its other partitions: an entry lives beside its record, on its
 * partition's shard, contract section 13), its entries go ENTRY_CHUNK a statement, and the ratings made with its deleted templates the same way. A request does up to
 * QUEUE_DELETION.requestChunks chunks; the minutely maintenance (src/maintenance/scheduled.ts)
 * finishes what is left, QUEUE_DELETION.maintenanceChunks a run. A queue with 100,000 entries is
 * 100 bounded statements, never one unbounded cascade. Every step is idempotent.
 */
import { yieldToEventLoop } from "../db/yield-to-event-loop";
import type { Env } from "../env";
import { CATALOG_SHARD, shardDatabase } from "../shards/shard-config";
import { ENTRY_CHUNK, purgeEntriesChunkStatement, purgeRatingsChunkStatement } from "./queue-entries";

export const QUEUE_DELETION = { requestChunks: 20, maintenanceChunks: 100, maintenanceQueues: 20 } as const;

interface Pending {
  queueId: string;
  /** The queue itself is deleted (its entries go), or only some of its templates. */
  queueDeleted: boolean;
  templateIds: string[];
}

async function pendingOf(catalog: D1Database, queueId: string): Promise<Pending | undefined> {
  const [queue, templates] = await catalog.batch([
    catalog.prepare("SELECT deleted_at FROM annotation_queues WHERE id = ?1").bind(queueId),
    catalog.prepare("SELECT id, deleted_at FROM annotation_queue_templates WHERE queue_id = ?1").bind(queueId),
  ]);
  const row = queue?.results[0] as { deleted_at: number | null } | undefined;
  if (!row) return undefined;
  const queueDeleted = row.deleted_at !== null;
  // A deleted queue takes the ratings of all its templates; a live one those of its deleted templates.
  const purged = ((templates?.results ?? []) as { id: string; deleted_at: number | null }[]).filter((t) => queueDeleted || t.deleted_at !== null);
  return { queueId, queueDeleted, templateIds: purged.map((t) => t.id) };
}

/**
 * The shards that hold the project's records: its own shard, then those of its other partitions
 * (read afresh from the catalog, not the 4 s cache: a move or roll may have changed them). Empty:
 * no such project. The project is forgotten by the queue only once every one is clean; a purge
 * cut short by its budget starts again from the first (a clean shard costs one empty chunk).
 */
async function shardsOf(env: Env, projectId: string): Promise<string[]> {
  const [project, partitions] = await env.DB.batch<{ shard: string }>([
    env.DB.prepare(`SELECT coalesce(shard, '${CATALOG_SHARD}') AS shard FROM projects WHERE id = ?1`).bind(projectId),
    env.DB.prepare("SELECT DISTINCT shard FROM project_partitions WHERE project_id = ?1 ORDER BY shard").bind(projectId),
  ]);
  const home = project?.results[0]?.shard;
  if (home === undefined) return [];
  const others = (partitions?.results ?? []).map((row) => row.shard).filter((shard) => shard !== home);
  return [...others, home];
}

/**
 * Removes up to `maxChunks` chunks of what the queue's deletion (or its templates' deletions)
 * leaves on the shards; drops the catalog rows once nothing is left. Answers the chunks used and
 * whether everything is gone.
 */
export async function purgeQueue(env: Env, queueId: string, maxChunks: number): Promise<{ chunks: number; done: boolean }> {
  const catalog = env.DB;
  const found = await pendingOf(catalog, queueId);
  if (!found) return { chunks: 0, done: true };
  const pending: Pending = found;
  const { results: projects } = await catalog.prepare("SELECT project_id FROM annotation_queue_projects WHERE queue_id = ?1").bind(queueId).all<{ project_id: string }>();
  let chunks = 0;
  for (const { project_id: projectId } of projects) {
    let projectDone = true;
    for (const shard of await shardsOf(env, projectId)) {
      projectDone = await purgeOnShard(shardDatabase(env, shard), projectId);
      if (!projectDone) break;
    }
    if (!projectDone) return { chunks, done: false };
    if (pending.queueDeleted) {
      await catalog.prepare("DELETE FROM annotation_queue_projects WHERE queue_id = ?1 AND project_id = ?2").bind(queueId, projectId).run();
    }
  }
  /** Up to the chunks left of the budget on one shard; whether nothing of the project is left there. Each chunk is idempotent (a redelivered purge finds less, or nothing). */
  async function purgeOnShard(db: D1Database, projectId: string): Promise<boolean> {
    while (chunks < maxChunks) {
      // Other requests are served between chunks (local D1 answers in this process).
      if (chunks > 0) await yieldToEventLoop();
      chunks += 1;
      const statements = [
        ...(pending.queueDeleted ? [purgeEntriesChunkStatement(db, queueId, projectId, ENTRY_CHUNK)] : []),
        ...(pending.templateIds.length > 0 ? [purgeRatingsChunkStatement(db, projectId, pending.templateIds, ENTRY_CHUNK)] : []),
      ];
      if (statements.length === 0) return true;
      const results = await db.batch(statements);
      if (results.every((result) => (result.meta.changes ?? 0) < ENTRY_CHUNK)) return true;
    }
    return false;
  }
  // Everything the deletions left on the shards is gone: the catalog rows can go.
  if (pending.queueDeleted) {
    await catalog.batch([
      catalog.prepare("DELETE FROM annotation_queue_templates WHERE queue_id = ?1").bind(queueId),
      catalog.prepare("DELETE FROM annotation_queue_users WHERE queue_id = ?1").bind(queueId),
      catalog.prepare("DELETE FROM annotation_queue_projects WHERE queue_id = ?1").bind(queueId),
      catalog.prepare("DELETE FROM annotation_queues WHERE id = ?1 AND deleted_at IS NOT NULL").bind(queueId),
    ]);
  } else if (pending.templateIds.length > 0) {
    await catalog.prepare("DELETE FROM annotation_queue_templates WHERE queue_id = ?1 AND deleted_at IS NOT NULL AND id IN (SELECT value FROM json_each(?2))").bind(queueId, JSON.stringify(pending.templateIds)).run();
  }
  return { chunks, done: true };
}

/** The maintenance's share: queues (and queue templates) whose deletion a request left unfinished. */
export async function purgeDeletedQueues(env: Env): Promise<{ queues: number; complete: boolean }> {
  const { results } = await env.DB.prepare(
    `SELECT id FROM annotation_queues WHERE deleted_at IS NOT NULL
     UNION SELECT queue_id FROM annotation_queue_templates WHERE deleted_at IS NOT NULL LIMIT ?1`,
  )
    .bind(QUEUE_DELETION.maintenanceQueues)
    .all<{ id: string }>();
  let budget: number = QUEUE_DELETION.maintenanceChunks;
  let finished = 0;
  for (const { id } of results) {
    if (budget <= 0) break;
    const outcome = await purgeQueue(env, id, budget);
    budget -= outcome.chunks;
    if (outcome.done) finished += 1;
  }
  return { queues: finished, complete: finished === results.length && results.length < QUEUE_DELETION.maintenanceQueues };
}
