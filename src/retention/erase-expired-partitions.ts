/**
 * A closed partition wholly past its project's retention cut-off is erased as a unit (issue 32,
 * item 2; contract section 13; docs/partitions.md, "Erasing a partition"), before the record-by-
 * record expiry looks at the project. Three steps, each idempotent, each resumable from what the
 * previous one left durable:
 *
 * 1. **Found and marked, on its shard, in one statement**: the partition closed before the cut-off
 *    (catalog) and the newest created_at of every record stored in it (late children included:
 *    one seek of `records_project_partition` per range; the first partition's records carry null
 *    or 1) is older than the cut-off. The mark (`shard_partitions.erasing_before`) is the check's
 *    own write, so no record written after the check can have been missed by it.
 * 2. **Dropped from the catalog**: no read or write routes to it any more (reads ask only the
 *    shards holding a listed partition; every one of its records is already hidden by the
 *    retention window of searches, counts, exports and lookups, being older than the cut-off).
 * 3. **Its rows removed from its shard** in chunks of ERASE_CHUNK records by partition_seq, each
 *    a range of the same index; the records' own triggers and cascades take the text index, the
 *    metric cells and roll-ups, the root counts, ratings and queue entries in the same statement.
 *    The chunk that finds nothing left drops the shard's row of the partition, ending it.
 *
 * A run cut short (a crash, the budget) leaves the mark: the next run drops the catalog row if
 * still there and goes on with the chunks. A late child whose root is in a marked partition is
 * written into it by the ingest upsert (its root is there) and goes with it: the record-by-record
 * expiry erases a late span of an expired trace too.
 */
import { yieldToEventLoop } from "../db/yield-to-event-loop";
import type { Env } from "../env";
import { forgetPartitions } from "../partitions/partition-catalog";
import { allRecordDatabases, shardDatabase } from "../shards/shard-config";

/** Records per chunk statement: the size of a deletion chunk (docs/deletion.md, "Budgets"). */
export const ERASE_CHUNK = 500;
/** Chunks per run, over every partition being erased: a bounded share of the cron's time. */
export const ERASE_CHUNKS_PER_RUN = 200;

const MICROS_PER_DAY = 86_400_000_000;

/** Closed partitions of projects with a retention that closed before their project's cut-off (?1: now, µs). */
const CANDIDATES = `
SELECT pp.project_id, pp.seq, pp.id AS partition_id, pp.shard, ?1 - p.retention_days * ${MICROS_PER_DAY} AS cutoff
FROM project_partitions AS pp CROSS JOIN projects AS p ON p.id = pp.project_id
WHERE pp.state = 'closed' AND p.retention_days IS NOT NULL AND pp.closed_at < ?1 - p.retention_days * ${MICROS_PER_DAY}`;

/** The newest created_at of the partition's records on this shard (?1 project, ?2 seq): one seek per range. */
const NEWEST = `max(
  coalesce((SELECT max(created_at) FROM records WHERE project_id = ?1 AND partition_seq = ?2), -9223372036854775807),
  CASE WHEN ?2 = 1 THEN coalesce((SELECT max(created_at) FROM records WHERE project_id = ?1 AND partition_seq IS NULL), -9223372036854775807)
       ELSE -9223372036854775807 END)`;

/**
 * Step 1: marks the partition (?1 project, ?2 seq, ?3 partition id, ?4 cut-off) when everything
 * in it here is older than the cut-off and the project is active here (not being moved away).
 * A mark already made keeps its cut-off (and the statement then changes nothing).
 */
const MARK = `
INSERT INTO shard_partitions (project_id, seq, partition_id, roots, erasing_before)
SELECT ?1, ?2, ?3, 0, ?4
WHERE ${NEWEST} < ?4
  AND NOT EXISTS (SELECT 1 FROM shard_projects WHERE project_id = ?1 AND state <> 'active')
ON CONFLICT (project_id, seq) DO UPDATE SET erasing_before = excluded.erasing_before WHERE shard_partitions.erasing_before IS NULL`;

const MARKED = `SELECT project_id, seq, partition_id FROM shard_partitions WHERE erasing_before IS NOT NULL`;

/** Step 2: the catalog forgets the partition (only a closed one: an open partition is never erased). */
const DROP = `DELETE FROM project_partitions WHERE id = ?1 AND project_id = ?2 AND state = 'closed'`;

/** Step 3, one chunk: up to ?3 records of the partition (?1 project, ?2 seq) in one range. */
const ERASE_SEQ = `DELETE FROM records WHERE rid IN (SELECT rid FROM records WHERE project_id = ?1 AND partition_seq = ?2 LIMIT ?3)`;
const ERASE_NULL = `DELETE FROM records WHERE rid IN (SELECT rid FROM records WHERE project_id = ?1 AND partition_seq IS NULL LIMIT ?3)`;
const REMOVED = `SELECT changes() AS n`;
/** Ends the partition on this shard once nothing of it is left (in the chunk that removed the last). */
const FORGET = `
DELETE FROM shard_partitions WHERE project_id = ?1 AND seq = ?2 AND erasing_before IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM records WHERE project_id = ?1 AND partition_seq = ?2)
  AND (?2 <> 1 OR NOT EXISTS (SELECT 1 FROM records WHERE project_id = ?1 AND partition_seq IS NULL))`;

