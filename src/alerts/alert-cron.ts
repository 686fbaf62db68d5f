/**
 * The alerts' share of the minutely cron: evaluate the rules due in this minute, then tend the
 * delivery outbox (deliveries never queued, retries whose message was lost, old rows). A failure
 * is logged, never thrown: the other cron work runs beside it.
 */
import { nowMicros } from "../db/client";
import type { Env } from "../env";
import { countingEnv, type RoundTripCounter } from "../http/d1-round-trips";
import { tendOutbox } from "./delivery-outbox";
import { evaluateDueRules } from "./evaluate-due-rules";

export async function runAlertCron(env: Env, scheduledTimeMs: number): Promise<void> {
  try {
    const started = Date.now();
    const trips: RoundTripCounter = { count: 0 };
    const report = await evaluateDueRules(countingEnv(env, trips), scheduledTimeMs);
    // One line per minute with due rules (counts only, nothing of the rules): what operators and the bench read.
    if (report.due > 0) {
      console.log(`alerts: minute ${report.minute}: ${report.due} due rules, ${report.reads} metrics reads, ${report.changed} changes of state, ${report.notifications} notifications, ${report.failed} failed, ${trips.count} D1 round trips, ${Date.now() - started} ms`);
    }
    if (report.failed > 0) console.error(`alerts: ${report.failed} of ${report.due} due rules could not be evaluated (their last_error says why)`);
  } catch (error) {
    console.error(`alerts: evaluation failed: ${error instanceof Error ? error.message : String(error)}`);
  }
  try {
    await tendOutbox(env, nowMicros());
  } catch (error) {
    console.error(`alerts: outbox: ${error instanceof Error ? error.message : String(error)}`);
  }
}
