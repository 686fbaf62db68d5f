/**
 * The minutely cron's evaluation of due alert rules (contract section 16; docs/alerts.md).
 *
 * A rule is due in minute t when t is its `next_due_minute` or later (a run the cron missed is
 * caught up by the next one, over the window ending at that run's minute). Rules that watch the
 * same run, filters and window share one read of metrics/search's figures (all keys come in one
 * answer), so 1,000 due rules cost at most 1,000 reads and usually fewer, and their writes are
 * one D1 batch per read. The cron does not evaluate: it finds the due rules and hands them to the
 * evaluation queue in batches (evaluation-fanout.ts), whose consumer calls evaluateRuleBatch.
 *
 * Never two notifications for one evaluation, whatever the cron's redelivery or overlap: the
 * state, the rule's next due minute, the history row and the deliveries are written in one D1
 * batch whose first statement is a conditional transition (`WHERE next_due_minute = <as read>
 * AND state = <as read>`), and the history and delivery inserts run only when it changed the row
 * (`WHERE changes() = 1`); deliveries are also unique per (rule, minute, channel). A second run of
 * the same minute finds the rule no longer due; two runs that read it at once both compute, and
 * only one of them writes.
 */
import { nowMicros } from "../db/client";
import type { Env } from "../env";
import { ApiError, RequestValidationError } from "../http/errors";
import { scanPolicy } from "../limits/limit-settings";
import { newWebhookId, queueDeliveries } from "./delivery-outbox";
import { windowFigures } from "./metrics-adapter";
import { notificationPayload } from "./notification-payload";
import { dueMinuteFrom, nextState, notificationFor } from "./rule-conditions";
import { MINUTE_MICROS, RULE_COLUMNS, type RuleRow } from "./rule-store";

/** Rules one cron run evaluates at most; the rest stay due and go first next minute. */
export const MAX_RULES_PER_RUN = 2_000;
/** Reads of metrics in flight at once (of different organizations). */
const READS_IN_FLIGHT = 6;

interface DueRule extends RuleRow {
  project_name: string;
  run_name: string;
}

/** The due rules, oldest due first, through `alert_rules_due` (a partial index of enabled rules). */
export const DUE_RULES_SQL = `SELECT ${RULE_COLUMNS}, p.name AS project_name, ru.name AS run_name
  FROM alert_rules AS r JOIN projects AS p ON p.id = r.project_id JOIN runs AS ru ON ru.id = r.run_id
 WHERE r.enabled = 1 AND r.next_due_minute <= ?1 ORDER BY r.next_due_minute LIMIT ?2`;

export interface EvaluationReport {
  minute: number;
  due: number;
  /** Reads of metrics/search's figures made (one per distinct run, filters and window). */
  reads: number;
  changed: number;
  notifications: number;
  failed: number;
  /** Rules not evaluated for lack of budget (still due: the caller hands them on). */
  left: string[];
}

/** Options of one evaluation: the D1 round trips it may spend (the Worker invocation's share). */
export interface EvaluationBudget {
  /** D1 round trips counted for the invocation so far (src/http/d1-round-trips.ts's counter). */
  trips: { count: number };
  /** The most it may reach; groups that would pass it are left (`EvaluationReport.left`). */
  maxTrips: number;
}

/**
 * Round trips one read and its write may cost at most: the metrics read (about 3 today; more once
 * reads span partitions, so with room), a second read after a refused scan slot, the write batch,
 * the queueing of its deliveries and a failure's update.
 */
export const TRIPS_PER_READ_WORST = 12;

/** Every rule due in this minute, in this invocation (tests; the cron fans out: evaluation-fanout.ts). */
export async function evaluateDueRules(env: Env, scheduledTimeMs: number): Promise<EvaluationReport> {
  const minute = Math.floor(scheduledTimeMs / 60_000);
  const rows = await env.DB.prepare(DUE_RULES_SQL).bind(minute, MAX_RULES_PER_RUN).all<DueRule>();
  return evaluateRules(env, minute, rows.results);
}

/** The rules of a batch that are still due in `minute` (a redelivered batch finds them evaluated). */
export const RULES_OF_BATCH_SQL = `SELECT ${RULE_COLUMNS}, p.name AS project_name, ru.name AS run_name
  FROM alert_rules AS r JOIN projects AS p ON p.id = r.project_id JOIN runs AS ru ON ru.id = r.run_id
 WHERE r.id IN (SELECT value FROM json_each(?1)) AND r.enabled = 1 AND r.next_due_minute <= ?2`;

/** One batch of the minute's fan-out: its rules that are still due, evaluated with the same transitions. */
export async function evaluateRuleBatch(env: Env, minute: number, ruleIds: readonly string[], budget?: EvaluationBudget): Promise<EvaluationReport> {
  const rows = await env.DB.prepare(RULES_OF_BATCH_SQL).bind(JSON.stringify(ruleIds), minute).all<DueRule>();
  return evaluateRules(env, minute, rows.results, budget);
}

