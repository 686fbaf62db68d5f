/**
 * Alert rules in the catalog (migration 0024) and their answers (contract section 16).
 */
import { microsToIso } from "../db/client";
import type { RunKind } from "../db/schema";
import type { AlertState, Comparison, NoData } from "./rule-conditions";

export interface RuleRow {
  id: string;
  organization_id: string;
  project_id: string;
  run_id: string;
  run_kind: RunKind;
  name: string;
  metric: string;
  filters: string;
  window_minutes: number;
  comparison: Comparison;
  threshold: number;
  warning_threshold: number | null;
  evaluate_every_minutes: number;
  no_data: NoData;
  renotify_minutes: number | null;
  enabled: number;
  created_at: number;
  created_minute: number;
  updated_at: number;
  state: AlertState;
  state_since: number;
  last_value: number | null;
  last_evaluated_minute: number | null;
  last_notified_minute: number | null;
  last_error: string | null;
  next_due_minute: number;
  /** JSON array of the rule's channel ids (a subquery of the reads). */
  channel_ids: string;
}

export const RULE_COLUMNS =
  "r.id, r.organization_id, r.project_id, r.run_id, r.run_kind, r.name, r.metric, r.filters, r.window_minutes, r.comparison, r.threshold, r.warning_threshold, r.evaluate_every_minutes, r.no_data, r.renotify_minutes, r.enabled, r.created_at, r.created_minute, r.updated_at, r.state, r.state_since, r.last_value, r.last_evaluated_minute, r.last_notified_minute, r.last_error, r.next_due_minute, " +
  "(SELECT json_group_array(rc.channel_id) FROM alert_rule_channels AS rc WHERE rc.rule_id = r.id) AS channel_ids";

export const RUN_SELECTOR_OF_KIND: Record<RunKind, "log_stream_id" | "experiment_id" | "metrics_testing_id"> = {
  log_stream: "log_stream_id",
  experiment: "experiment_id",
  metrics_testing: "metrics_testing_id",
};

export const MINUTE_MICROS = 60_000_000;

export function ruleAnswer(row: RuleRow) {
  return {
    id: row.id,
    project_id: row.project_id,
    name: row.name,
    [RUN_SELECTOR_OF_KIND[row.run_kind]]: row.run_id,
    metric: row.metric,
    filters: JSON.parse(row.filters) as unknown[],
    window_minutes: row.window_minutes,
    comparison: row.comparison,
    threshold: row.threshold,
    warning_threshold: row.warning_threshold,
    evaluate_every_minutes: row.evaluate_every_minutes,
    no_data: row.no_data,
    renotify_minutes: row.renotify_minutes,
    channel_ids: (JSON.parse(row.channel_ids) as string[]).sort(),
    enabled: row.enabled === 1,
    state: row.state,
    state_since: microsToIso(row.state_since),
    last_value: row.last_value,
    last_evaluated_at: row.last_evaluated_minute === null ? null : microsToIso(row.last_evaluated_minute * MINUTE_MICROS),
    last_error: row.last_error,
    next_evaluation_at: microsToIso(row.next_due_minute * MINUTE_MICROS),
    created_at: microsToIso(row.created_at),
    updated_at: microsToIso(row.updated_at),
  };
}

export function ruleOf(db: D1Database, organizationId: string, projectId: string, ruleId: string): Promise<RuleRow | null> {
  return db.prepare(`SELECT ${RULE_COLUMNS} FROM alert_rules AS r WHERE r.id = ?1 AND r.organization_id = ?2 AND r.project_id = ?3`).bind(ruleId, organizationId, projectId).first<RuleRow>();
}
