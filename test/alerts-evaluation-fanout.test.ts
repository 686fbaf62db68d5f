/**
 * One minute's alert evaluation spread over the evaluation queue (src/alerts/evaluation-fanout.ts,
 * docs/alerts.md "Evaluation"): the cron makes one read and no evaluation (a Worker invocation may
 * make 1,000 D1 queries, and each distinct metrics read costs about 4), each batch stays within
 * its invocation's round trips and hands the rest on, and a batch delivered twice, or two at once,
 * notifies once per evaluation.
 */
import { createExecutionContext, createMessageBatch, env, getQueueResult } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { runAlertCron } from "../src/alerts/alert-cron";
import { TRIPS_PER_READ_WORST } from "../src/alerts/evaluate-due-rules";
import {
  batchesOf,
  DUE_KEYS_SQL,
  evaluateBatchMessage,
  handleAlertEvaluationQueue,
  INVOCATION_TRIPS,
  READS_PER_BATCH,
  RULES_PER_BATCH,
} from "../src/alerts/evaluation-fanout";
import type { AlertEvaluationMessage } from "../src/env";
import { countingEnv, type RoundTripCounter } from "../src/http/d1-round-trips";
import { call } from "./support/client";
import { createTenant, type Tenant } from "./support/tenants";

const RULES = 60;
const DEAD_URL = "http://127.0.0.1:9/hook";
let admin: Tenant;
let projectId: string;
let stream: string;
let ruleIds: string[];
/** The minute evaluated first: in the future, so that the rules are due and the traces in every window. */
const t0 = Math.floor(Date.now() / 60_000) + 30;

const evaluatedAt = async (minute: number) =>
  (await env.DB.prepare("SELECT count(*) AS n FROM alert_rules WHERE id IN (SELECT value FROM json_each(?1)) AND last_evaluated_minute = ?2").bind(JSON.stringify(ruleIds), minute).first<{ n: number }>())!.n;

const deliveriesPerRule = async (minute: number) =>
  (await env.DB.prepare("SELECT rule_id, count(*) AS n FROM alert_deliveries WHERE minute = ?1 AND rule_id IN (SELECT value FROM json_each(?2)) GROUP BY rule_id").bind(minute, JSON.stringify(ruleIds)).all<{ rule_id: string; n: number }>()).results;

async function until(what: string, check: () => Promise<boolean>, ms = 40_000) {
  for (const started = Date.now(); Date.now() - started < ms; await new Promise((r) => setTimeout(r, 200))) if (await check()) return;
  throw new Error(`timed out waiting for ${what}`);
}

const patchRule = (id: string, body: Record<string, unknown>) => call(`/v2/projects/${projectId}/alerts/${id}`, { as: admin, method: "PATCH", body });

