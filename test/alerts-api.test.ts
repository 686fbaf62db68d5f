/**
 * Alerts (contract section 16) through the worker's real entry point: notification channels
 * (secrets shown once, address rules, roles, tenancy, the delivery log and disabling after 20
 * failures), alert rules (validation, roles, tenancy, PATCH keeping state), and the cron's
 * evaluation: the value metrics/search gives for the same window and filter, notifications on a
 * change of state and on renotify only, never two for one evaluation (a second run of the minute,
 * two runs at once), history newest first.
 */
import { createExecutionContext, createScheduledController, env, waitOnExecutionContext } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import worker from "../src/index";
import { DUE_RULES_SQL, evaluateDueRules } from "../src/alerts/evaluate-due-rules";
import { call } from "./support/client";
import { addUser, createTenant, type Tenant } from "./support/tenants";

let admin: Tenant;
let member: Tenant;
let projectId: string;
let stream: string;
/** A receiver nobody listens on: deliveries fail at once (connection refused). */
const DEAD_URL = "http://127.0.0.1:9/hook";

const channel = async (body: Record<string, unknown> = {}, as: Tenant = admin) =>
  call("/v2/notification_channels", { as, body: { name: "on-call", type: "webhook", url: DEAD_URL, ...body } });

const rule = async (body: Record<string, unknown>, as: Tenant = admin, project = projectId) =>
  call(`/v2/projects/${project}/alerts`, { as, body: { name: "errors", log_stream_id: stream, metric: "error_count", window_minutes: 10, comparison: "gt", threshold: 1, ...body } });

const nowMinute = () => Math.floor(Date.now() / 60_000);
const iso = (minute: number, second = 0) => new Date(minute * 60_000 + second * 1000).toISOString();

async function ingest(traces: Record<string, unknown>[]) {
  const answer = await call(`/v2/projects/${projectId}/traces`, { as: admin, body: { log_stream_id: stream, traces } });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
}

const deliveriesOf = (ruleId: string) =>
  env.DB.prepare("SELECT id, channel_id, type, payload, minute FROM alert_deliveries WHERE rule_id = ?1 ORDER BY minute, id").bind(ruleId).all<{ id: string; channel_id: string; type: string; payload: string; minute: number }>().then((r) => r.results);

beforeAll(async () => {
  admin = await createTenant();
  member = await addUser(admin, "member");
  projectId = (await call("/v2/projects", { as: admin, body: { name: "alerts" } })).body.id;
  stream = (await call(`/v2/projects/${projectId}/log_streams`, { as: admin, body: { name: "default" } })).body.id;
});

