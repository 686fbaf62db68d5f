/**
 * Scoring intake markers: what makes "every record written to a run with scorers gets scored, or
 * says why" durable (issue 34; docs/evaluations.md "Deferred results").
 *
 * The queue message that asks for a record's scoring is sent after the request is answered
 * (ingest never waits for a scorer), so it can be lost with no trace: the send fails or never
 * runs (the isolate ends first), or the message fails past the queue's max_retries and is
 * dropped. The evaluations bench once lost a whole request's 1,100 records this way: no pending
 * result, no error anywhere. So the write itself leaves, in the same batch as the records (atomic
 * with them, no extra round trip), one marker row per message it will send (at most
 * MAX_IDS_PER_MESSAGE ids), due INTAKE_GRACE_MS later. The consumer deletes the marker once the
 * message is handled (scored, or nothing to score); the minutely cron claims the markers past due
 * (the same lease as the due results') and sends their messages again. A message that keeps
 * failing is sent again each lease until it succeeds; each failure is logged with its reason.
 *
 * Only a run that has (or may have: an unreadable setting) scorers gets markers: a run without
 * any writes exactly what it wrote before.
 */
import type { Env, EvaluationMessage } from "../env";
import type { IntakeMarker, IntakeScope } from "../http/app-env";
import { allRecordDatabases, shardDatabase } from "../shards/shard-config";

/** How long a marker waits for its own message before the cron sends it again. */
export const INTAKE_GRACE_MS = 120_000;
/** How long a claimed marker is left to its new message before it is sent again (as the due results' lease). */
export const INTAKE_LEASE_MS = 15 * 60_000;
/** Markers claimed per record database and cron run (each names at most 500 records). */
export const INTAKE_PER_DATABASE = 50;

export type { IntakeMarker, IntakeScope };

const INSERT = `INSERT INTO evaluation_intake (id, organization_id, project_id, run_id, record_ids, due_at)
SELECT value ->> 0, ?1, ?2, ?3, value ->> 1, ?4 FROM json_each(?5)`;

/** The markers of these ids (one per message of at most `perMessage` ids) and the statement that stores them. */
export function intakeStatement(db: D1Database, scope: IntakeScope, ids: string[], nowMicros: number, perMessage: number): { statement: D1PreparedStatement; markers: IntakeMarker[] } {
  const markers: IntakeMarker[] = [];
  for (let i = 0; i < ids.length; i += perMessage) markers.push({ id: crypto.randomUUID(), ids: ids.slice(i, i + perMessage) });
  const rows = JSON.stringify(markers.map((m) => [m.id, JSON.stringify(m.ids)]));
  return { statement: db.prepare(INSERT).bind(scope.organizationId, scope.projectId, scope.runId, nowMicros + INTAKE_GRACE_MS * 1000, rows), markers };
}

/** The consumer handled the message: its marker goes. */
export async function settleIntake(env: Env, intake: { shard: string; id: string }): Promise<void> {
  await shardDatabase(env, intake.shard).prepare("DELETE FROM evaluation_intake WHERE id = ?1").bind(intake.id).run();
}

const CLAIM = `
UPDATE evaluation_intake SET due_at = ?1, sends = sends + 1
WHERE due_at <= ?2 AND id IN (SELECT id FROM evaluation_intake WHERE due_at <= ?2 ORDER BY due_at LIMIT ?3)
RETURNING id, organization_id, project_id, run_id, record_ids, sends`;

/**
 * The cron's step: each database's markers past due are claimed (their due_at moved a lease
 * ahead, so two crons never send the same one, and a message lost again is sent again after the
 * lease) and their messages sent. Answers how many were sent again.
 */
export async function sweepIntake(env: Env, nowMs: number = Date.now(), limit = INTAKE_PER_DATABASE): Promise<number> {
  let sent = 0;
  for (const shard of allRecordDatabases(env)) {
    try {
      const rows = (
        await shardDatabase(env, shard)
          .prepare(CLAIM)
          .bind((nowMs + INTAKE_LEASE_MS) * 1000, nowMs * 1000, limit)
          .all<{ id: string; organization_id: string; project_id: string; run_id: string; record_ids: string; sends: number }>()
      ).results;
      if (rows.length === 0) continue;
      for (const row of rows) {
        console.warn(`evaluations: the scoring of ${JSON.parse(row.record_ids).length} records of run ${row.run_id} (project ${row.project_id}, ${shard}) was not done ${row.sends === 1 ? "by its message (lost or never sent)" : `after ${row.sends - 1} sends`}: sent again`);
      }
      const messages: { body: EvaluationMessage }[] = rows.map((row) => ({
        body: { kind: "score", organizationId: row.organization_id, projectId: row.project_id, runId: row.run_id, recordIds: JSON.parse(row.record_ids) as string[], intake: { shard, id: row.id } },
      }));
      for (let i = 0; i < messages.length; i += 100) await env.EVALUATION_QUEUE.sendBatch(messages.slice(i, i + 100));
      sent += rows.length;
    } catch (error) {
      console.error(`evaluations: could not sweep the scoring intake of ${shard}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return sent;
}