beforeAll(async () => {
  admin = await createTenant();
  projectId = (await call("/v2/projects", { as: admin, body: { name: "fan-out" } })).body.id;
  stream = (await call(`/v2/projects/${projectId}/log_streams`, { as: admin, body: { name: "default" } })).body.id;
  const hook = (await call("/v2/notification_channels", { as: admin, body: { name: "fan-out", type: "webhook", url: DEAD_URL } })).body.id;
  const traces = await call(`/v2/projects/${projectId}/traces`, { as: admin, body: { log_stream_id: stream, traces: [{ name: "a", created_at: new Date((t0 - 1) * 60_000).toISOString() }] } });
  expect(traces.status).toBe(200);
  ruleIds = [];
  for (let i = 0; i < RULES; i += 1) {
    // A distinct window each: 60 distinct metrics reads. Every third crosses at t0.
    const created = await call(`/v2/projects/${projectId}/alerts`, {
      as: admin,
      body: { name: `r${i}`, log_stream_id: stream, metric: "trace_count", window_minutes: 5 + i, comparison: "gt", threshold: i % 3 === 0 ? 0 : 1e9, evaluate_every_minutes: 1, channel_ids: [hook] },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    ruleIds.push(created.body.id);
  }
});

describe("one minute's evaluation over the evaluation queue", () => {
  it("packs due rules into batches of bounded reads, rules sharing a read together", () => {
    const key = (id: string, read: number) => ({ id, organization_id: "o", project_id: "p", run_id: "r", filters: "[]", window_minutes: 5 + read });
    const distinct = Array.from({ length: 1000 }, (_, i) => key(`d${i}`, i));
    const batches = batchesOf(distinct);
    expect(batches).toHaveLength(Math.ceil(1000 / READS_PER_BATCH));
    expect(batches.flat().sort()).toEqual(distinct.map((r) => r.id).sort());
    // 450 rules of one read, then 10 rules of 10 reads: the shared read fills batches of RULES_PER_BATCH.
    const shared = [...Array.from({ length: 450 }, (_, i) => key(`s${i}`, 0)), ...Array.from({ length: 10 }, (_, i) => key(`o${i}`, 1 + i))];
    const packed = batchesOf(shared);
    expect(packed.every((b) => b.length <= RULES_PER_BATCH)).toBe(true);
    expect(packed.flat()).toHaveLength(460);
  });

  it("finds due rules through the index that matches", async () => {
    const plan = await env.DB.prepare(`EXPLAIN QUERY PLAN ${DUE_KEYS_SQL}`).bind(1, 10).all<{ detail: string }>();
    expect(plan.results.map((r) => r.detail).join("\n")).toMatch(/SEARCH r USING INDEX alert_rules_due \(next_due_minute<\?\)/);
  });

  it("the cron makes a few D1 round trips whatever the due rules, and the queue evaluates them all", async () => {
    const trips: RoundTripCounter = { count: 0 };
    await runAlertCron(countingEnv(env, trips), t0 * 60_000);
    // The due rules' read and the outbox's sweep: not 4 round trips per distinct read.
    expect(trips.count).toBeLessThanOrEqual(4);
    await until("every rule evaluated by the evaluation queue's consumer", async () => (await evaluatedAt(t0)) === RULES);
    // One change of state each for the crossing rules, and at most one delivery each (the dead
    // address's failures disable the channel after 20, and a disabled channel gets nothing).
    const history = await env.DB.prepare("SELECT rule_id, count(*) AS n FROM alert_history WHERE minute = ?1 AND rule_id IN (SELECT value FROM json_each(?2)) GROUP BY rule_id").bind(t0, JSON.stringify(ruleIds)).all<{ n: number }>();
    expect(history.results).toHaveLength(RULES / 3);
    expect(history.results.every((h) => h.n === 1)).toBe(true);
    const firing = await deliveriesPerRule(t0);
    expect(firing.length).toBeGreaterThan(0);
    expect(firing.every((d) => d.n === 1)).toBe(true);
    const states = await env.DB.prepare("SELECT state, count(*) AS n FROM alert_rules WHERE id IN (SELECT value FROM json_each(?1)) GROUP BY state ORDER BY state").bind(JSON.stringify(ruleIds)).all<{ state: string; n: number }>();
    expect(states.results).toEqual([{ state: "firing", n: RULES / 3 }, { state: "ok", n: (2 * RULES) / 3 }]);
  });

  it("a batch delivered twice, or two at once, notifies once per evaluation, within the invocation's round trips", async () => {
    await until("the minute before evaluated", async () => (await evaluatedAt(t0)) === RULES);
    // Ten quiet rules now cross at t0 + 1: ten notifications due, once each (to a fresh channel:
    // the first one's failed deliveries to a dead address may have disabled it).
    const fresh = (await call("/v2/notification_channels", { as: admin, body: { name: "fan-out 2", type: "webhook", url: DEAD_URL } })).body.id;
    const crossing = ruleIds.filter((_, i) => i % 3 === 1).slice(0, 10);
    for (const id of crossing) expect((await patchRule(id, { threshold: 0, channel_ids: [fresh] })).status).toBe(200);
    const body: AlertEvaluationMessage = { minute: t0 + 1, ruleIds: ruleIds.slice(0, 60) };
    const batchOf = () => createMessageBatch<AlertEvaluationMessage>("trace-store-alert-evaluations", [{ id: crypto.randomUUID(), timestamp: new Date(), attempts: 1, body }]);
    const trips = [{ count: 0 }, { count: 0 }];
    const [a, b] = await Promise.all(trips.map((counter) => evaluateBatchMessage(env, body, counter)));
    for (const counter of trips) expect(counter.count).toBeLessThanOrEqual(INVOCATION_TRIPS);
    expect(a!.left.length + b!.left.length).toBe(0);
    // The queue redelivers the same batch: nothing is due any more, nothing is sent.
    const ctx = createExecutionContext();
    const redelivered = batchOf();
    await handleAlertEvaluationQueue(redelivered, env);
    expect((await getQueueResult(redelivered, ctx)).explicitAcks).toHaveLength(1);
    expect(await evaluatedAt(t0 + 1)).toBe(RULES);
    const sent = await deliveriesPerRule(t0 + 1);
    expect(sent.map((d) => d.rule_id).sort()).toEqual([...crossing].sort());
    expect(sent.every((d) => d.n === 1)).toBe(true);
  });

  it("a batch that would pass its invocation's round trips evaluates what fits and hands the rest on", async () => {
    await until("the minute before evaluated", async () => (await evaluatedAt(t0 + 1)) === RULES);
    const trips: RoundTripCounter = { count: 0 };
    // Room for the batch's read of its rules and three metrics reads at their worst (a read is
    // started only when its worst case fits beside those in flight).
    const report = await evaluateBatchMessage(env, { minute: t0 + 2, ruleIds }, trips, 1 + 3 * TRIPS_PER_READ_WORST);
    expect(report.reads).toBeGreaterThanOrEqual(3);
    expect(report.reads).toBeLessThan(RULES);
    expect(report.left).toHaveLength(RULES - report.reads);
    expect(trips.count).toBeLessThanOrEqual(1 + 3 * TRIPS_PER_READ_WORST);
    // The rest went on as a new message, evaluated by the queue's consumer.
    await until("the handed-on rules evaluated", async () => (await evaluatedAt(t0 + 2)) === RULES);
  });
});
