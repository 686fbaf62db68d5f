/**
 * One minute's evaluation, spread over the alert evaluation queue (wrangler.toml
 * `trace-store-alert-evaluations`; docs/alerts.md, "Evaluation").
 *
 * Why: a Worker invocation may make 1,000 D1 queries (Workers Paid), and each distinct metrics
 * read costs about 4 round trips with its write; 1,000 due rules of distinct reads do not fit in
 * the cron's invocation. So the cron makes one indexed read of the due rules (their read keys
 * only), packs them into batches of at most READS_PER_BATCH distinct reads and RULES_PER_BATCH
 * rules (rules sharing a read stay together), and sends one message per batch. The consumer takes
 * one message per invocation (max_batch_size 1), re-reads the batch's rules that are still due and
 * evaluates them with the same conditional transitions as before: a redelivered or duplicated
 * message, or the next minute's cron sending a rule again before it was evaluated, finds it no
 * longer due or loses the compare-and-set, so one evaluation notifies once.
 *
 * Bounds per consumer invocation: 1 read of the rules + READS_PER_BATCH x (about 4, at most
 * TRIPS_PER_READ_WORST) round trips, checked as it goes against INVOCATION_TRIPS (well inside
 * 1,000): a batch that would pass it hands its rest on as a new message.
 */
import type { AlertEvaluationMessage, Env } from "../env";
import { countingEnv, type RoundTripCounter } from "../http/d1-round-trips";
import { evaluateRuleBatch, readKeyOf, type EvaluationReport } from "./evaluate-due-rules";
import type { RuleRow } from "./rule-store";

export const ALERT_EVALUATION_QUEUE_NAME = "trace-store-alert-evaluations";

/** Distinct metrics reads per message: about 4 round trips each, so about 200 of the 1,000. */
export const READS_PER_BATCH = 50;
/** Rules per message (rules sharing a read cost a statement each in its write batch). */
export const RULES_PER_BATCH = 200;
/** D1 round trips a consumer invocation allows itself: 1,000 on Workers Paid, with room. */
export const INVOCATION_TRIPS = 800;
/** Rules one cron run hands out at most (the rest stay due, oldest first next minute). */
export const MAX_RULES_PER_MINUTE = 5_000;
/** Messages per sendBatch (Queues' limit is 100). */
const SEND_BATCH = 100;

type DueKey = Pick<RuleRow, "id" | "organization_id" | "project_id" | "run_id" | "filters" | "window_minutes">;

/** The due rules' read keys, oldest due first, through `alert_rules_due` (one indexed read). */
export const DUE_KEYS_SQL = `SELECT r.id, r.organization_id, r.project_id, r.run_id, r.filters, r.window_minutes
  FROM alert_rules AS r WHERE r.enabled = 1 AND r.next_due_minute <= ?1 ORDER BY r.next_due_minute LIMIT ?2`;

/**
 * Packs rules into batches: rules of one read together, at most READS_PER_BATCH reads and
 * RULES_PER_BATCH rules a batch (a read shared by more rules than that gets batches of its own).
 * An organization's reads are spread over as many batches as it takes, so that its rules are
 * evaluated side by side by several consumers, each within the organization's scan admission.
 */
export function batchesOf(rules: readonly DueKey[]): string[][] {
  const groups = new Map<string, string[]>();
  for (const rule of rules) {
    const key = readKeyOf(rule);
    const group = groups.get(key);
    if (group) group.push(rule.id);
    else groups.set(key, [rule.id]);
  }
  const batches: string[][] = [];
  let current: string[] = [];
  let reads = 0;
  for (const group of groups.values()) {
    for (let i = 0; i < group.length; i += RULES_PER_BATCH) {
      const part = group.slice(i, i + RULES_PER_BATCH);
      if (reads + 1 > READS_PER_BATCH || current.length + part.length > RULES_PER_BATCH) {
        batches.push(current);
        current = [];
        reads = 0;
      }
      current.push(...part);
      reads += 1;
    }
  }
  if (current.length > 0) batches.push(current);
  return batches;
}

export interface FanOutReport {
  minute: number;
  due: number;
  messages: number;
}

/** The cron's share: find the due rules (one read) and send their batches (no evaluation here). */
export async function enqueueDueEvaluations(env: Env, scheduledTimeMs: number): Promise<FanOutReport> {
  const minute = Math.floor(scheduledTimeMs / 60_000);
  const rows = await env.DB.prepare(DUE_KEYS_SQL).bind(minute, MAX_RULES_PER_MINUTE).all<DueKey>();
  const batches = batchesOf(rows.results);
  const messages = batches.map((ruleIds) => ({ body: { minute, ruleIds } satisfies AlertEvaluationMessage }));
  for (let i = 0; i < messages.length; i += SEND_BATCH) await env.ALERT_EVALUATION_QUEUE.sendBatch(messages.slice(i, i + SEND_BATCH));
  return { minute, due: rows.results.length, messages: messages.length };
}

function isEvaluationMessage(body: unknown): body is AlertEvaluationMessage {
  const b = body as Partial<AlertEvaluationMessage> | null;
  return typeof b?.minute === "number" && Number.isInteger(b.minute) && Array.isArray(b.ruleIds) && b.ruleIds.length <= RULES_PER_BATCH && b.ruleIds.every((id) => typeof id === "string");
}

/**
 * Evaluates one batch within the invocation's round trips; what did not fit goes on as a new
 * message. Returns the report and the round trips spent (the log line's figures).
 */
export async function evaluateBatchMessage(env: Env, body: AlertEvaluationMessage, trips: RoundTripCounter, maxTrips = INVOCATION_TRIPS): Promise<EvaluationReport> {
  const report = await evaluateRuleBatch(countingEnv(env, trips), body.minute, body.ruleIds, { trips, maxTrips });
  if (report.left.length > 0) await env.ALERT_EVALUATION_QUEUE.send({ minute: body.minute, ruleIds: report.left });
  return report;
}

export async function handleAlertEvaluationQueue(batch: MessageBatch<AlertEvaluationMessage>, env: Env): Promise<void> {
  // One budget for the whole invocation, whatever the batch size the queue was configured with.
  const trips: RoundTripCounter = { count: 0 };
  for (const message of batch.messages) {
    if (!isEvaluationMessage(message.body)) {
      message.ack(); // not ours to retry: nothing in it can be evaluated
      continue;
    }
    try {
      const started = Date.now();
      const before = trips.count;
      const report = await evaluateBatchMessage(env, message.body, trips);
      // The operators' (and the bench's) line: counts only, nothing of the rules.
      console.log(
        `alerts: minute ${report.minute}: batch of ${message.body.ruleIds.length}: ${report.due} due rules, ${report.reads} metrics reads, ${report.changed} changes of state, ${report.notifications} notifications, ${report.failed} failed, ${report.left.length} handed on, ${trips.count - before} D1 round trips, ${Date.now() - started} ms`,
      );
      message.ack();
    } catch (error) {
      // The database or the queue failed us: again shortly (the transitions make a rerun safe).
      console.error(`alerts: evaluation batch failed: ${error instanceof Error ? error.message : String(error)}`);
      message.retry({ delaySeconds: 5 });
    }
  }
}
