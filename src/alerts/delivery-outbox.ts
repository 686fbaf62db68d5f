/**
 * Deliveries are written to the catalog first (`alert_deliveries`, in the same batch as the state
 * change that asks for them), then handed to the alert queue. A delivery whose message could not
 * be sent (the queue unreachable, the isolate gone between the two) keeps `queued_at` null and is
 * sent by the next cron run (requeueStranded): at least once, never lost between the database and
 * the queue. A message sent twice is harmless: the consumer claims each attempt by a
 * compare-and-set (delivery-consumer.ts).
 */
import type { Env } from "../env";

/** Messages per sendBatch (Queues' limit is 100). */
const SEND_BATCH = 100;

export async function queueDeliveries(env: Env, deliveryIds: readonly string[], nowMicros: number): Promise<void> {
  for (let i = 0; i < deliveryIds.length; i += SEND_BATCH) {
    const ids = deliveryIds.slice(i, i + SEND_BATCH);
    await env.ALERT_QUEUE.sendBatch(ids.map((deliveryId) => ({ body: { deliveryId } })));
    await env.DB.prepare("UPDATE alert_deliveries SET queued_at = ?1 WHERE id IN (SELECT value FROM json_each(?2)) AND queued_at IS NULL").bind(nowMicros, JSON.stringify(ids)).run();
  }
}

/** Deliveries written at least this long ago and never queued are queued again by the cron. */
const STRANDED_AFTER_MICROS = 60_000_000;

/**
 * A pending delivery whose last attempt is older than the longest retry delay (1 h) and a margin
 * lost its retry message (the consumer stopped between its write and its send): sent again.
 */
const RETRY_LOST_AFTER_MICROS = 2 * 3600 * 1_000_000;
/** Finished deliveries are kept a week (the log of attempts keeps its own last 100 per channel). */
const KEEP_FINISHED_MICROS = 7 * 24 * 3600 * 1_000_000;

/**
 * The cron's care of the outbox: queues deliveries stranded between the database and the queue
 * and pending ones whose retry message was lost (at most 500 of each a run; a duplicate message is
 * harmless), and removes finished deliveries older than a week (1,000 a run).
 */
export async function tendOutbox(env: Env, nowMicros: number): Promise<number> {
  const [unqueued, lost] = await env.DB.batch<{ id: string }>([
    env.DB.prepare("SELECT id FROM alert_deliveries WHERE queued_at IS NULL AND created_at < ?1 ORDER BY created_at LIMIT 500").bind(nowMicros - STRANDED_AFTER_MICROS),
    env.DB.prepare("SELECT id FROM alert_deliveries WHERE status = 'pending' AND last_attempt_at < ?1 ORDER BY last_attempt_at LIMIT 500").bind(nowMicros - RETRY_LOST_AFTER_MICROS),
    env.DB.prepare("DELETE FROM alert_deliveries WHERE id IN (SELECT id FROM alert_deliveries WHERE created_at < ?1 AND status <> 'pending' ORDER BY created_at LIMIT 1000)").bind(nowMicros - KEEP_FINISHED_MICROS),
  ]);
  const ids = [...new Set([...unqueued!.results, ...lost!.results].map((r) => r.id))];
  if (ids.length > 0) await queueDeliveries(env, ids, nowMicros);
  return ids.length;
}

/** A new webhook-id: `msg_` and 24 random base32 characters, as Standard Webhooks suggests. */
export function newWebhookId(): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyz234567";
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  return `msg_${Array.from(bytes, (b) => alphabet[b & 31]).join("")}`;
}
