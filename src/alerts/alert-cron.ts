/**
 * The alerts' share of the minutely cron: find the rules due in this minute and hand them to the
 * evaluation queue in batches (evaluation-fanout.ts: the evaluation itself runs in the queue's
 * consumer, each batch within one invocation's D1 queries), then tend the delivery outbox
 * (deliveries never queued, retries whose message was lost, old rows). A failure is logged, never
 * thrown: the other cron work runs beside it.
 */
import { nowMicros } from "../db/client";
import type { Env } from "../env";
import { tendOutbox } from "./delivery-outbox";
import { enqueueDueEvaluations } from "./evaluation-fanout";

export async function runAlertCron(env: Env, scheduledTimeMs: number): Promise<void> {
  try {
    const report = await enqueueDueEvaluations(env, scheduledTimeMs);
    // One line per minute with due rules (counts only): the batches log their own evaluation.
    if (report.due > 0) console.log(`alerts: minute ${report.minute}: ${report.due} due rules in ${report.messages} evaluation batches`);
  } catch (error) {
    console.error(`alerts: the due rules could not be handed to the evaluation queue (they stay due): ${error instanceof Error ? error.message : String(error)}`);
  }
  try {
    await tendOutbox(env, nowMicros());
  } catch (error) {
    console.error(`alerts: outbox: ${error instanceof Error ? error.message : String(error)}`);
  }
}
