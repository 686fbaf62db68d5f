/// <reference types="node" />
/**
 * Alerts in the explorer (issue 35, item 5; docs/alerts.md), in a real headless Chromium against
 * `npm start` (whose local cron evaluates the rules every minute): an admin adds a webhook channel
 * (the secret shown once), sends a test event and reads it in the delivery log; opens "Alert…" on
 * the dashboard's Errors chart, draws the threshold with a click on the chart, and creates the
 * rule from the prefilled form; traces with errors arrive, the cron fires the rule, and the
 * rule's state and history show it, while the local receiver gets the signed `alert.firing`.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BROWSER_WAIT_MS, demoApi, newBrowserContext, signInWithPassword } from "./browser-session";
import { launchChromium } from "./chromium";
import { type DemoServer, startDemoServer } from "./demo-server";

let server: DemoServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let receiver: http.Server;
let hookUrl: string;
const received: { headers: Record<string, string>; body: string }[] = [];

const api = demoApi(() => server);

beforeAll(async () => {
  receiver = http.createServer((request, response) => {
    let body = "";
    request.setEncoding("utf8");
    request.on("data", (chunk) => (body += chunk));
    request.on("end", () => {
      received.push({ headers: request.headers as Record<string, string>, body });
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/on-call`;
  [server, browser] = await Promise.all([startDemoServer(420_000), launchChromium()]);
  context = await newBrowserContext(browser, { viewport: { width: 1280, height: 900 }, baseURL: server.origin });
  page = await context.newPage();
  page.on("pageerror", (error) => {
    throw error;
  });
  await signInWithPassword(page, server.demo.email, server.demo.password!);
}, 480_000);

afterAll(async () => {
  await context?.close().catch(() => undefined);
  await browser?.close();
  await server?.stop();
  await new Promise((resolve) => receiver?.close(resolve));
});

describe("alerts in the explorer", () => {
  let secret: string;

  it("adds a webhook channel, shows its secret once, and logs a test delivery", async () => {
    await page.getByRole("link", { name: "Alert channels" }).click();
    const form = page.getByRole("form", { name: "New channel" });
    await form.getByLabel("Name").fill("on-call");
    await form.getByLabel("URL").fill(hookUrl);
    await form.getByRole("button", { name: "Add the channel" }).click();
    secret = (await page.getByTestId("signing-secret").textContent())!.trim();
    expect(secret).toMatch(/^whsec_/);
    await page.getByRole("button", { name: "I have copied it" }).click();
    await page.reload();
    const card = page.locator('[data-channel="on-call"]');
    await card.waitFor();
    expect(await page.getByTestId("signing-secret").count()).toBe(0);
    expect(await page.content()).not.toContain(secret);
    await card.getByRole("button", { name: "Send a test" }).click();
    await page.getByRole("status").filter({ hasText: "test event was queued" }).waitFor();
    await expect.poll(() => received.length, { timeout: BROWSER_WAIT_MS }).toBeGreaterThanOrEqual(1);
    expect(new Webhook(secret).verify(received[0]!.body, received[0]!.headers)).toMatchObject({ type: "test" });
    await card.getByText("Delivery log").click();
    await expect
      .poll(async () => {
        await card.getByRole("button", { name: "Refresh" }).click();
        return card.getByRole("table", { name: "Deliveries" }).textContent();
      })
      .toContain("204");
  });

  it("creates a rule from a dashboard chart with the threshold drawn on it, and shows it fire with its history", async () => {
    const { project_id: projectId, log_stream_id: streamId } = server.demo;
    await page.goto(`/projects/${projectId}/log_streams/${streamId}/dashboard?range=hour`);
    const errors = page.getByRole("region", { name: "Errors" });
    await errors.getByRole("button", { name: "Alert on Errors" }).click();
    const chart = errors.locator(".time-chart");
    const before = await chart.getAttribute("data-threshold");
    // A click high on the chart draws the threshold there.
    const box = (await errors.locator(".u-over").boundingBox())!;
    await page.mouse.click(box.x + box.width / 2, box.y + box.height * 0.2);
    await expect.poll(() => chart.getAttribute("data-threshold")).not.toBe(before);
    expect(Number(await chart.getAttribute("data-threshold"))).toBeGreaterThan(0);
    // Typed, it is drawn too; 0: any error fires.
    await errors.getByLabel("Threshold").fill("0");
    await expect.poll(() => chart.getAttribute("data-threshold")).toBe("0");
    await errors.getByRole("button", { name: "Create the rule…" }).click();
    await expect.poll(() => new URL(page.url()).pathname).toBe(`/projects/${projectId}/log_streams/${streamId}/alerts`);
    const form = page.getByRole("form", { name: "New alert rule" });
    expect(await form.getByLabel("Metric").inputValue()).toBe("error_count");
    expect(await form.getByLabel("Threshold", { exact: true }).inputValue()).toBe("0");
    expect(await form.getByLabel("Window (minutes)").inputValue()).toBe("5");
    await form.getByLabel("Evaluate every (minutes)").fill("1");
    await form.getByLabel("Window (minutes)").fill("15");
    await form.getByLabel("on-call").check();
    await form.getByRole("button", { name: "Create the rule" }).click();
    const row = page.locator('tr[data-rule="Errors above 0"]');
    await row.waitFor();
    expect(await row.locator(".state-badge").textContent()).toBe("ok");

    // Errors arrive; the local cron evaluates the rule within a minute or so and it fires.
    const now = Date.now();
    const ingest = await api("POST", `/v2/projects/${projectId}/traces`, {
      log_stream_id: streamId,
      traces: [
        { name: "checkout", created_at: new Date(now - 60_000).toISOString(), status_code: 500 },
        { name: "checkout", created_at: new Date(now - 30_000).toISOString(), error_message: "timeout" },
      ],
    });
    expect(ingest.status).toBe(200);
    await expect
      .poll(
        async () => {
          await page.reload();
          await row.waitFor();
          return row.locator(".state-badge").textContent();
        },
        { timeout: 150_000, interval: 5_000 },
      )
      .toBe("firing");
    await row.getByRole("button", { name: "Errors above 0" }).click();
    const history = page.getByRole("table", { name: "History of Errors above 0" });
    await history.waitFor();
    expect(await history.textContent()).toContain("ok → firing");
    await expect.poll(() => received.filter((r) => r.body.includes('"alert.firing"')).length, { timeout: BROWSER_WAIT_MS }).toBe(1);
    const firing = received.find((r) => r.body.includes('"alert.firing"'))!;
    const payload = new Webhook(secret).verify(firing.body, firing.headers) as Record<string, any>;
    expect(payload).toMatchObject({ alert: { name: "Errors above 0", metric: "error_count", threshold: 0 }, run: { id: streamId } });
    expect(payload.value).toBeGreaterThanOrEqual(2);
    expect(payload.permalink).toMatch(new RegExp(`^${server.origin}/projects/${projectId}/log_streams/${streamId}/traces\\?filter=`));
  }, 300_000);
});