/** The key of the read a rule needs: rules with the same one share it. */
export function readKeyOf(rule: Pick<RuleRow, "organization_id" | "project_id" | "run_id" | "filters" | "window_minutes">): string {
  return JSON.stringify([rule.organization_id, rule.project_id, rule.run_id, rule.filters, rule.window_minutes]);
}

/** How long a read refused a scan slot waits for one (the Retry-After) before the rule shows the 429. */
const SCAN_SLOT_WAIT_MS = 20_000;

async function evaluateRules(env: Env, minute: number, rules: DueRule[], budget?: EvaluationBudget): Promise<EvaluationReport> {
  const started = Date.now();
  const report: EvaluationReport = { minute, due: rules.length, reads: 0, changed: 0, notifications: 0, failed: 0, left: [] };
  const groups = new Map<string, DueRule[]>();
  for (const rule of rules) {
    const key = readKeyOf(rule);
    const group = groups.get(key);
    if (group) group.push(rule);
    else groups.set(key, [rule]);
  }
  // An organization's reads go through its scan admission as its dashboards' do: as many at once
  // as it has scan slots (ORG_CONCURRENT_SCANS), in lanes; organizations side by side,
  // READS_IN_FLIGHT at most (Workers allow 6 connections at once).
  const perOrganization = Math.max(1, Math.min(READS_IN_FLIGHT, scanPolicy(env).maxConcurrent));
  const lanesByOrganization = new Map<string, DueRule[][][]>();
  for (const group of groups.values()) {
    const organization = group[0]!.organization_id;
    let lanes = lanesByOrganization.get(organization);
    if (!lanes) lanesByOrganization.set(organization, (lanes = []));
    const count = lanes.reduce((sum, lane) => sum + lane.length, 0);
    if (lanes.length < perOrganization) lanes.push([group]);
    else lanes[count % perOrganization]!.push(group);
  }
  const lanes = [...lanesByOrganization.values()].flat();
  const readWithSlotWait = async (first: DueRule) => {
    const window = {
      organizationId: first.organization_id,
      projectId: first.project_id,
      runId: first.run_id,
      filters: JSON.parse(first.filters) as unknown[],
      startMicros: (minute - first.window_minutes) * MINUTE_MICROS,
      endMicros: minute * MINUTE_MICROS,
      windowMinutes: first.window_minutes,
    };
    for (;;) {
      try {
        return await windowFigures(env, window);
      } catch (error) {
        // The organization's scan slots are busy: wait as the 429 says while the minute allows,
        // rather than leave the rule a minute late (docs/alerts.md, "Scan admission").
        const wait = error instanceof ApiError && error.status === 429 ? Number(error.headers["Retry-After"] ?? 1) * 1000 : Number.NaN;
        if (!(wait > 0) || Date.now() + wait - started > SCAN_SLOT_WAIT_MS) throw error;
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  };
  const evaluateGroup = async (group: DueRule[]) => {
    const first = group[0]!;
    let figures: Record<string, number | null>;
    try {
      report.reads += 1;
      figures = await readWithSlotWait(first);
    } catch (error) {
      report.failed += group.length;
      await recordFailures(env, group, minute, error);
      return;
    }
    // Every rule of the group in one batch: each rule's statements follow its own transition, so
    // its `changes() = 1` guards read that transition's count (D1 runs a batch's statements in order).
    const settlements = group.map((rule) => settlementOf(env, rule, minute, figures));
    let results: D1Result[];
    try {
      results = await env.DB.batch(settlements.flatMap((s) => s.statements));
    } catch (error) {
      // Nothing of the batch was written: the rules stay due and are tried again next minute.
      report.failed += group.length;
      console.error(`alerts: the evaluations of ${group.length} rule(s) could not be written: ${error instanceof Error ? error.message : String(error)}`);
      return;
    }
    let at = 0;
    const deliveries: string[] = [];
    for (const settlement of settlements) {
      const won = (results[at]?.meta.changes ?? 0) === 1;
      at += settlement.statements.length;
      if (!won) continue;
      if (settlement.changes) report.changed += 1;
      if (settlement.deliveries.length > 0) report.notifications += 1;
      deliveries.push(...settlement.deliveries);
    }
    // Queued as soon as they are written, not after the whole run: a rule evaluated early is
    // delivered early. A failure leaves them to the cron's outbox sweep (delivery-outbox.ts).
    if (deliveries.length > 0) {
      await queueDeliveries(env, deliveries, nowMicros()).catch((error) => {
        console.error(`alerts: ${deliveries.length} deliveries not queued yet (the next cron run sends them): ${error instanceof Error ? error.message : String(error)}`);
      });
    }
  };
  // Reads in flight count against the budget before they start: a read begun is paid in full.
  let committed = 0;
  const worker = async () => {
    for (let lane = lanes.shift(); lane; lane = lanes.shift()) {
      for (let group = lane.shift(); group; group = lane.shift()) {
        if (budget && budget.trips.count + (committed + 1) * TRIPS_PER_READ_WORST > budget.maxTrips) {
          report.left.push(...group.map((r) => r.id), ...lane.flat().map((r) => r.id));
          lane.length = 0;
          break;
        }
        committed += 1;
        await evaluateGroup(group);
        committed -= 1;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(READS_IN_FLIGHT, lanes.length) }, worker));
  return report;
}

/** Why the value could not be read, as the rule shows it (never a stack or SQL). */
function failureText(error: unknown): string {
  if (error instanceof ApiError) return `${error.status}: ${error.detail}`;
  if (error instanceof RequestValidationError) return `the rule's filters are no longer valid: ${error.items.map((i) => `${i.loc.join(".")}: ${i.msg}`).join("; ")}`;
  return "the metrics could not be read (internal error); retrying next minute";
}

/** The evaluation failed: the states stand, the reason shows on the rules, and they are due again next minute (one statement). */
async function recordFailures(env: Env, rules: DueRule[], minute: number, error: unknown): Promise<void> {
  if (!(error instanceof ApiError) && !(error instanceof RequestValidationError)) {
    console.error(`alerts: ${rules.length} rule(s) could not be evaluated: ${error instanceof Error ? error.name : "error"}`);
  }
  await env.DB.prepare(
    `UPDATE alert_rules SET last_error = ?2, next_due_minute = ?3
      WHERE enabled = 1 AND EXISTS (SELECT 1 FROM json_each(?1) AS d WHERE d.value ->> 0 = alert_rules.id AND d.value ->> 1 = alert_rules.next_due_minute)`,
  )
    .bind(JSON.stringify(rules.map((r) => [r.id, r.next_due_minute])), failureText(error).slice(0, 1000), minute + 1)
    .run();
}

interface Settlement {
  /** The conditional transition first, then the history row and the deliveries it guards. */
  statements: D1PreparedStatement[];
  changes: boolean;
  /** The delivery ids, queued when the transition was won. */
  deliveries: string[];
}

/** One rule's evaluation as statements: the conditional transition, then its history and deliveries. */
function settlementOf(env: Env, rule: DueRule, minute: number, figures: Record<string, number | null>): Settlement {
  const traceCount = figures.trace_count ?? 0;
  const value = figures[rule.metric] ?? null;
  const noData = traceCount === 0 || value === null;
  const next = nextState({ comparison: rule.comparison, threshold: rule.threshold, warningThreshold: rule.warning_threshold, noData: rule.no_data }, rule.state, traceCount, value);
  const type = notificationFor(rule.state, next, minute, rule.last_notified_minute, rule.renotify_minutes);
  const evaluatedMicros = minute * MINUTE_MICROS;
  const windowStart = (minute - rule.window_minutes) * MINUTE_MICROS;
  const shownValue = noData ? null : value;
  const nextDue = dueMinuteFrom(rule.created_minute, rule.evaluate_every_minutes, minute + 1);
  const statements = [
    env.DB.prepare(
      `UPDATE alert_rules SET state = ?4, state_since = CASE WHEN state = ?4 THEN state_since ELSE ?5 END, last_value = ?6, last_evaluated_minute = ?7,
         last_error = NULL, next_due_minute = ?8, last_notified_minute = ?9
       WHERE id = ?1 AND next_due_minute = ?2 AND state = ?3 AND enabled = 1`,
    ).bind(rule.id, rule.next_due_minute, rule.state, next, evaluatedMicros, shownValue, minute, nextDue, type ? minute : rule.last_notified_minute),
  ];
  if (next !== rule.state) {
    const line = next === "warning" ? rule.warning_threshold : rule.threshold;
    statements.push(
      env.DB.prepare(
        `INSERT OR IGNORE INTO alert_history (rule_id, minute, state, previous_state, value, threshold, window_start, window_end, at)
         SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9 WHERE changes() = 1`,
      ).bind(rule.id, minute, next, rule.state, shownValue, line, windowStart, evaluatedMicros, evaluatedMicros),
    );
  }
  const deliveries: [string, string, string][] = [];
  if (type) {
    const context = {
      rule,
      projectName: rule.project_name,
      runName: rule.run_name,
      value: shownValue,
      windowStartMicros: windowStart,
      windowEndMicros: evaluatedMicros,
      evaluatedMicros,
      publicUrl: env.PUBLIC_URL,
    };
    for (const channelId of JSON.parse(rule.channel_ids) as string[]) {
      const id = newWebhookId();
      deliveries.push([id, channelId, JSON.stringify(notificationPayload(id, type, context))]);
    }
    if (deliveries.length > 0) {
      // Only to enabled channels: a disabled one shows why it is off, and gets nothing until enabled.
      statements.push(
        env.DB.prepare(
          `INSERT OR IGNORE INTO alert_deliveries (id, channel_id, rule_id, minute, type, payload, created_at)
           SELECT d.value ->> 0, d.value ->> 1, ?1, ?2, ?3, d.value ->> 2, ?4 FROM json_each(?5) AS d
            WHERE changes() = 1 AND EXISTS (SELECT 1 FROM notification_channels AS nc WHERE nc.id = d.value ->> 1 AND nc.enabled = 1)`,
        ).bind(rule.id, minute, type, nowMicros(), JSON.stringify(deliveries)),
      );
    }
  }
  return { statements, changes: next !== rule.state, deliveries: deliveries.map(([id]) => id) };
}
