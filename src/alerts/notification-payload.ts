/**
 * What a notification says (contract section 16): the Standard Webhooks body, and Slack's
 * incoming-webhook message built from it. Pure.
 */
import { microsToIso } from "../db/client";
import type { NotificationType } from "./rule-conditions";
import type { RuleRow } from "./rule-store";

export interface NotificationContext {
  rule: Pick<RuleRow, "id" | "name" | "metric" | "comparison" | "threshold" | "warning_threshold" | "window_minutes" | "project_id" | "run_id" | "run_kind" | "filters">;
  projectName: string;
  runName: string;
  value: number | null;
  windowStartMicros: number;
  windowEndMicros: number;
  evaluatedMicros: number;
  publicUrl: string | undefined;
}

const EXPLORER_RUN_PATH: Record<string, string | undefined> = { log_stream: "log_streams", experiment: "experiments" };

/**
 * The explorer on the run's traces of the window, with the rule's filters (ui/src/routing/routes.ts):
 * the rows are exactly the traces the value was computed from. Metrics-testing runs have no table
 * in the explorer: their permalink opens the project. Relative when PUBLIC_URL is not set.
 */
export function permalinkOf(context: NotificationContext): string {
  const origin = (context.publicUrl ?? "").replace(/\/+$/, "");
  const { rule } = context;
  const kind = EXPLORER_RUN_PATH[rule.run_kind];
  if (!kind) return `${origin}/projects/${rule.project_id}`;
  const filter = {
    and: [
      { type: "date", column_id: "created_at", operator: "gte", value: microsToIso(context.windowStartMicros) },
      { type: "date", column_id: "created_at", operator: "lt", value: microsToIso(context.windowEndMicros) },
      ...(JSON.parse(rule.filters) as unknown[]),
    ],
  };
  return `${origin}/projects/${rule.project_id}/${kind}/${rule.run_id}/traces?filter=${encodeURIComponent(JSON.stringify(filter))}`;
}

export function notificationPayload(id: string, type: NotificationType, context: NotificationContext) {
  const { rule } = context;
  return {
    id,
    type,
    created_at: microsToIso(context.evaluatedMicros),
    alert: {
      id: rule.id,
      name: rule.name,
      metric: rule.metric,
      comparison: rule.comparison,
      threshold: rule.threshold,
      warning_threshold: rule.warning_threshold,
      window_minutes: rule.window_minutes,
    },
    project: { id: rule.project_id, name: context.projectName },
    run: { id: rule.run_id, name: context.runName, type: rule.run_kind },
    value: context.value,
    window: { start: microsToIso(context.windowStartMicros), end: microsToIso(context.windowEndMicros) },
    permalink: permalinkOf(context),
  };
}

export type NotificationPayload = ReturnType<typeof notificationPayload>;

const SYMBOL = { gt: ">", gte: "≥", lt: "<", lte: "≤" } as Record<string, string>;
const HEADLINE: Record<string, string> = { "alert.firing": "🔴 Firing", "alert.warning": "🟠 Warning", "alert.resolved": "✅ Resolved", test: "🔔 Test" };

/** Slack escapes: &, < and > in text they did not write. */
const slackText = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/** Slack's incoming-webhook JSON (`text` for notifications and fallbacks, `blocks` for the message). */
export function slackMessage(payload: Record<string, unknown>): { text: string; blocks: unknown[] } {
  if (payload.type === "test") {
    const channel = payload.channel as { name: string };
    const text = `${HEADLINE.test}: the trace store can post to this channel (${slackText(channel.name)}).`;
    return { text, blocks: [{ type: "section", text: { type: "mrkdwn", text } }] };
  }
  const p = payload as unknown as NotificationPayload;
  const valueText = p.value === null ? "no data" : String(Number(p.value.toPrecision(6)));
  const line = p.type === "alert.warning" && p.alert.warning_threshold !== null ? p.alert.warning_threshold : p.alert.threshold;
  const text = `${HEADLINE[p.type] ?? p.type}: ${slackText(p.alert.name)}: ${p.alert.metric} is ${valueText} (${SYMBOL[p.alert.comparison] ?? p.alert.comparison} ${line}) over ${p.alert.window_minutes} min, ${slackText(p.project.name)} / ${slackText(p.run.name)}`;
  return {
    text,
    blocks: [
      { type: "section", text: { type: "mrkdwn", text: `*${HEADLINE[p.type] ?? p.type}: ${slackText(p.alert.name)}*\n\`${p.alert.metric}\` is *${valueText}* (alert ${SYMBOL[p.alert.comparison] ?? p.alert.comparison} ${p.alert.threshold}${p.alert.warning_threshold !== null ? `, warning ${p.alert.warning_threshold}` : ""})` } },
      { type: "context", elements: [{ type: "mrkdwn", text: `${slackText(p.project.name)} / ${slackText(p.run.name)} · ${p.window.start} to ${p.window.end}` }] },
      ...(p.permalink.startsWith("http") ? [{ type: "actions", elements: [{ type: "button", text: { type: "plain_text", text: "Open the traces" }, url: p.permalink }] }] : []),
    ],
  };
}