export interface PartitionErasureOutcome {
  /** Partitions found wholly past their cut-off and marked in this run. */
  marked: { projectId: string; seq: number; shard: string }[];
  /** Partitions whose erasure ended in this run (nothing of them left anywhere). */
  erased: { projectId: string; seq: number; shard: string }[];
  /** Records removed in this run. */
  records: number;
  /** Nothing marked is left for the next run. */
  complete: boolean;
}

export interface ErasureOptions {
  chunkRecords?: number;
  maxChunks?: number;
  /** Stop after marking (tests: a run cut short between steps 1 and 2). */
  markOnly?: boolean;
}

interface Candidate {
  project_id: string;
  seq: number;
  partition_id: string;
  shard: string;
  cutoff: number;
}

const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** Steps 1 to 3 for every project with a retention (`nowMicros`: the cron's instant). */
export async function eraseExpiredPartitions(env: Env, nowMicros: number, options: ErasureOptions = {}): Promise<PartitionErasureOutcome> {
  const outcome: PartitionErasureOutcome = { marked: [], erased: [], records: 0, complete: true };
  const { results: candidates } = await env.DB.prepare(CANDIDATES).bind(nowMicros).all<Candidate>();
  const byShard = new Map<string, Candidate[]>();
  for (const c of candidates) byShard.set(c.shard, [...(byShard.get(c.shard) ?? []), c]);
  // Step 1, one batch per shard holding candidates; then, on every shard holding a partition
  // marked in any run, steps 2 and 3.
  const shards = new Set<string>([...byShard.keys()]);
  for (const [shard, list] of byShard) {
    try {
      const db = shardDatabase(env, shard);
      const results = await db.batch(list.map((c) => db.prepare(MARK).bind(c.project_id, c.seq, c.partition_id, c.cutoff)));
      results.forEach((r, i) => {
        if ((r.meta.changes ?? 0) > 0) outcome.marked.push({ projectId: list[i]!.project_id, seq: list[i]!.seq, shard });
      });
    } catch (error) {
      console.error(`retention: could not look at ${shard}'s closed partitions: ${message(error)}`);
    }
  }
  if (options.markOnly) return outcome;
  const budget = { chunks: options.maxChunks ?? ERASE_CHUNKS_PER_RUN, used: 0 };
  for (const shard of shardsWithMarks(env, shards)) {
    try {
      await eraseOnShard(env, shard, options.chunkRecords ?? ERASE_CHUNK, budget, outcome);
    } catch (error) {
      outcome.complete = false;
      console.error(`retention: erasing partitions on ${shard} failed: ${message(error)}`);
    }
  }
  return outcome;
}

/** Every record database, those with fresh marks first (a mark from an earlier run may sit on any). */
function shardsWithMarks(env: Env, fresh: ReadonlySet<string>): string[] {
  return [...new Set([...fresh, ...allRecordDatabases(env)])];
}

async function eraseOnShard(env: Env, shard: string, chunkRecords: number, budget: { chunks: number; used: number }, outcome: PartitionErasureOutcome): Promise<void> {
  const db = shardDatabase(env, shard);
  const { results: marked } = await db.prepare(MARKED).all<{ project_id: string; seq: number; partition_id: string }>();
  if (marked.length === 0) return;
  // Step 2 for every marked partition here (idempotent: a run cut short before it, or after it).
  await env.DB.batch(marked.map((m) => env.DB.prepare(DROP).bind(m.partition_id, m.project_id)));
  for (const m of marked) forgetPartitions(m.project_id);
  for (const m of marked) {
    for (;;) {
      if (budget.used >= budget.chunks) {
        outcome.complete = false;
        return;
      }
      if (budget.used > 0) await yieldToEventLoop();
      budget.used += 1;
      // changes() after each DELETE: the records it removed (the batch's meta counts the triggers' rows too).
      const removed = db.prepare(REMOVED);
      const results = await db.batch<{ n: number }>([
        db.prepare(ERASE_SEQ).bind(m.project_id, m.seq, chunkRecords),
        removed,
        ...(m.seq === 1 ? [db.prepare(ERASE_NULL).bind(m.project_id, m.seq, chunkRecords), removed] : []),
        db.prepare(FORGET).bind(m.project_id, m.seq),
        removed,
      ]);
      outcome.records += results.slice(0, -2).reduce((sum, r) => sum + (r.results[0]?.n ?? 0), 0);
      if ((results.at(-1)!.results[0]?.n ?? 0) > 0) {
        outcome.erased.push({ projectId: m.project_id, seq: m.seq, shard });
        break;
      }
    }
  }
}

/** The shard statements, for their query plans (test/partitions-erasure.test.ts). */
export const PARTITION_ERASURE_SQL = { MARK, ERASE_SEQ, ERASE_NULL, FORGET } as const;
