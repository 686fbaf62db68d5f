/**
 * Scoring after writes (contract section 15: ingest never waits for a scorer). The intake routes
 * note the records each request wrote (`writtenRecords`, set by src/ingest/scorable-writes.ts);
 * once the request is answered, this middleware looks up each run's settings (cached per
 * isolate) and, for a run with scorers enabled, sends its record ids to the evaluation queue in
 * messages of at most MAX_IDS_PER_MESSAGE ids. A failure is logged and costs the write nothing;
 * a write that stored intake markers (scoring-intake.ts) is sent again by the cron if its
 * messages never arrive or are dropped.
 */
import type { MiddlewareHandler } from "hono";
import type { Env, EvaluationMessage } from "../env";
import type { AppEnv } from "../http/app-env";
import { runSettings } from "./run-settings";
import { intakeStatement } from "./scoring-intake";

/** Ids per queue message: well under the queue's 128 KB message limit for ids of 128 characters. */
export const MAX_IDS_PER_MESSAGE = 500;

/**
 * Whether the run may have scorers. A settings lookup that fails answers yes: the ids are queued
 * anyway and the consumer, which reads the settings itself (and is retried by the queue), drops
 * them if the run has none. Otherwise one failed read after the answer would leave the request's
 * records unscored with no reason anywhere.
 */
export async function runMayHaveScorers(env: Env, runId: string): Promise<boolean> {
  try {
    return (await runSettings(env, runId)) !== null;
  } catch (error) {
    console.error(`evaluations: run settings unreadable, queueing the records anyway: ${error instanceof Error ? error.message : String(error)}`);
    return true;
  }
}

export async function enqueueScoring(env: Env, written: NonNullable<AppEnv["Variables"]["writtenRecords"]>): Promise<void> {
  const messages: { body: EvaluationMessage }[] = [];
  for (const w of written) {
    if (w.ids.length === 0) continue;
    const scope = { organizationId: w.organizationId, projectId: w.projectId, runId: w.runId };
    // A write that stored markers sends one message per marker, naming it (the consumer deletes it).
    if (w.intake) {
      for (const marker of w.intake.markers) messages.push({ body: { kind: "score", ...scope, recordIds: marker.ids, intake: { shard: w.intake.shard, id: marker.id } } });
      continue;
    }
    if (!(await runMayHaveScorers(env, w.runId))) continue;
    for (let i = 0; i < w.ids.length; i += MAX_IDS_PER_MESSAGE) messages.push({ body: { kind: "score", ...scope, recordIds: w.ids.slice(i, i + MAX_IDS_PER_MESSAGE) } });
  }
  for (let i = 0; i < messages.length; i += 100) await env.EVALUATION_QUEUE.sendBatch(messages.slice(i, i + 100));
}

export const scoringAfterWrites: MiddlewareHandler<AppEnv> = async (c, next) => {
  // The intake's hooks for its writes (src/http/app-env.ts, ScoringIntake): ingest marks records
  // through them without importing this layer.
  c.set("scoringIntake", {
    mayHaveScorers: (runId) => runMayHaveScorers(c.env, runId),
    markStatement: (db, scope, ids, nowMicros) => intakeStatement(db, scope, ids, nowMicros, MAX_IDS_PER_MESSAGE),
  });
  await next();
  const written = c.get("writtenRecords");
  if (!written || written.length === 0) return;
  let waitUntil: (work: Promise<unknown>) => void;
  try {
    const ctx = c.executionCtx;
    waitUntil = (work) => ctx.waitUntil(work);
  } catch {
    return;
  }
  waitUntil(enqueueScoring(c.env, written).catch((error) => console.error(`evaluations: could not queue scoring: ${error instanceof Error ? error.message : String(error)}`)));
};
