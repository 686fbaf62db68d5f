/**
 * The safety net of deferred results (issue 34: no evaluator stuck in "pending" without a
 * reason, and none forever). A result left `pending` (the scorer's daily budget spent, the
 * integration's pace, a judge call to retry) carries `due_at`, and a delayed message of the
 * evaluation queue normally scores it then. Messages can be lost (a send that failed after the
 * batch was stored, a queue purged, the 12-hour delay limit of the queue), so the minutely cron
 * sweeps each record database for pending results due more than DUE_GRACE_MS ago:
 *
 * 1. one conditional UPDATE claims at most DUE_PER_DATABASE of them, oldest due first, by moving
 *    their `due_at` DUE_LEASE_MS ahead (two crons running at once never claim the same row, and a
 *    lost `due` message is swept again after the lease);
 * 2. a `due` message per run (organization, project, run, the claimed pairs, the database they
 *    were claimed on: a partition's shard, not necessarily the project's own) goes to the queue;
 * 3. its handler scores the records as after a write (score-records.ts: the run's settings and
 *    scorers of now, the same upserts, so a result stays exactly one per record and scorer
 *    version; the records found on whichever shard holds their partition), then settles the claimed pairs that scoring left untouched (the scorer is no
 *    longer on the run, was deleted, or no longer selects the record) as `not_applicable` with
 *    the reason, instead of sweeping them forever.
 */
import { nowMicros } from "../db/client";
import type { Env, EvaluationMessage } from "../env";
import { allRecordDatabases, shardDatabase } from "../shards/shard-config";
import { resultStatements, type ScoreOutcome } from "./result-writes";
import { projectDatabase, scoreWrittenRecords, type scoreChunk } from "./score-records";
import { sweepIntake } from "./scoring-intake";

/** Pending results claimed per record database and cron run: the sweep's work per minute is bounded. */
export const DUE_PER_DATABASE = 200;
/** How long past due a result waits for its own delayed message before the sweep takes it. */
export const DUE_GRACE_MS = 120_000;
/** How long a claimed result is left to its `due` message before it is swept again. */
export const DUE_LEASE_MS = 15 * 60_000;

type DueMessage = Extract<EvaluationMessage, { kind: "due" }>;

const CLAIM = `
UPDATE evaluation_results SET due_at = ?1
WHERE status = 'pending' AND due_at <= ?2
  AND (project_id, record_id, scorer_id) IN (
    SELECT project_id, record_id, scorer_id FROM evaluation_results WHERE status = 'pending' AND due_at <= ?2 ORDER BY due_at LIMIT ?3)
RETURNING project_id, record_id, scorer_id, run_id`;

/** Claims the due results of one database: what the sweep then sends, grouped by run. */
export async function claimDueResults(db: D1Database, nowMs: number, limit = DUE_PER_DATABASE): Promise<{ project_id: string; record_id: string; scorer_id: string; run_id: string }[]> {
  const rows = await db.prepare(CLAIM).bind((nowMs + DUE_LEASE_MS) * 1000, (nowMs - DUE_GRACE_MS) * 1000, limit).all<{ project_id: string; record_id: string; scorer_id: string; run_id: string }>();
  return rows.results;
}

/**
 * The cron's step: sends again the writes' scoring messages that never came (scoring-intake.ts),
 * then claims each database's due results and queues them, a message per run. A database that
 * fails is logged and left to the next minute; the others go on.
 */
