/**
 * Notification channels in the catalog (migration 0024): an organization's webhooks and Slack
 * incoming webhooks. Their answers never carry a credential: a webhook's signing secret is
 * returned once, by its creation; a Slack URL (itself a credential) is shown masked.
 */
import { microsToIso } from "../db/client";

export type ChannelType = "webhook" | "slack";

export interface ChannelRow {
  id: string;
  organization_id: string;
  name: string;
  type: ChannelType;
  url: string;
  url_sealed: string | null;
  secret_sealed: string | null;
  enabled: number;
  disabled_reason: string | null;
  consecutive_failures: number;
  created_at: number;
}

export const CHANNEL_COLUMNS = "id, organization_id, name, type, url, url_sealed, secret_sealed, enabled, disabled_reason, consecutive_failures, created_at";

/** A Slack URL as shown: its host and the start of its path, the token cut. */
export function maskedSlackUrl(url: string): string {
  try {
    const parsed = new URL(url);
    const parts = parsed.pathname.split("/").filter(Boolean);
    const kept = parts.slice(0, Math.min(3, Math.max(parts.length - 1, 0)));
    return `${parsed.protocol}//${parsed.host}/${kept.join("/")}${kept.length > 0 ? "/" : ""}…`;
  } catch {
    return "…";
  }
}

export function channelAnswer(row: ChannelRow) {
  return {
    id: row.id,
    name: row.name,
    type: row.type,
    url: row.url,
    enabled: row.enabled === 1,
    disabled_reason: row.disabled_reason,
    consecutive_failures: row.consecutive_failures,
    created_at: microsToIso(row.created_at),
  };
}

export function channelOf(db: D1Database, organizationId: string, channelId: string): Promise<ChannelRow | null> {
  return db.prepare(`SELECT ${CHANNEL_COLUMNS} FROM notification_channels WHERE id = ?1 AND organization_id = ?2`).bind(channelId, organizationId).first<ChannelRow>();
}
