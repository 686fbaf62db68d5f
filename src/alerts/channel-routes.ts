/**
 * Notification channels (contract section 16; docs/alerts.md): admins create, test, enable and
 * delete them, members read them. A webhook's signing secret is in the creation's answer only.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { adminOnly } from "../auth/authenticate";
import { microsToIso, nowMicros } from "../db/client";
import { adminOnlyResponse, commonErrorResponses, tooLargeResponse, Uuid } from "../http/common-schemas";
import type { Router } from "../http/create-router";
import { ApiError, notFound, RequestValidationError } from "../http/errors";
import { channelAnswer, CHANNEL_COLUMNS, channelOf, type ChannelRow, maskedSlackUrl } from "./channel-store";
import { allowsLocalDestinations, checkDestination } from "./destination-rules";
import { newWebhookId, queueDeliveries } from "./delivery-outbox";
import { seal } from "./sealed-secrets";
import { newSigningSecret } from "./standard-webhooks";

/** Channels one organization may have: enough for every team's webhook and Slack room. */
export const MAX_CHANNELS_PER_ORGANIZATION = 100;

const ChannelIdParam = z.object({ channel_id: Uuid.openapi({ param: { name: "channel_id", in: "path" } }) });

const CreateChannel = z
  .object({
    name: z.string().trim().min(1).max(200),
    type: z.enum(["webhook", "slack"]),
    url: z.string().min(1).max(2048).openapi({ description: "https (http and local addresses only under wrangler dev); a Slack incoming-webhook URL for `slack`." }),
  })
  .openapi("NotificationChannelCreate");

const Channel = z
  .object({
    id: z.string(),
    name: z.string(),
    type: z.enum(["webhook", "slack"]),
    url: z.string().openapi({ description: "A webhook's URL; a Slack URL masked (it is a credential)." }),
    enabled: z.boolean(),
    disabled_reason: z.string().nullable(),
    consecutive_failures: z.number().int(),
    created_at: z.string(),
  })
  .openapi("NotificationChannel");

const CreatedChannel = Channel.extend({
  signing_secret: z.string().optional().openapi({ description: "A webhook's Standard Webhooks secret (`whsec_...`): shown here once, never again." }),
}).openapi("NotificationChannelCreated");

const Delivery = z
  .object({
    webhook_id: z.string(),
    type: z.string(),
    at: z.string(),
    status: z.number().int().nullable().openapi({ description: "The receiver's HTTP status; null when no answer came (timeout, network error)." }),
    latency_ms: z.number().int(),
    error: z.string().optional(),
  })
  .openapi("NotificationDelivery");

const json = <T extends z.ZodTypeAny>(schema: T, description: string) => ({ content: { "application/json": { schema } }, description });

const createChannel = createRoute({
  method: "post",
  path: "/notification_channels",
  tags: ["Alerts"],
  summary: "Create a notification channel",
  description: "A webhook signed by the Standard Webhooks specification (its secret is in this answer only), or a Slack incoming webhook. Admins only.",
  middleware: [adminOnly] as const,
  request: { body: { content: { "application/json": { schema: CreateChannel } }, required: true } },
  responses: { 200: json(CreatedChannel, "The channel"), 409: json(z.object({ detail: z.string() }), "The organization has 100 channels already"), ...adminOnlyResponse, ...tooLargeResponse, ...commonErrorResponses },
});

const listChannels = createRoute({
  method: "get",
  path: "/notification_channels",
  tags: ["Alerts"],
  summary: "The organization's notification channels",
  responses: { 200: json(z.array(Channel), "Every channel, oldest first"), ...commonErrorResponses },
});

const getChannel = createRoute({
  method: "get",
  path: "/notification_channels/{channel_id}",
  tags: ["Alerts"],
  summary: "A notification channel",
  request: { params: ChannelIdParam },
  responses: { 200: json(Channel, "The channel"), ...commonErrorResponses },
});

const deleteChannel = createRoute({
  method: "delete",
  path: "/notification_channels/{channel_id}",
  tags: ["Alerts"],
  summary: "Delete a notification channel",
  description: "Rules that name it drop it; its pending deliveries are abandoned. Admins only.",
  middleware: [adminOnly] as const,
  request: { params: ChannelIdParam },
  responses: { 200: json(z.object({ id: z.string(), deleted: z.literal(true) }), "Deleted"), ...adminOnlyResponse, ...commonErrorResponses },
});

const testChannel = createRoute({
  method: "post",
  path: "/notification_channels/{channel_id}/test",
  tags: ["Alerts"],
  summary: "Send a test event",
  description: "`{id, type: \"test\", created_at, channel: {id, name}}`, signed and queued like any delivery; its attempts show in the delivery log. Admins only.",
  middleware: [adminOnly] as const,
  request: { params: ChannelIdParam },
  responses: { 202: json(z.object({ webhook_id: z.string() }), "Queued"), 409: json(z.object({ detail: z.string() }), "The channel is disabled"), ...adminOnlyResponse, ...commonErrorResponses },
});

const enableChannel = createRoute({
  method: "post",
  path: "/notification_channels/{channel_id}/enable",
  tags: ["Alerts"],
  summary: "Turn a disabled channel back on",
  description: "Clears `disabled_reason` and the count of failures in a row. Admins only.",
  middleware: [adminOnly] as const,
  request: { params: ChannelIdParam },
  responses: { 200: json(Channel, "The channel"), ...adminOnlyResponse, ...commonErrorResponses },
});

const listDeliveries = createRoute({
  method: "get",
  path: "/notification_channels/{channel_id}/deliveries",
  tags: ["Alerts"],
  summary: "The channel's delivery log",
  description: "The last 100 attempts, newest first.",
  request: { params: ChannelIdParam },
  responses: { 200: json(z.array(Delivery), "Attempts"), ...commonErrorResponses },
});