describe("notification channels", () => {
  it("shows a webhook's signing secret once, and never again", async () => {
    const created = await channel();
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body).toMatchObject({ name: "on-call", type: "webhook", url: DEAD_URL, enabled: true, disabled_reason: null, consecutive_failures: 0 });
    expect(created.body.signing_secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const secret = created.body.signing_secret as string;
    const one = await call(`/v2/notification_channels/${created.body.id}`, { as: member });
    const list = await call("/v2/notification_channels", { as: member });
    expect(one.status).toBe(200);
    for (const answer of [one, list]) {
      const text = JSON.stringify(answer.body);
      expect(text).not.toContain("signing_secret");
      expect(text).not.toContain(secret.slice(6, 20));
    }
    // Nor is it stored as it was shown.
    const stored = await env.DB.prepare("SELECT * FROM notification_channels WHERE id = ?1").bind(created.body.id).first();
    expect(JSON.stringify(stored)).not.toContain(secret.slice(6, 20));
  });

  it("masks a Slack URL (a credential) and gives no secret", async () => {
    const created = await channel({ type: "slack", url: "http://127.0.0.1:9/services/T000/B000/XXXXSECRETTOKEN" });
    expect(created.status).toBe(200);
    expect(created.body.signing_secret).toBeUndefined();
    expect(JSON.stringify(created.body)).not.toContain("XXXXSECRETTOKEN");
    const listed = await call("/v2/notification_channels", { as: admin });
    expect(JSON.stringify(listed.body)).not.toContain("XXXXSECRETTOKEN");
  });

  it("refuses bad input with FastAPI-shaped 422s, and members and other organizations", async () => {
    for (const [body, loc, type] of [
      [{ url: "not a url" }, ["body", "url"], "value_error"],
      [{ url: "ftp://example.com/x" }, ["body", "url"], "value_error"],
      [{ url: "https://user:pw@example.com/x" }, ["body", "url"], "value_error"],
      [{ type: "pagerduty" }, ["body", "type"], "literal_error"],
      [{ name: "" }, ["body", "name"], "string_too_short"],
    ] as const) {
      const answer = await channel(body as Record<string, unknown>);
      expect(answer.status, JSON.stringify(body)).toBe(422);
      expect(answer.body.detail[0]).toMatchObject({ loc, type });
    }
    expect((await channel({}, member)).status).toBe(403);
    const created = (await channel()).body;
    const other = await createTenant();
    expect((await call(`/v2/notification_channels/${created.id}`, { as: other })).status).toBe(404);
    expect((await call(`/v2/notification_channels/${created.id}`, { as: other, method: "DELETE" })).status).toBe(404);
    expect((await call(`/v2/notification_channels/${created.id}/test`, { as: member, method: "POST" })).status).toBe(403);
    expect((await call("/v2/notification_channels", { as: other })).body).toEqual([]);
    expect((await call(`/v2/notification_channels/not-a-uuid`, { as: admin })).body.detail[0]).toMatchObject({ loc: ["path", "channel_id"], type: "uuid_parsing" });
  });

  it("logs every attempt and disables a channel after 20 failures in a row, saying why; enable turns it back on", async () => {
    const created = (await channel({ name: "dead" })).body;
    // Each test event is tried twice within the tests' 1-second retry window (vitest.config.ts).
    for (let i = 0; i < 12; i += 1) expect((await call(`/v2/notification_channels/${created.id}/test`, { as: admin, method: "POST" })).status).toBe(202);
    await expect
      .poll(async () => (await call(`/v2/notification_channels/${created.id}`, { as: admin })).body, { timeout: 20_000, interval: 250 })
      .toMatchObject({ enabled: false, disabled_reason: expect.stringContaining("20 failed deliveries in a row") });
    const log = await call(`/v2/notification_channels/${created.id}/deliveries`, { as: member });
    expect(log.status).toBe(200);
    expect(log.body.length).toBeGreaterThanOrEqual(20);
    expect(log.body[0]).toMatchObject({ type: "test", status: null, error: expect.stringContaining("could not connect") });
    expect(log.body[0].webhook_id).toMatch(/^msg_/);
    expect(typeof log.body[0].latency_ms).toBe("number");
    // Retries keep their webhook-id: fewer distinct ids than attempts.
    expect(new Set(log.body.map((a: { webhook_id: string }) => a.webhook_id)).size).toBeLessThan(log.body.length);
    expect((await call(`/v2/notification_channels/${created.id}/test`, { as: admin, method: "POST" })).status).toBe(409);
    const enabled = await call(`/v2/notification_channels/${created.id}/enable`, { as: admin, method: "POST" });
    expect(enabled.body).toMatchObject({ enabled: true, disabled_reason: null, consecutive_failures: 0 });
  });
});