export async function sweepDueResults(env: Env, nowMs: number = Date.now(), limit = DUE_PER_DATABASE): Promise<number> {
  // The writes' markers whose scoring message never came or never finished (scoring-intake.ts).
  await sweepIntake(env, nowMs);
  let claimed = 0;
  for (const shard of allRecordDatabases(env)) {
    try {
      const rows = await claimDueResults(shardDatabase(env, shard), nowMs, limit);
      if (rows.length === 0) continue;
      claimed += rows.length;
      const organizations = await env.DB.prepare("SELECT id, organization_id FROM projects WHERE id IN (SELECT value FROM json_each(?1))")
        .bind(JSON.stringify([...new Set(rows.map((r) => r.project_id))]))
        .all<{ id: string; organization_id: string }>();
      const organizationOf = new Map(organizations.results.map((p) => [p.id, p.organization_id]));
      const byRun = new Map<string, DueMessage>();
      // Real time (not the cron's scheduled time): the handler compares it with the rows' updated_at.
      const claimedAt = nowMicros();
      for (const row of rows) {
        const organizationId = organizationOf.get(row.project_id);
        if (!organizationId) continue; // a project deleted since: its results go with it
        const key = `${row.project_id}\u0000${row.run_id}`;
        const message = byRun.get(key) ?? { kind: "due", organizationId, projectId: row.project_id, runId: row.run_id, pairs: [], claimedAt, shard };
        message.pairs.push([row.record_id, row.scorer_id]);
        byRun.set(key, message);
      }
      const messages = [...byRun.values()].map((body) => ({ body }));
      for (let i = 0; i < messages.length; i += 100) await env.EVALUATION_QUEUE.sendBatch(messages.slice(i, i + 100));
    } catch (error) {
      console.error(`evaluations: could not sweep the due results of ${shard}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return claimed;
}

const UNTOUCHED = `
SELECT er.record_id, er.scorer_id, er.version_id, er.info, coalesce(r.record_type, '') AS record_type
FROM evaluation_results AS er LEFT JOIN records AS r ON r.project_id = er.project_id AND r.id = er.record_id
WHERE er.project_id = ?1 AND (er.record_id, er.scorer_id) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?2))
  AND er.status = 'pending' AND er.updated_at < ?3`;

/** Handles a `due` message: scores the records now, then settles what scoring no longer reaches. */
export async function handleDueMessage(env: Env, message: DueMessage, judge: Parameters<typeof scoreChunk>[3]): Promise<void> {
  // The results sit beside their records, on the shard of their partition, where they were claimed.
  const db = message.shard ? shardDatabase(env, message.shard) : (await projectDatabase(env, message.organizationId, message.projectId)).db;
  await scoreWrittenRecords(env, { ...message, recordIds: [...new Set(message.pairs.map(([recordId]) => recordId))] }, judge);
  const untouched = await db.prepare(UNTOUCHED).bind(message.projectId, JSON.stringify(message.pairs), message.claimedAt).all<{ record_id: string; scorer_id: string; version_id: string; info: string; record_type: string }>();
  if (untouched.results.length === 0) return;
  const scorers = await env.DB.prepare("SELECT id, name FROM scorers WHERE organization_id = ?1 AND id IN (SELECT value FROM json_each(?2))")
    .bind(message.organizationId, JSON.stringify([...new Set(untouched.results.map((r) => r.scorer_id))]))
    .all<{ id: string; name: string }>();
  const names = new Map(scorers.results.map((s) => [s.id, s.name]));
  const reason = "the scorer no longer applies to the record (removed from the run's settings, deleted, or the record no longer matches its filters or node types)";
  const outcomes: ScoreOutcome[] = untouched.results.map((row) => {
    const stored = JSON.parse(row.info) as { scorer_version?: number };
    return {
      recordId: row.record_id,
      recordType: row.record_type,
      scorerId: row.scorer_id,
      // A deleted scorer has no name any more: its row is settled, the record's metric_info keeps what it said (deleting keeps stored values).
      scorerName: names.get(row.scorer_id) ?? "",
      versionId: row.version_id,
      runId: message.runId,
      status: "not_applicable",
      value: null,
      info: { status_type: "not_applicable", message: `not scored: ${reason}`, scorer_id: row.scorer_id, scorer_version: stored.scorer_version },
      reason,
    };
  });
  const named = outcomes.filter((o) => o.scorerName !== "");
  const orphaned = outcomes.filter((o) => o.scorerName === "");
  const statements = resultStatements(db, message.projectId, named, nowMicros());
  if (orphaned.length > 0) {
    statements.push(
      db
        .prepare("UPDATE evaluation_results SET status = 'not_applicable', reason = ?3, due_at = NULL, updated_at = ?4 WHERE project_id = ?1 AND status = 'pending' AND (record_id, scorer_id) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?2))")
        .bind(message.projectId, JSON.stringify(orphaned.map((o) => [o.recordId, o.scorerId])), "the scorer was deleted", nowMicros()),
    );
  }
  await db.batch(statements);
}