async function ownChannel(db: D1Database, organizationId: string, channelId: string): Promise<ChannelRow> {
  const row = await channelOf(db, organizationId, channelId);
  if (!row) throw notFound("Notification channel");
  return row;
}

export function registerNotificationChannels(app: Router): void {
  app.openapi(createChannel, async (c) => {
    const body = c.req.valid("json");
    const principal = c.get("principal");
    const verdict = checkDestination(body.url, body.type, allowsLocalDestinations(c.env.ALERT_DESTINATIONS));
    if (!verdict.ok) {
      const msg = `Value error, ${verdict.reason}`;
      throw new RequestValidationError([{ loc: ["body", "url"], msg, type: "value_error", input: body.url, ctx: { error: verdict.reason } }]);
    }
    const count = await c.env.DB.prepare("SELECT count(*) AS n FROM notification_channels WHERE organization_id = ?1").bind(principal.organizationId).first<{ n: number }>();
    if ((count?.n ?? 0) >= MAX_CHANNELS_PER_ORGANIZATION) throw new ApiError(409, `An organization has at most ${MAX_CHANNELS_PER_ORGANIZATION} notification channels; delete one first.`);
    const id = crypto.randomUUID();
    const now = nowMicros();
    const url = verdict.url.toString();
    const secret = body.type === "webhook" ? newSigningSecret() : null;
    const row: ChannelRow = {
      id,
      organization_id: principal.organizationId,
      name: body.name,
      type: body.type,
      url: body.type === "slack" ? maskedSlackUrl(url) : url,
      url_sealed: body.type === "slack" ? await seal(c.env.TOKEN_SECRET, url) : null,
      secret_sealed: secret ? await seal(c.env.TOKEN_SECRET, secret) : null,
      enabled: 1,
      disabled_reason: null,
      consecutive_failures: 0,
      created_at: now,
    };
    await c.env.DB.prepare(`INSERT INTO notification_channels (${CHANNEL_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)`)
      .bind(row.id, row.organization_id, row.name, row.type, row.url, row.url_sealed, row.secret_sealed, row.enabled, row.disabled_reason, row.consecutive_failures, row.created_at)
      .run();
    return c.json({ ...channelAnswer(row), ...(secret ? { signing_secret: secret } : {}) }, 200);
  });

  app.openapi(listChannels, async (c) => {
    const rows = await c.env.DB.prepare(`SELECT ${CHANNEL_COLUMNS} FROM notification_channels WHERE organization_id = ?1 ORDER BY created_at, id`).bind(c.get("principal").organizationId).all<ChannelRow>();
    return c.json(rows.results.map(channelAnswer), 200);
  });

  app.openapi(getChannel, async (c) => {
    const row = await ownChannel(c.env.DB, c.get("principal").organizationId, c.req.valid("param").channel_id);
    return c.json(channelAnswer(row), 200);
  });

  app.openapi(deleteChannel, async (c) => {
    const { channel_id } = c.req.valid("param");
    const organizationId = c.get("principal").organizationId;
    await ownChannel(c.env.DB, organizationId, channel_id);
    // Its rule links, deliveries and log go by the foreign keys' cascade (a channel has at most a
    // few thousand deliveries: the 100 logged attempts and the retries of the last 24 hours).
    await c.env.DB.prepare("DELETE FROM notification_channels WHERE id = ?1 AND organization_id = ?2").bind(channel_id, organizationId).run();
    return c.json({ id: channel_id, deleted: true as const }, 200);
  });

  app.openapi(testChannel, async (c) => {
    const { channel_id } = c.req.valid("param");
    const row = await ownChannel(c.env.DB, c.get("principal").organizationId, channel_id);
    if (row.enabled !== 1) throw new ApiError(409, `The channel is disabled (${row.disabled_reason ?? "by an admin"}); enable it first (POST .../enable).`);
    const id = newWebhookId();
    const now = nowMicros();
    const payload = JSON.stringify({ id, type: "test", created_at: microsToIso(now), channel: { id: row.id, name: row.name } });
    await c.env.DB.prepare("INSERT INTO alert_deliveries (id, channel_id, type, payload, created_at) VALUES (?1, ?2, 'test', ?3, ?4)").bind(id, row.id, payload, now).run();
    await queueDeliveries(c.env, [id], now);
    return c.json({ webhook_id: id }, 202);
  });

  app.openapi(enableChannel, async (c) => {
    const { channel_id } = c.req.valid("param");
    const organizationId = c.get("principal").organizationId;
    await ownChannel(c.env.DB, organizationId, channel_id);
    await c.env.DB.prepare("UPDATE notification_channels SET enabled = 1, disabled_reason = NULL, consecutive_failures = 0 WHERE id = ?1 AND organization_id = ?2").bind(channel_id, organizationId).run();
    return c.json(channelAnswer((await channelOf(c.env.DB, organizationId, channel_id))!), 200);
  });

  app.openapi(listDeliveries, async (c) => {
    const { channel_id } = c.req.valid("param");
    await ownChannel(c.env.DB, c.get("principal").organizationId, channel_id);
    const rows = await c.env.DB.prepare("SELECT webhook_id, type, at, status, latency_ms, error FROM alert_delivery_attempts WHERE channel_id = ?1 ORDER BY seq DESC LIMIT 100")
      .bind(channel_id)
      .all<{ webhook_id: string; type: string; at: number; status: number | null; latency_ms: number; error: string | null }>();
    return c.json(rows.results.map((r) => ({ webhook_id: r.webhook_id, type: r.type, at: microsToIso(r.at), status: r.status, latency_ms: r.latency_ms, ...(r.error ? { error: r.error } : {}) })), 200);
  });
}