describe("alert rules", () => {
  let channelId: string;
  beforeAll(async () => {
    channelId = (await channel({ name: "rules" })).body.id;
  });

  it("creates a rule with the contract's defaults; members read it, only admins write", async () => {
    const created = await rule({ channel_ids: [channelId] });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body).toMatchObject({
      name: "errors", log_stream_id: stream, metric: "error_count", filters: [], window_minutes: 10, comparison: "gt", threshold: 1,
      warning_threshold: null, evaluate_every_minutes: 5, no_data: "ok", renotify_minutes: null, channel_ids: [channelId], enabled: true, state: "ok",
      last_value: null, last_evaluated_at: null,
    });
    expect((await call(`/v2/projects/${projectId}/alerts/${created.body.id}`, { as: member })).body.id).toBe(created.body.id);
    expect((await call(`/v2/projects/${projectId}/alerts?log_stream_id=${stream}`, { as: member })).body.map((r: { id: string }) => r.id)).toContain(created.body.id);
    expect((await rule({ channel_ids: [channelId] }, member)).status).toBe(403);
    expect((await call(`/v2/projects/${projectId}/alerts/${created.body.id}`, { as: member, method: "PATCH", body: { threshold: 3 } })).status).toBe(403);
    expect((await call(`/v2/projects/${projectId}/alerts/${created.body.id}`, { as: member, method: "DELETE" })).status).toBe(403);
  });

  it("refuses what is not a rule with 422s naming the field", async () => {
    const other = await createTenant();
    const foreign = (await channel({}, other)).body.id;
    const cases: [Record<string, unknown>, (string | number)[]][] = [
      [{ channel_ids: [channelId], metric: "colour" }, ["body", "metric"]],
      [{ channel_ids: [channelId], window_minutes: 4 }, ["body", "window_minutes"]],
      [{ channel_ids: [channelId], window_minutes: 1441 }, ["body", "window_minutes"]],
      [{ channel_ids: [channelId], evaluate_every_minutes: 61 }, ["body", "evaluate_every_minutes"]],
      [{ channel_ids: [channelId], comparison: "eq" }, ["body", "comparison"]],
      [{ channel_ids: [channelId], warning_threshold: 5 }, ["body", "warning_threshold"]],
      [{ channel_ids: [channelId], no_data: "maybe" }, ["body", "no_data"]],
      [{ channel_ids: [] }, ["body", "channel_ids"]],
      [{ channel_ids: [foreign] }, ["body", "channel_ids", 0]],
      [{ channel_ids: [channelId], filters: [{ type: "text", column_id: "nope", value: "x" }] }, ["body", "filters", 0, "column_id"]],
      [{ channel_ids: [channelId], log_stream_id: undefined }, ["body"]],
      [{ channel_ids: [channelId], threshold: "high" }, ["body", "threshold"]],
    ];
    for (const [body, loc] of cases) {
      const answer = await rule(body);
      expect(answer.status, JSON.stringify(body)).toBe(422);
      expect(answer.body.detail.map((d: { loc: unknown }) => d.loc), JSON.stringify(answer.body)).toContainEqual(loc);
    }
  });

  it("is a 404 for another organization's project, run or rule", async () => {
    const other = await createTenant();
    const otherChannel = (await channel({}, other)).body.id;
    expect((await rule({ channel_ids: [otherChannel] }, other)).status).toBe(404);
    const mine = (await rule({ channel_ids: [channelId] })).body.id;
    expect((await call(`/v2/projects/${projectId}/alerts/${mine}`, { as: other })).status).toBe(404);
    expect((await call(`/v2/projects/${projectId}/alerts/${mine}/history`, { as: other })).status).toBe(404);
    expect((await call(`/v2/projects/${projectId}/alerts`, { as: other })).status).toBe(404);
  });

  it("drops a deleted channel from its rules", async () => {
    const spare = (await channel({ name: "spare" })).body.id;
    const created = (await rule({ channel_ids: [channelId, spare] })).body;
    expect(created.channel_ids).toHaveLength(2);
    expect((await call(`/v2/notification_channels/${spare}`, { as: admin, method: "DELETE" })).status).toBe(200);
    expect((await call(`/v2/projects/${projectId}/alerts/${created.id}`, { as: admin })).body.channel_ids).toEqual([channelId]);
  });
});

