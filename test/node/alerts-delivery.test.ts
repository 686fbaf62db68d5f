/**
 * Alert delivery through a real `wrangler dev` (contract section 16): webhooks arrive on a local
 * HTTP server this test starts on 127.0.0.1, signed so that the published Standard Webhooks
 * library (`standardwebhooks` on npm) verifies them; a retried delivery keeps its `webhook-id`
 * and honours `Retry-After`; Slack channels get Slack's `text` and `blocks`; and a rule whose
 * condition becomes true is delivered by the minutely cron (its `/__scheduled` run), with the
 * value metrics/search gives.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningService, startService } from "./sdk-service";

interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
  at: number;
}

const received: Received[] = [];
/** Answers to give, in order (then 200). */
const answers: { status: number; headers?: Record<string, string> }[] = [];
let receiver: http.Server;
let receiverOrigin: string;
let service: RunningService;

async function api(path: string, body?: unknown, method = body === undefined ? "GET" : "POST") {
  const response = await fetch(`${service.apiUrl}${path}`, {
    method,
    headers: { "content-type": "application/json", "Service-API-Key": service.tenant.apiKey },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}

beforeAll(async () => {
  receiver = http.createServer((request, response) => {
    let body = "";
    request.setEncoding("utf8");
    request.on("data", (chunk) => (body += chunk));
    request.on("end", () => {
      received.push({ path: request.url ?? "", headers: request.headers as Record<string, string>, body, at: Date.now() });
      const answer = answers.shift() ?? { status: 200 };
      response.writeHead(answer.status, { "content-type": "text/plain", ...answer.headers });
      response.end(answer.status === 200 ? "ok" : "not now");
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  receiverOrigin = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  service = await startService({ vars: { ALERT_DESTINATIONS: "local", ALERT_RETRY_DELAYS_SECONDS: "1" }, testScheduled: true });
}, 400_000);

afterAll(async () => {
  await service?.stop();
  await new Promise((resolve) => receiver?.close(resolve));
});

const arrivals = (path: string) => received.filter((r) => r.path === path);

describe("alert delivery under wrangler dev", () => {
  it("signs a test event so that the standardwebhooks library verifies it", async () => {
    const created = await api("/notification_channels", { name: "receiver", type: "webhook", url: `${receiverOrigin}/hook/test` });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const queued = await api(`/notification_channels/${created.body.id}/test`, {});
    expect(queued.status).toBe(202);
    await expect.poll(() => arrivals("/hook/test").length, { timeout: 30_000 }).toBe(1);
    const [arrival] = arrivals("/hook/test");
    expect(arrival!.headers["webhook-id"]).toBe(queued.body.webhook_id);
    const payload = new Webhook(created.body.signing_secret).verify(arrival!.body, arrival!.headers) as Record<string, unknown>;
    expect(payload).toMatchObject({ id: queued.body.webhook_id, type: "test", channel: { id: created.body.id, name: "receiver" } });
    // A wrong secret does not verify.
    expect(() => new Webhook(`whsec_${Buffer.alloc(32, 7).toString("base64")}`).verify(arrival!.body, arrival!.headers)).toThrow();
    await expect.poll(async () => (await api(`/notification_channels/${created.body.id}/deliveries`)).body.map((d: { status: number }) => d.status)).toEqual([200]);
  });

  it("retries a 503 with the same webhook-id, honouring Retry-After, and logs each attempt", async () => {
    const created = await api("/notification_channels", { name: "flaky", type: "webhook", url: `${receiverOrigin}/hook/flaky` });
    answers.push({ status: 503, headers: { "retry-after": "2" } }, { status: 429, headers: { "retry-after": "1" } });
    const queued = await api(`/notification_channels/${created.body.id}/test`, {});
    await expect.poll(() => arrivals("/hook/flaky").length, { timeout: 60_000 }).toBe(3);
    const attempts = arrivals("/hook/flaky");
    expect(new Set(attempts.map((a) => a.headers["webhook-id"]))).toEqual(new Set([queued.body.webhook_id]));
    for (const attempt of attempts) new Webhook(created.body.signing_secret).verify(attempt.body, attempt.headers);
    expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(1_900);
    await expect
      .poll(async () => (await api(`/notification_channels/${created.body.id}/deliveries`)).body.map((d: { status: number }) => d.status), { timeout: 20_000 })
      .toEqual([200, 429, 503]);
    const channel = (await api(`/notification_channels/${created.body.id}`)).body;
    expect(channel).toMatchObject({ enabled: true, consecutive_failures: 0 });
  });

  it("posts Slack's incoming-webhook JSON to a Slack channel", async () => {
    const created = await api("/notification_channels", { name: "slack", type: "slack", url: `${receiverOrigin}/services/T1/B2/secret-token` });
    expect(created.status).toBe(200);
    expect(JSON.stringify(created.body)).not.toContain("secret-token");
    await api(`/notification_channels/${created.body.id}/test`, {});
    await expect.poll(() => arrivals("/services/T1/B2/secret-token").length, { timeout: 30_000 }).toBe(1);
    const message = JSON.parse(arrivals("/services/T1/B2/secret-token")[0]!.body);
    expect(message.text).toContain("Test");
    expect(Array.isArray(message.blocks)).toBe(true);
  });

  it("delivers a rule's alert.firing from the minutely cron, with metrics/search's value", async () => {
    const hook = await api("/notification_channels", { name: "alerts", type: "webhook", url: `${receiverOrigin}/hook/alerts` });
    const project = (await api("/projects", { name: `alerting-${Date.now().toString(36)}` })).body.id;
    const stream = (await api(`/projects/${project}/log_streams`, { name: "default" })).body.id;
    const minute = Math.floor(Date.now() / 60_000);
    const at = (m: number) => new Date(m * 60_000).toISOString();
    const ingest = await api(`/projects/${project}/traces`, {
      log_stream_id: stream,
      traces: [
        { name: "a", created_at: at(minute - 3), status_code: 500 },
        { name: "a", created_at: at(minute - 2), status_code: 200 },
      ],
    });
    expect(ingest.status).toBe(200);
    const rule = await api(`/projects/${project}/alerts`, { name: "any error", log_stream_id: stream, metric: "error_rate", window_minutes: 5, comparison: "gte", threshold: 0.5, evaluate_every_minutes: 1, channel_ids: [hook.body.id] });
    expect(rule.status, JSON.stringify(rule.body)).toBe(200);
    // The minute the rule was created in, or a later one: it is due from its creation minute on.
    const evaluated = Math.floor(Date.now() / 60_000);
    const started = Date.now();
    const cron = await fetch(`${service.origin}/__scheduled?cron=${encodeURIComponent("* * * * *")}&time=${evaluated * 60_000}`);
    expect(cron.status).toBe(200);
    await expect.poll(() => arrivals("/hook/alerts").length, { timeout: 60_000 }).toBeGreaterThanOrEqual(1);
    const arrival = arrivals("/hook/alerts")[0]!;
    const payload = new Webhook(hook.body.signing_secret).verify(arrival.body, arrival.headers) as Record<string, any>;
    const metrics = await api(`/projects/${project}/metrics/search`, { log_stream_id: stream, start_time: at(evaluated - 5), end_time: at(evaluated), interval: 5 });
    expect(payload).toMatchObject({ type: "alert.firing", alert: { id: rule.body.id, metric: "error_rate", threshold: 0.5 }, run: { id: stream, type: "log_stream" }, value: metrics.body.aggregate_metrics.error_rate });
    expect(payload.value).toBe(0.5);
    expect(payload.id).toBe(arrival.headers["webhook-id"]);
    // Delivered within one evaluation interval plus 30 s of the cron's run (issue 35, point 6).
    expect(arrival.at - started).toBeLessThan(90_000);
    // The cron's run again for the same minute sends nothing more.
    await fetch(`${service.origin}/__scheduled?cron=${encodeURIComponent("* * * * *")}&time=${evaluated * 60_000}`);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(arrivals("/hook/alerts")).toHaveLength(1);
  });
});
