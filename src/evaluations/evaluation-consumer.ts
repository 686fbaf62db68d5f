/**
 * The evaluation queue's consumer (wrangler.toml `trace-store-evaluations`): `score` messages
 * score records written just now (score-records.ts), `backfill` messages advance a backfill job,
 * `due` messages score pending results the cron found past due (due-results.ts).
 * A message that fails is retried by the queue; every write it makes is idempotent. A `score`
 * message of a write carries the write's intake marker (scoring-intake.ts), deleted once the
 * message is handled: one dropped after its retries is sent again by the cron.
 */
import type { Env, EvaluationMessage } from "../env";
import { handleBackfillMessage } from "./backfill-job";
import { handleDueMessage } from "./due-results";
import { judgeRecords } from "./judge-calls";
import { scoreWrittenRecords } from "./score-records";
import { settleIntake } from "./scoring-intake";

export const EVALUATION_QUEUE_NAME = "trace-store-evaluations";

export async function handleEvaluationQueue(batch: MessageBatch<EvaluationMessage>, env: Env): Promise<void> {
  for (const message of batch.messages) {
    const body = message.body;
    try {
      if (body?.kind === "score" && Array.isArray(body.recordIds)) {
        await scoreWrittenRecords(env, body, judgeRecords);
        // Handled (scored, or nothing to score): the write's marker goes, so the cron does not send it again.
        if (body.intake) await settleIntake(env, body.intake);
      }
      else if (body?.kind === "backfill" && typeof body.jobId === "string") await handleBackfillMessage(env, body.jobId, message.attempts);
      else if (body?.kind === "due" && Array.isArray(body.pairs)) await handleDueMessage(env, body, judgeRecords);
      message.ack();
    } catch (error) {
      console.error(`evaluations: a ${body?.kind ?? "malformed"} message failed: ${error instanceof Error ? error.message : String(error)}`);
      message.retry({ delaySeconds: Math.min(60, 2 ** message.attempts) });
    }
  }
}