describe("evaluation by the cron", () => {
  it("computes metrics/search's value, notifies on changes of state only, once per evaluation, with history newest first", async () => {
    const hook = (await channel({ name: "evaluation" })).body.id;
    // Evaluations in minutes after now (the rule is due from its creation minute on), over traces
    // created in those windows (at most 24 hours ahead is allowed).
    const t0 = nowMinute() + 30;
    const created = (await rule({ name: "error spike", window_minutes: 10, threshold: 2, warning_threshold: 1, evaluate_every_minutes: 1, renotify_minutes: 2, channel_ids: [hook] })).body;
    await ingest([
      { name: "a", created_at: iso(t0 - 5), status_code: 500 },
      { name: "a", created_at: iso(t0 - 4), status_code: 200 },
      { name: "b", created_at: iso(t0 - 3, 30), status_code: 503 }, // t0 - 2:30
      { name: "b", created_at: iso(t0 - 1), error_message: "boom" },
      { name: "a", created_at: iso(t0), status_code: 500 }, // outside [t0 - 10, t0)
    ]);
    const first = await evaluateDueRules(env, t0 * 60_000);
    expect(first.due).toBeGreaterThanOrEqual(1);
    const after = (await call(`/v2/projects/${projectId}/alerts/${created.id}`, { as: admin })).body;
    const metrics = await call(`/v2/projects/${projectId}/metrics/search`, { as: admin, body: { log_stream_id: stream, start_time: iso(t0 - 10), end_time: iso(t0), interval: 10 } });
    expect(after.last_value).toBe(metrics.body.aggregate_metrics.error_count);
    expect(after).toMatchObject({ state: "firing", last_value: 3, last_evaluated_at: iso(t0).replace(".000Z", ".000000Z"), last_error: null });
    let deliveries = await deliveriesOf(created.id);
    expect(deliveries).toHaveLength(1);
    const payload = JSON.parse(deliveries[0]!.payload);
    expect(payload).toEqual({
      id: deliveries[0]!.id,
      type: "alert.firing",
      created_at: iso(t0).replace(".000Z", ".000000Z"),
      alert: { id: created.id, name: "error spike", metric: "error_count", comparison: "gt", threshold: 2, warning_threshold: 1, window_minutes: 10 },
      project: { id: projectId, name: "alerts" },
      run: { id: stream, name: "default", type: "log_stream" },
      value: 3,
      window: { start: iso(t0 - 10).replace(".000Z", ".000000Z"), end: iso(t0).replace(".000Z", ".000000Z") },
      permalink: expect.stringContaining(`/projects/${projectId}/log_streams/${stream}/traces?filter=`),
    });
    const filter = JSON.parse(new URL(payload.permalink, "http://x").searchParams.get("filter")!);
    expect(filter.and.slice(0, 2).map((l: { operator: string }) => l.operator)).toEqual(["gte", "lt"]);

    // The same minute again (the cron redelivered): nothing is due, nothing is sent.
    const again = await evaluateDueRules(env, t0 * 60_000);
    expect(again.notifications).toBe(0);
    expect(await deliveriesOf(created.id)).toHaveLength(1);

    // Next minute, still firing: no notification (renotify is every 2 minutes); the one after: renotify.
    await evaluateDueRules(env, (t0 + 1) * 60_000);
    expect(await deliveriesOf(created.id)).toHaveLength(1);
    // Two runs of the same minute at once: one notification between them.
    await Promise.all([evaluateDueRules(env, (t0 + 2) * 60_000), evaluateDueRules(env, (t0 + 2) * 60_000)]);
    deliveries = await deliveriesOf(created.id);
    expect(deliveries.map((d) => [d.type, d.minute])).toEqual([["alert.firing", t0], ["alert.firing", t0 + 2]]);

    // As errors leave the window: still firing (renotified), then warning, then no data: ok.
    await evaluateDueRules(env, (t0 + 6) * 60_000); // window [t0-4, t0+6): errors at t0-2:30, t0-1, t0 -> 3, firing
    await evaluateDueRules(env, (t0 + 8) * 60_000); // [t0-2, t0+8): t0-1, t0 -> 2: warning (> 1, not > 2)
    await evaluateDueRules(env, (t0 + 11) * 60_000); // [t0+1, t0+11): no trace: no data -> ok
    deliveries = await deliveriesOf(created.id);
    expect(deliveries.map((d) => d.type)).toEqual(["alert.firing", "alert.firing", "alert.firing", "alert.warning", "alert.resolved"]);
    const history = (await call(`/v2/projects/${projectId}/alerts/${created.id}/history`, { as: member })).body;
    expect(history.map((h: { state: string; previous_state: string }) => [h.previous_state, h.state])).toEqual([["warning", "ok"], ["firing", "warning"], ["ok", "firing"]]);
    expect(history[1]).toMatchObject({ value: 2, threshold: 1 });
    expect(history[0]).toMatchObject({ value: null });
  });

  it("applies the rule's filters as metrics/search does, and no_data: alert fires on silence", async () => {
    const hook = (await channel({ name: "silence" })).body.id;
    const t0 = nowMinute() + 120;
    const filters = [{ type: "text", column_id: "name", operator: "eq", value: "checkout" }];
    const latency = (await rule({ name: "checkout p95", metric: "p95_latency_ns", comparison: "gte", threshold: 500, filters, evaluate_every_minutes: 1, channel_ids: [hook] })).body;
    const silence = (await rule({ name: "no traffic", metric: "trace_count", comparison: "lt", threshold: 1, no_data: "alert", window_minutes: 5, evaluate_every_minutes: 1, channel_ids: [hook] })).body;
    await ingest([
      { name: "checkout", created_at: iso(t0 - 3), metrics: { duration_ns: 400 } },
      { name: "checkout", created_at: iso(t0 - 2), metrics: { duration_ns: 600 } },
      { name: "search", created_at: iso(t0 - 2), metrics: { duration_ns: 9000 } },
    ]);
    await evaluateDueRules(env, t0 * 60_000);
    const metrics = await call(`/v2/projects/${projectId}/metrics/search`, { as: admin, body: { log_stream_id: stream, start_time: iso(t0 - 10), end_time: iso(t0), interval: 10, filters } });
    const got = (await call(`/v2/projects/${projectId}/alerts/${latency.id}`, { as: admin })).body;
    expect(got.last_value).toBe(metrics.body.aggregate_metrics.p95_latency_ns);
    expect(got).toMatchObject({ state: "firing", last_value: 600 });
    expect((await call(`/v2/projects/${projectId}/alerts/${silence.id}`, { as: admin })).body.state).toBe("ok");
    await evaluateDueRules(env, (t0 + 10) * 60_000);
    const quiet = (await call(`/v2/projects/${projectId}/alerts/${silence.id}`, { as: admin })).body;
    expect(quiet).toMatchObject({ state: "firing", last_value: null });
    expect((await deliveriesOf(silence.id)).map((d) => JSON.parse(d.payload).value)).toEqual([null]);
  });

  it("keeps state and history across a PATCH; a disabled rule is not evaluated", async () => {
    const hook = (await channel({ name: "patch" })).body.id;
    const t0 = nowMinute() + 200;
    const created = (await rule({ name: "any trace", metric: "trace_count", threshold: 0, evaluate_every_minutes: 1, channel_ids: [hook] })).body;
    await ingest([{ name: "p", created_at: iso(t0 - 1) }]);
    await evaluateDueRules(env, t0 * 60_000);
    expect((await call(`/v2/projects/${projectId}/alerts/${created.id}`, { as: admin })).body.state).toBe("firing");
    const patched = await call(`/v2/projects/${projectId}/alerts/${created.id}`, { as: admin, method: "PATCH", body: { threshold: 5, window_minutes: 30, enabled: false } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body).toMatchObject({ state: "firing", threshold: 5, window_minutes: 30, enabled: false });
    expect((await call(`/v2/projects/${projectId}/alerts/${created.id}/history`, { as: admin })).body).toHaveLength(1);
    await evaluateDueRules(env, (t0 + 1) * 60_000);
    expect((await call(`/v2/projects/${projectId}/alerts/${created.id}`, { as: admin })).body.last_evaluated_at).toBe(iso(t0).replace(".000Z", ".000000Z"));
    expect((await call(`/v2/projects/${projectId}/alerts/${created.id}`, { as: admin, method: "DELETE" })).status).toBe(200);
    expect((await call(`/v2/projects/${projectId}/alerts/${created.id}`, { as: admin })).status).toBe(404);
  });

  it("finds due rules and a channel's log through indexes that match", async () => {
    const due = await env.DB.prepare(`EXPLAIN QUERY PLAN ${DUE_RULES_SQL}`).bind(1, 10).all<{ detail: string }>();
    expect(due.results.map((r) => r.detail).join("\n")).toMatch(/SEARCH r USING INDEX alert_rules_due \(next_due_minute<\?\)/);
    expect(due.results.map((r) => r.detail).join("\n")).not.toMatch(/TEMP B-TREE/);
    const log = await env.DB.prepare("EXPLAIN QUERY PLAN SELECT webhook_id FROM alert_delivery_attempts WHERE channel_id = ?1 ORDER BY seq DESC LIMIT 100").bind("x").all<{ detail: string }>();
    expect(log.results.map((r) => r.detail).join("\n")).toMatch(/USING (COVERING )?INDEX alert_delivery_attempts_channel/);
  });

  it("runs from the worker's minutely cron", async () => {
    const hook = (await channel({ name: "cron" })).body.id;
    const created = (await rule({ name: "cron-run", metric: "trace_count", threshold: 1000, evaluate_every_minutes: 1, channel_ids: [hook] })).body;
    const controller = createScheduledController({ scheduledTime: new Date((nowMinute() + 1) * 60_000), cron: "* * * * *" });
    const ctx = createExecutionContext();
    await worker.scheduled!(controller, env, ctx);
    await waitOnExecutionContext(ctx);
    // The cron hands the due rules to the evaluation queue; its consumer evaluates them.
    let evaluated: string | null = null;
    for (const started = Date.now(); evaluated === null && Date.now() - started < 30_000; await new Promise((r) => setTimeout(r, 200))) {
      evaluated = (await call(`/v2/projects/${projectId}/alerts/${created.id}`, { as: admin })).body.last_evaluated_at;
    }
    expect(evaluated).not.toBeNull();
  });
});
