/** The alerts' API (contract section 16; docs/alerts.md): channels and rules. */
import { api } from "../api/client";
import { runSelector, type RunRef } from "../api/endpoints";

export interface Channel {
  id: string;
  name: string;
  type: "webhook" | "slack";
  url: string;
  enabled: boolean;
  disabled_reason: string | null;
  consecutive_failures: number;
  created_at: string;
  /** In the creation's answer only. */
  signing_secret?: string;
}

export interface DeliveryAttempt {
  webhook_id: string;
  type: string;
  at: string;
  status: number | null;
  latency_ms: number;
  error?: string;
}

export type Comparison = "gt" | "gte" | "lt" | "lte";

export interface RuleFields {
  name: string;
  metric: string;
  filters: unknown[];
  window_minutes: number;
  comparison: Comparison;
  threshold: number;
  warning_threshold: number | null;
  evaluate_every_minutes: number;
  no_data: "ok" | "alert" | "keep";
  renotify_minutes: number | null;
  channel_ids: string[];
  enabled: boolean;
}

export interface Rule extends RuleFields {
  id: string;
  state: "ok" | "warning" | "firing";
  state_since: string;
  last_value: number | null;
  last_evaluated_at: string | null;
  last_error: string | null;
  next_evaluation_at: string;
}

export interface StateChange {
  state: string;
  previous_state: string;
  value: number | null;
  threshold: number | null;
  window_start: string;
  window_end: string;
  at: string;
}

const enc = encodeURIComponent;
const channelPath = (id?: string) => `/v2/notification_channels${id ? `/${enc(id)}` : ""}`;
const rulesPath = (run: RunRef, id?: string) => `/v2/projects/${enc(run.projectId)}/alerts${id ? `/${enc(id)}` : ""}`;

export const listChannels = () => api<Channel[]>("GET", channelPath());
export const createChannel = (body: { name: string; type: Channel["type"]; url: string }) => api<Channel>("POST", channelPath(), body);
export const deleteChannel = (id: string) => api<unknown>("DELETE", channelPath(id));
export const testChannel = (id: string) => api<{ webhook_id: string }>("POST", `${channelPath(id)}/test`, {});
export const enableChannel = (id: string) => api<Channel>("POST", `${channelPath(id)}/enable`, {});
export const channelDeliveries = (id: string) => api<DeliveryAttempt[]>("GET", `${channelPath(id)}/deliveries`);

export const listRules = (run: RunRef) => api<Rule[]>("GET", `${rulesPath(run)}?${new URLSearchParams(runSelector(run)).toString()}`);
export const createRule = (run: RunRef, body: RuleFields) => api<Rule>("POST", rulesPath(run), { ...runSelector(run), ...body });
export const patchRule = (run: RunRef, id: string, body: Partial<RuleFields>) => api<Rule>("PATCH", rulesPath(run, id), body);
export const deleteRule = (run: RunRef, id: string) => api<unknown>("DELETE", rulesPath(run, id));
export const ruleHistory = (run: RunRef, id: string) => api<StateChange[]>("GET", `${rulesPath(run, id)}/history`);
