/**
 * Alert rules per project and run (contract section 16; docs/alerts.md): admins write, members
 * read. PATCHing the metric, window, filters or thresholds keeps the state and history: the next
 * evaluation decides.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { adminOnly } from "../auth/authenticate";
import { database, microsToIso, nowMicros } from "../db/client";
import { adminOnlyResponse, commonErrorResponses, ProjectIdParam, tooLargeResponse, Uuid } from "../http/common-schemas";
import type { Router } from "../http/create-router";
import { ApiError, notFound, RequestValidationError } from "../http/errors";
import type { ValidationErrorItem } from "../http/validation-errors";
import { ownedProjectOrThrow, ownedRunWithProject } from "../projects/run-access";
import { refineRunSelector, runSelectorOf, runSelectorShape } from "../projects/run-selector";
import { normalizeFilters } from "../search/normalize-search-request";
import { COMPARISONS, dueMinuteFrom, isWatchableMetric, NO_DATA, warningProblem } from "./rule-conditions";
import { MINUTE_MICROS, RULE_COLUMNS, ruleAnswer, ruleOf, type RuleRow } from "./rule-store";

/** Rules one project may have, and channels one rule may name. */
export const MAX_RULES_PER_PROJECT = 200;
export const MAX_CHANNELS_PER_RULE = 20;

const RuleFields = {
  name: z.string().trim().min(1).max(200),
  metric: z.string().min(1).max(260).openapi({ description: "A key of metrics/search: trace_count, error_count, error_rate, p50/p90/p95/p99_latency_ns, average_latency_ns, total_cost, total_tokens, average_<metric> (online evaluation scores included), ..." }),
  filters: z.array(z.unknown()).max(50).nullish().openapi({ description: "Filter leaves on trace columns, as metrics/search takes them (ANDed)." }),
  window_minutes: z.number().int().min(5).max(1440),
  comparison: z.enum(COMPARISONS as [string, ...string[]]),
  threshold: z.number().finite(),
  warning_threshold: z.number().finite().nullish(),
  evaluate_every_minutes: z.number().int().min(1).max(60),
  no_data: z.enum(NO_DATA as [string, ...string[]]),
  renotify_minutes: z.number().int().min(1).max(10_080).nullish().openapi({ description: "While firing, notify again after this many minutes; null: never." }),
  channel_ids: z.array(Uuid).min(1).max(MAX_CHANNELS_PER_RULE),
  enabled: z.boolean(),
};

const CreateRule = z
  .object({
    ...runSelectorShape,
    ...RuleFields,
    filters: RuleFields.filters,
    warning_threshold: RuleFields.warning_threshold,
    evaluate_every_minutes: RuleFields.evaluate_every_minutes.default(5),
    no_data: RuleFields.no_data.default("ok"),
    renotify_minutes: RuleFields.renotify_minutes,
    enabled: RuleFields.enabled.default(true),
  })
  .superRefine(refineRunSelector)
  .openapi("AlertRuleCreate");

const PatchRule = z.object(Object.fromEntries(Object.entries(RuleFields).map(([k, v]) => [k, (v as z.ZodTypeAny).optional()])) as { [K in keyof typeof RuleFields]: z.ZodOptional<(typeof RuleFields)[K]> }).openapi("AlertRulePatch");

