/**
 * The alert delivery queue's consumer (wrangler.toml `trace-store-alerts`; contract section 16).
 * A message names a delivery; the row holds its payload, channel and attempts.
 *
 * At least once, one attempt at a time: an attempt is claimed by a compare-and-set on the row's
 * `attempts` (a duplicate message, or a redelivered one whose attempt another consumer already
 * made, finds the count moved and stops). The POST carries the same `webhook-id` on every attempt,
 * so receivers dedupe by it. A timeout (15 s), a network error, a 429 or a 5xx is retried (a new
 * message with the delay, so no queue-level retry count bounds the 24 hours); any other non-2xx
 * is final. Every attempt is logged for the channel (the last 100 kept), and counts towards the
 * channel's failures in a row: at 20 the channel is disabled with the reason, and its pending
 * deliveries stop.
 */
import { nowMicros } from "../db/client";
import type { AlertDeliveryMessage, Env } from "../env";
import type { ChannelRow } from "./channel-store";
import { CHANNEL_COLUMNS } from "./channel-store";
import {
  DELIVERY_TIMEOUT_MS,
  delayAfter,
  FAILURES_TO_DISABLE,
  isRetryable,
  retryAfterSeconds,
  retryDelays,
  retryForSeconds,
} from "./delivery-schedule";
import { slackMessage } from "./notification-payload";
import { unseal } from "./sealed-secrets";
import { signedHeaders } from "./standard-webhooks";

export const ALERT_QUEUE_NAME = "trace-store-alerts";

interface DeliveryRow {
  id: string;
  channel_id: string;
  type: string;
  payload: string;
  status: string;
  attempts: number;
  first_attempt_at: number | null;
}

/** Attempts kept in a channel's log. */
export const LOGGED_ATTEMPTS = 100;
/** How much of a receiver's error answer the log keeps. */
const ERROR_TEXT_CHARS = 200;

export async function handleAlertQueue(batch: MessageBatch<AlertDeliveryMessage>, env: Env): Promise<void> {
  for (const message of batch.messages) {
    try {
      const id = (message.body as Partial<AlertDeliveryMessage> | null)?.deliveryId;
      if (typeof id === "string") await attemptDelivery(env, id);
      message.ack();
    } catch (error) {
      // The database or the queue failed us (not the receiver): try the message again shortly.
      console.error(`alerts: delivery message failed: ${error instanceof Error ? error.message : String(error)}`);
      message.retry({ delaySeconds: 10 });
    }
  }
}

interface Outcome {
  status: number | null;
  latencyMs: number;
  error?: string;
  retryAfter?: number;
}

async function post(channel: ChannelRow, delivery: DeliveryRow, env: Env, nowMs: number): Promise<Outcome> {
  let url = channel.url;
  let body = delivery.payload;
  const headers: Record<string, string> = { "content-type": "application/json", "user-agent": "trace-store-alerts/1" };
  try {
    if (channel.type === "slack") {
      url = await unseal(env.TOKEN_SECRET, channel.url_sealed ?? "");
      body = JSON.stringify(slackMessage(JSON.parse(delivery.payload) as Record<string, unknown>));
    } else {
      const secret = await unseal(env.TOKEN_SECRET, channel.secret_sealed ?? "");
      Object.assign(headers, await signedHeaders(secret, delivery.id, Math.floor(nowMs / 1000), body));
    }
  } catch (error) {
    return { status: null, latencyMs: 0, error: error instanceof Error ? error.message : "cannot prepare the request" };
  }
  const started = Date.now();
  try {
    const response = await fetch(url, { method: "POST", headers, body, redirect: "manual", signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS) });
    const latencyMs = Date.now() - started;
    const ok = response.status >= 200 && response.status < 300;
    const text = ok ? "" : (await response.text().catch(() => "")).slice(0, ERROR_TEXT_CHARS);
    if (ok) await response.body?.cancel().catch(() => undefined);
    return { status: response.status, latencyMs, ...(ok ? {} : { error: `HTTP ${response.status}${text ? `: ${text}` : ""}` }), retryAfter: retryAfterSeconds(response.headers.get("retry-after"), Date.now()) };
  } catch (error) {
    const latencyMs = Date.now() - started;
    const timedOut = error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError");
    return { status: null, latencyMs, error: timedOut ? `no answer within ${DELIVERY_TIMEOUT_MS / 1000} s` : `could not connect (${error instanceof Error ? error.message.slice(0, ERROR_TEXT_CHARS) : "network error"})` };
  }
}

