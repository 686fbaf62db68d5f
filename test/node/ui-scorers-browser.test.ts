/// <reference types="node" />
/**
 * Scorers in the explorer (issue 34, item 5; docs/evaluations.md), in a real headless Chromium
 * against `npm start` (whose evaluation queue scores records after their write): an admin creates
 * a preset scorer, enables it on the demo log stream picked from lists, and the LLM spans written
 * next are scored (their `metrics.<name>`) and counted on the scorer's card. Enabling it keeps
 * what another scorer of the run had (its filters), and the run's filtered segments.
 */
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { demoApi, signInWithPassword, watchPage } from "./browser-session";
import { launchChromium } from "./chromium";
import { type DemoServer, startDemoServer } from "./demo-server";

const ARTIFACTS = resolve(import.meta.dirname, ".artifacts");

let server: DemoServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const cspViolations: string[] = [];
const api = demoApi(() => server);
const settingsPath = () => `/v2/projects/${server.demo.project_id}/log_streams/${server.demo.log_stream_id}/metric_settings`;

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  [server, browser] = await Promise.all([startDemoServer(420_000), launchChromium()]);
  context = await browser.newContext({ viewport: { width: 1280, height: 900 }, baseURL: server.origin });
  page = await context.newPage();
  await watchPage(page, cspViolations);
  await signInWithPassword(page, server.demo.email, server.demo.password!);
}, 480_000);

afterEach(() => {
  expect(cspViolations.splice(0)).toEqual([]);
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

describe("scorers in the explorer", () => {
  it("creates a preset scorer, enables it on a log stream picked from lists, and counts the spans it scored", async () => {
    // Another scorer already on the run, with a filter, and a filtered sampling segment: enabling
    // a second one from the page must keep both as they are.
    const other = await api<{ id: string }>("POST", "/v2/scorers", { name: "answer_is_json", scorer_type: "preset" });
    expect(other.status).toBe(200);
    expect((await api("POST", `/v2/scorers/${other.body.id}/version/preset`, { preset: "is_json", params: { field: "output" } })).status).toBe(200);
    const segment = { filter: { name: "node_name", operator: "eq", value: "never-a-name" }, sample_rate: 0.5, llm_scorers: false };
    const before = await api("PATCH", settingsPath(), { scorers: [{ id: other.body.id, filters: [{ name: "node_name", operator: "eq", value: "json-only" }] }], segment_filters: [segment] });
    expect(before.status, JSON.stringify(before.body)).toBe(200);

    await page.goto("/scorers");
    const form = page.getByRole("form", { name: "New scorer" });
    await form.getByLabel("Name").fill("says_thanks");
    await form.getByRole("combobox", { name: /^Preset/ }).selectOption("contains");
    await form.getByLabel("Params (JSON)").fill(JSON.stringify({ values: ["thank you"], mode: "any", case_sensitive: false, field: "output" }));
    await form.getByRole("button", { name: "Create the scorer" }).click();
    const card = page.getByRole("region", { name: "Scorer says_thanks" });
    await card.waitFor();
    await expect.poll(() => card.textContent()).toContain("preset contains");

    await card.getByText("Enable on a log stream").click();
    const enable = card.getByRole("form", { name: "Enable says_thanks" });
    await enable.getByLabel("Project").selectOption({ label: "demo" });
    await enable.getByLabel("Log stream").selectOption({ label: "default" });
    await enable.getByRole("button", { name: "Enable", exact: true }).click();
    await expect.poll(() => page.getByRole("status").textContent()).toContain("says_thanks now scores new records");

    const settings = (await api<{ scorers: { name: string; filters: unknown[] }[]; segment_filters: unknown[] }>("GET", settingsPath())).body;
    expect(settings.scorers.map((s) => s.name)).toEqual(["answer_is_json", "says_thanks"]);
    expect(settings.scorers[0]!.filters).toEqual([{ name: "node_name", operator: "eq", value: "json-only" }]);
    // The filtered segment kept, and the default one (no filter) at the rate given, 1.
    expect(settings.segment_filters).toEqual([segment, { filter: null, sample_rate: 1, llm_scorers: false }]);

    // LLM spans written now are scored after their write; the card counts them on a reload.
    const traceId = crypto.randomUUID();
    const [thanked, curt] = [crypto.randomUUID(), crypto.randomUUID()];
    const written = await api("POST", `/v2/projects/${server.demo.project_id}/traces`, {
      log_stream_id: server.demo.log_stream_id,
      traces: [
        {
          id: traceId,
          name: "scored",
          input: "q",
          output: "a",
          spans: [
            { id: thanked, type: "llm", name: "polite", input: "hi", output: "Thank you, it is done." },
            { id: curt, type: "llm", name: "curt", input: "hi", output: "Done." },
          ],
        },
      ],
    });
    expect(written.status).toBe(200);
    const metricOf = async (id: string) => (await api<{ metrics?: Record<string, unknown> }>("GET", `/v2/projects/${server.demo.project_id}/spans/${id}`)).body.metrics?.says_thanks;
    await expect.poll(() => metricOf(thanked), { timeout: 60_000 }).not.toBeUndefined();
    await expect.poll(() => metricOf(curt), { timeout: 60_000 }).not.toBeUndefined();
    expect(Boolean(await metricOf(thanked))).toBe(true);
    expect(Boolean(await metricOf(curt))).toBe(false);

    await page.reload();
    await expect.poll(() => page.getByRole("region", { name: "Scorer says_thanks" }).getByTestId("scorer-counts").textContent(), { timeout: 30_000 }).toBe("2 scored · 0 pending · 0 in error");
    await page.screenshot({ path: join(ARTIFACTS, "scorers.png") });
  });
});