const Rule = z
  .object({
    id: z.string(),
    project_id: z.string(),
    name: z.string(),
    log_stream_id: z.string().optional(),
    experiment_id: z.string().optional(),
    metrics_testing_id: z.string().optional(),
    metric: z.string(),
    filters: z.array(z.unknown()),
    window_minutes: z.number().int(),
    comparison: z.string(),
    threshold: z.number(),
    warning_threshold: z.number().nullable(),
    evaluate_every_minutes: z.number().int(),
    no_data: z.string(),
    renotify_minutes: z.number().int().nullable(),
    channel_ids: z.array(z.string()),
    enabled: z.boolean(),
    state: z.enum(["ok", "warning", "firing"]),
    state_since: z.string(),
    last_value: z.number().nullable(),
    last_evaluated_at: z.string().nullable(),
    last_error: z.string().nullable().openapi({ description: "Why the last evaluation could not compute the value (it is retried the next minute)." }),
    next_evaluation_at: z.string(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .openapi("AlertRule");

const HistoryEntry = z
  .object({
    state: z.string(),
    previous_state: z.string(),
    value: z.number().nullable(),
    threshold: z.number().nullable(),
    window_start: z.string(),
    window_end: z.string(),
    at: z.string(),
  })
  .openapi("AlertStateChange");

const RuleParams = ProjectIdParam.extend({ alert_id: Uuid.openapi({ param: { name: "alert_id", in: "path" } }) });
const ListQuery = z.object({ log_stream_id: Uuid.optional(), experiment_id: Uuid.optional(), metrics_testing_id: Uuid.optional() });

const json = <T extends z.ZodTypeAny>(schema: T, description: string) => ({ content: { "application/json": { schema } }, description });

const createRule = createRoute({
  method: "post",
  path: "/projects/{project_id}/alerts",
  tags: ["Alerts"],
  summary: "Create an alert rule",
  description: "Watches a key of metrics/search over a window of the run's traces; evaluated by the minutely cron. Admins only.",
  middleware: [adminOnly] as const,
  request: { params: ProjectIdParam, body: { content: { "application/json": { schema: CreateRule } }, required: true } },
  responses: { 200: json(Rule, "The rule (state ok)"), 409: json(z.object({ detail: z.string() }), "The project has 200 rules already"), ...adminOnlyResponse, ...tooLargeResponse, ...commonErrorResponses },
});

const listRules = createRoute({
  method: "get",
  path: "/projects/{project_id}/alerts",
  tags: ["Alerts"],
  summary: "The project's alert rules",
  description: "Oldest first; a run selector in the query keeps that run's rules only.",
  request: { params: ProjectIdParam, query: ListQuery },
  responses: { 200: json(z.array(Rule), "Rules"), ...commonErrorResponses },
});

const getRule = createRoute({
  method: "get",
  path: "/projects/{project_id}/alerts/{alert_id}",
  tags: ["Alerts"],
  summary: "An alert rule and its state",
  request: { params: RuleParams },
  responses: { 200: json(Rule, "The rule"), ...commonErrorResponses },
});

const patchRule = createRoute({
  method: "patch",
  path: "/projects/{project_id}/alerts/{alert_id}",
  tags: ["Alerts"],
  summary: "Change an alert rule",
  description: "State and history are kept; the next evaluation decides. The run cannot change. Admins only.",
  middleware: [adminOnly] as const,
  request: { params: RuleParams, body: { content: { "application/json": { schema: PatchRule } }, required: true } },
  responses: { 200: json(Rule, "The rule"), ...adminOnlyResponse, ...tooLargeResponse, ...commonErrorResponses },
});

const deleteRule = createRoute({
  method: "delete",
  path: "/projects/{project_id}/alerts/{alert_id}",
  tags: ["Alerts"],
  summary: "Delete an alert rule",
  description: "With its history; notifications already queued are still delivered. Admins only.",
  middleware: [adminOnly] as const,
  request: { params: RuleParams },
  responses: { 200: json(z.object({ id: z.string(), deleted: z.literal(true) }), "Deleted"), ...adminOnlyResponse, ...commonErrorResponses },
});

const ruleHistory = createRoute({
  method: "get",
  path: "/projects/{project_id}/alerts/{alert_id}/history",
  tags: ["Alerts"],
  summary: "An alert rule's changes of state",
  description: "Newest first, the last 500.",
  request: { params: RuleParams },
  responses: { 200: json(z.array(HistoryEntry), "State changes"), ...commonErrorResponses },
});

function fault(loc: (string | number)[], message: string, input: unknown): ValidationErrorItem {
  return { loc, msg: `Value error, ${message}`, type: "value_error", input, ctx: { error: message } };
}

interface RuleSettings {
  metric: string;
  filters: unknown[];
  comparison: string;
  threshold: number;
  warning_threshold: number | null;
  channel_ids: string[];
}

/** The checks the schema cannot make alone: metric, filters, warning side, channels of the organization. */
async function checkSettings(db: D1Database, organizationId: string, settings: RuleSettings, body: Record<string, unknown>): Promise<void> {
  const items: ValidationErrorItem[] = [];
  if (body.metric !== undefined && !isWatchableMetric(settings.metric)) {
    items.push(fault(["body", "metric"], "metric must be a key of metrics/search (trace_count, error_rate, p95_latency_ns, total_cost, average_<metric>, ...)", settings.metric));
  }
  const problem = warningProblem(settings.comparison as never, settings.threshold, settings.warning_threshold);
  if (problem && (body.warning_threshold !== undefined || body.threshold !== undefined || body.comparison !== undefined)) items.push(fault(["body", "warning_threshold"], problem, settings.warning_threshold));
  if (body.filters !== undefined) {
    try {
      normalizeFilters({ filters: settings.filters as never }, "trace");
    } catch (error) {
      if (error instanceof RequestValidationError) items.push(...error.items);
      else throw error;
    }
  }
  if (body.channel_ids !== undefined) {
    const known = await db.prepare("SELECT id FROM notification_channels WHERE organization_id = ?1 AND id IN (SELECT value FROM json_each(?2))").bind(organizationId, JSON.stringify(settings.channel_ids)).all<{ id: string }>();
    const found = new Set(known.results.map((r) => r.id));
    settings.channel_ids.forEach((id, i) => {
      if (!found.has(id)) items.push(fault(["body", "channel_ids", i], "no notification channel of this organization has this id", id));
    });
  }
  if (items.length > 0) throw new RequestValidationError(items);
}

const channelLinks = (db: D1Database, ruleId: string, channelIds: readonly string[]) =>
  db.prepare("INSERT OR IGNORE INTO alert_rule_channels (rule_id, channel_id) SELECT ?1, value FROM json_each(?2)").bind(ruleId, JSON.stringify([...new Set(channelIds)]));

async function ownRule(db: D1Database, organizationId: string, projectId: string, ruleId: string): Promise<RuleRow> {
  const row = await ruleOf(db, organizationId, projectId, ruleId);
  if (!row) throw notFound("Alert rule");
  return row;
}

export function registerAlertRules(app: Router): void {
  app.openapi(createRule, async (c) => {
    const { project_id } = c.req.valid("param");
    const body = c.req.valid("json");
    const principal = c.get("principal");
    const settings: RuleSettings = { metric: body.metric, filters: body.filters ?? [], comparison: body.comparison, threshold: body.threshold, warning_threshold: body.warning_threshold ?? null, channel_ids: body.channel_ids };
    await checkSettings(c.env.DB, principal.organizationId, settings, body);
    const run = await ownedRunWithProject(database(c.env.DB), principal, project_id, runSelectorOf(body));
    const count = await c.env.DB.prepare("SELECT count(*) AS n FROM alert_rules WHERE project_id = ?1").bind(project_id).first<{ n: number }>();
    if ((count?.n ?? 0) >= MAX_RULES_PER_PROJECT) throw new ApiError(409, `A project has at most ${MAX_RULES_PER_PROJECT} alert rules; delete one first.`);
    const id = crypto.randomUUID();
    const now = nowMicros();
    const minute = Math.floor(now / MINUTE_MICROS);
    await c.env.DB.batch([
      c.env.DB.prepare(
        `INSERT INTO alert_rules (id, organization_id, project_id, run_id, run_kind, name, metric, filters, window_minutes, comparison, threshold, warning_threshold,
           evaluate_every_minutes, no_data, renotify_minutes, enabled, created_at, created_minute, updated_at, state, state_since, next_due_minute)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?17, 'ok', ?17, ?18)`,
      ).bind(
        id, principal.organizationId, project_id, run.runId, run.kind, body.name, body.metric, JSON.stringify(settings.filters), body.window_minutes, body.comparison, body.threshold,
        settings.warning_threshold, body.evaluate_every_minutes, body.no_data, body.renotify_minutes ?? null, body.enabled ? 1 : 0, now, minute,
      ),
      channelLinks(c.env.DB, id, body.channel_ids),
    ]);
    return c.json(ruleAnswer((await ruleOf(c.env.DB, principal.organizationId, project_id, id))!) as never, 200);
  });

  app.openapi(listRules, async (c) => {
    const { project_id } = c.req.valid("param");
    const query = c.req.valid("query");
    const principal = c.get("principal");
    await ownedProjectOrThrow(database(c.env.DB), principal, project_id);
    const runId = query.log_stream_id ?? query.experiment_id ?? query.metrics_testing_id ?? null;
    const rows = await c.env.DB.prepare(`SELECT ${RULE_COLUMNS} FROM alert_rules AS r WHERE r.project_id = ?1 AND r.organization_id = ?2 AND (?3 IS NULL OR r.run_id = ?3) ORDER BY r.created_at, r.id`)
      .bind(project_id, principal.organizationId, runId)
      .all<RuleRow>();
    return c.json(rows.results.map(ruleAnswer) as never, 200);
  });

  app.openapi(getRule, async (c) => {
    const { project_id, alert_id } = c.req.valid("param");
    return c.json(ruleAnswer(await ownRule(c.env.DB, c.get("principal").organizationId, project_id, alert_id)) as never, 200);
  });

  app.openapi(patchRule, async (c) => {
    const { project_id, alert_id } = c.req.valid("param");
    const body = c.req.valid("json");
    const principal = c.get("principal");
    const row = await ownRule(c.env.DB, principal.organizationId, project_id, alert_id);
    const settings: RuleSettings = {
      metric: body.metric ?? row.metric,
      filters: body.filters === undefined ? (JSON.parse(row.filters) as unknown[]) : (body.filters ?? []),
      comparison: body.comparison ?? row.comparison,
      threshold: body.threshold ?? row.threshold,
      warning_threshold: body.warning_threshold === undefined ? row.warning_threshold : (body.warning_threshold ?? null),
      channel_ids: body.channel_ids ?? (JSON.parse(row.channel_ids) as string[]),
    };
    await checkSettings(c.env.DB, principal.organizationId, settings, body);
    const now = nowMicros();
    const every = body.evaluate_every_minutes ?? row.evaluate_every_minutes;
    const enabled = body.enabled ?? row.enabled === 1;
    // A new interval, or a rule turned back on, is next due at its first due minute from now on
    // (evaluations missed while it was off are not caught up); otherwise its schedule stands.
    const reschedule = every !== row.evaluate_every_minutes || (enabled && row.enabled !== 1);
    const nextDue = reschedule ? dueMinuteFrom(row.created_minute, every, Math.floor(now / MINUTE_MICROS)) : row.next_due_minute;
    const statements = [
      c.env.DB.prepare(
        `UPDATE alert_rules SET name = ?3, metric = ?4, filters = ?5, window_minutes = ?6, comparison = ?7, threshold = ?8, warning_threshold = ?9,
           evaluate_every_minutes = ?10, no_data = ?11, renotify_minutes = ?12, enabled = ?13, updated_at = ?14, next_due_minute = ?15
         WHERE id = ?1 AND organization_id = ?2`,
      ).bind(
        alert_id, principal.organizationId, body.name ?? row.name, settings.metric, JSON.stringify(settings.filters), body.window_minutes ?? row.window_minutes, settings.comparison,
        settings.threshold, settings.warning_threshold, every, body.no_data ?? row.no_data, body.renotify_minutes === undefined ? row.renotify_minutes : (body.renotify_minutes ?? null),
        enabled ? 1 : 0, now, nextDue,
      ),
    ];
    if (body.channel_ids !== undefined) {
      statements.push(c.env.DB.prepare("DELETE FROM alert_rule_channels WHERE rule_id = ?1").bind(alert_id), channelLinks(c.env.DB, alert_id, body.channel_ids));
    }
    await c.env.DB.batch(statements);
    return c.json(ruleAnswer((await ruleOf(c.env.DB, principal.organizationId, project_id, alert_id))!) as never, 200);
  });

  app.openapi(deleteRule, async (c) => {
    const { project_id, alert_id } = c.req.valid("param");
    const principal = c.get("principal");
    await ownRule(c.env.DB, principal.organizationId, project_id, alert_id);
    await c.env.DB.prepare("DELETE FROM alert_rules WHERE id = ?1 AND organization_id = ?2").bind(alert_id, principal.organizationId).run();
    return c.json({ id: alert_id, deleted: true as const }, 200);
  });

  app.openapi(ruleHistory, async (c) => {
    const { project_id, alert_id } = c.req.valid("param");
    await ownRule(c.env.DB, c.get("principal").organizationId, project_id, alert_id);
    const rows = await c.env.DB.prepare("SELECT state, previous_state, value, threshold, window_start, window_end, at FROM alert_history WHERE rule_id = ?1 ORDER BY minute DESC LIMIT 500")
      .bind(alert_id)
      .all<{ state: string; previous_state: string; value: number | null; threshold: number | null; window_start: number; window_end: number; at: number }>();
    return c.json(rows.results.map((r) => ({ ...r, window_start: microsToIso(r.window_start), window_end: microsToIso(r.window_end), at: microsToIso(r.at) })), 200);
  });
}