async function attemptDelivery(env: Env, deliveryId: string): Promise<void> {
  const delivery = await env.DB.prepare("SELECT id, channel_id, type, payload, status, attempts, first_attempt_at FROM alert_deliveries WHERE id = ?1").bind(deliveryId).first<DeliveryRow>();
  if (!delivery || delivery.status !== "pending") return;
  const channel = await env.DB.prepare(`SELECT ${CHANNEL_COLUMNS} FROM notification_channels WHERE id = ?1`).bind(delivery.channel_id).first<ChannelRow>();
  if (!channel) return;
  const now = nowMicros();
  if (channel.enabled !== 1) {
    await env.DB.prepare("UPDATE alert_deliveries SET status = 'abandoned' WHERE id = ?1 AND status = 'pending'").bind(deliveryId).run();
    return;
  }
  // The claim: one attempt per count, whoever else holds a copy of this message.
  const claim = await env.DB.prepare("UPDATE alert_deliveries SET attempts = attempts + 1, first_attempt_at = coalesce(first_attempt_at, ?3), last_attempt_at = ?3 WHERE id = ?1 AND attempts = ?2 AND status = 'pending'")
    .bind(deliveryId, delivery.attempts, now)
    .run();
  if ((claim.meta.changes ?? 0) !== 1) return;
  const attempts = delivery.attempts + 1;
  const firstAttempt = delivery.first_attempt_at ?? now;
  const outcome = await post(channel, delivery, env, Math.floor(now / 1000));
  const ok = outcome.status !== null && outcome.status >= 200 && outcome.status < 300;
  const retry = !ok && isRetryable(outcome.status);
  const delay = retry ? delayAfter(attempts, retryDelays(env.ALERT_RETRY_DELAYS_SECONDS), outcome.retryAfter) : 0;
  const withinWindow = (now + delay * 1_000_000 - firstAttempt) / 1_000_000 <= retryForSeconds(env.ALERT_RETRY_FOR_SECONDS);
  const status = ok ? "delivered" : retry && withinWindow ? "pending" : "failed";
  const at = nowMicros();
  const statements = [
    env.DB.prepare("INSERT INTO alert_delivery_attempts (channel_id, webhook_id, type, at, status, latency_ms, error) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)").bind(
      channel.id, delivery.id, delivery.type, at, outcome.status, outcome.latencyMs, outcome.error ?? null,
    ),
    env.DB.prepare(
      `DELETE FROM alert_delivery_attempts WHERE channel_id = ?1 AND seq <= (SELECT seq FROM alert_delivery_attempts WHERE channel_id = ?1 ORDER BY seq DESC LIMIT 1 OFFSET ${LOGGED_ATTEMPTS})`,
    ).bind(channel.id),
    env.DB.prepare("UPDATE alert_deliveries SET status = ?2 WHERE id = ?1").bind(delivery.id, status),
  ];
  if (ok) {
    statements.push(env.DB.prepare("UPDATE notification_channels SET consecutive_failures = 0 WHERE id = ?1").bind(channel.id));
  } else {
    const reason = `disabled after ${FAILURES_TO_DISABLE} failed deliveries in a row; the last: ${outcome.error ?? "failed"}`;
    statements.push(
      env.DB.prepare(
        `UPDATE notification_channels SET consecutive_failures = consecutive_failures + 1,
           enabled = CASE WHEN consecutive_failures + 1 >= ?2 THEN 0 ELSE enabled END,
           disabled_reason = CASE WHEN consecutive_failures + 1 >= ?2 AND enabled = 1 THEN ?3 ELSE disabled_reason END
         WHERE id = ?1`,
      ).bind(channel.id, FAILURES_TO_DISABLE, reason.slice(0, 500)),
      // A channel just disabled stops its other pending deliveries: the reason shows on the channel.
      env.DB.prepare("UPDATE alert_deliveries SET status = 'abandoned' WHERE channel_id = ?1 AND status = 'pending' AND (SELECT enabled FROM notification_channels WHERE id = ?1) = 0").bind(channel.id),
    );
  }
  await env.DB.batch(statements);
  if (status === "pending") await env.ALERT_QUEUE.send({ deliveryId: delivery.id }, { delaySeconds: Math.max(0, Math.round(delay)) });
}
