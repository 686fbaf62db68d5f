/// <reference types="node" />
/**
 * Scorers in the explorer (issue 34, item 5; docs/evaluations.md), in a real headless Chromium
 * against `npm start` (whose evaluation queue scores records after their write): an admin creates
 * a preset scorer, enables it on the demo log stream picked from lists, and the LLM spans written
 * next are scored (their `metrics.<name>`) and counted on the scorer's card. Enabling it keeps
 * what another scorer of the run had (its filters), and the run's filtered segments. An admin
 * tests a scorer on a record chosen from a log stream's latest (a preset, and an LLM judge served
 * by a local OpenAI-compatible server this test starts: real HTTP, the chat-completions wire
 * format), the result shown and stored nowhere; the trace view shows a judge's scores with their
 * explanation, and why a record was not scored.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { BROWSER_WAIT_MS, demoApi, newBrowserContext, signInWithPassword, watchPage } from "./browser-session";
import { launchChromium } from "./chromium";
import { type DemoServer, startDemoServer } from "./demo-server";

const ARTIFACTS = resolve(import.meta.dirname, ".artifacts");

let server: DemoServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const cspViolations: string[] = [];
/** The local judge: "Courteous." for an output without "rude", else "Insulting."; counts its calls. */
let judge: http.Server;
let judgeOrigin: string;
let judgeCalls = 0;
const api = demoApi(() => server);
const settingsPath = () => `/v2/projects/${server.demo.project_id}/log_streams/${server.demo.log_stream_id}/metric_settings`;

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  judge = http.createServer((request, response) => {
    let raw = "";
    request.setEncoding("utf8");
    request.on("data", (chunk) => (raw += chunk));
    request.on("end", () => {
      judgeCalls++;
      const body = JSON.parse(raw) as { model: string; messages: { role: string; content: string }[] };
      const polite = !body.messages.find((m) => m.role === "user")!.content.includes("rude");
      response.writeHead(200, { "content-type": "application/json" });
      response.end(
        JSON.stringify({
          id: "chatcmpl-1",
          object: "chat.completion",
          model: body.model,
          choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: JSON.stringify({ score: polite, explanation: polite ? "Courteous." : "Insulting." }) } }],
          usage: { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 },
        }),
      );
    });
  });
  await new Promise<void>((done) => judge.listen(0, "127.0.0.1", done));
  judgeOrigin = `http://127.0.0.1:${(judge.address() as AddressInfo).port}`;
  [server, browser] = await Promise.all([startDemoServer(420_000), launchChromium()]);
  context = await newBrowserContext(browser, { viewport: { width: 1280, height: 900 }, baseURL: server.origin });
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
  await new Promise((done) => judge?.close(done));
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
    await expect.poll(() => metricOf(thanked), { timeout: BROWSER_WAIT_MS }).not.toBeUndefined();
    await expect.poll(() => metricOf(curt), { timeout: BROWSER_WAIT_MS }).not.toBeUndefined();
    expect(Boolean(await metricOf(thanked))).toBe(true);
    expect(Boolean(await metricOf(curt))).toBe(false);

    await page.reload();
    await expect.poll(() => page.getByRole("region", { name: "Scorer says_thanks" }).getByTestId("scorer-counts").textContent(), { timeout: BROWSER_WAIT_MS }).toBe("2 scored · 0 pending · 0 in error");
    await page.screenshot({ path: join(ARTIFACTS, "scorers.png") });
  });

  it("tests scorers on a record chosen from a log stream, storing nothing, and shows a judge's scores with their explanation in the trace view", async () => {
    const project = server.demo.project_id;
    const traceId = crypto.randomUUID();
    const [kind, rude] = [crypto.randomUUID(), crypto.randomUUID()];
    const written = await api("POST", `/v2/projects/${project}/traces`, {
      log_stream_id: server.demo.log_stream_id,
      traces: [
        {
          id: traceId,
          name: "judged",
          input: "q",
          output: "a",
          spans: [
            { id: kind, type: "llm", name: "kind reply", input: "hi", output: "Happy to help, it is done." },
            { id: rude, type: "llm", name: "rude reply", input: "hi", output: "rude: go away" },
          ],
        },
      ],
    });
    expect(written.status).toBe(200);
    // A preset and a judge, neither enabled anywhere.
    const preset = await api<{ id: string }>("POST", "/v2/scorers", { name: "mentions_done", scorer_type: "preset" });
    expect((await api("POST", `/v2/scorers/${preset.body.id}/version/preset`, { preset: "contains", params: { values: ["done"] } })).status).toBe(200);
    expect((await api("PUT", "/v2/integrations/custom", { endpoint: `${judgeOrigin}/v1`, api_key_value: "sk-local", models: ["judge-model"], requests_per_minute: 100 })).status).toBe(200);
    const judgeScorer = await api<{ id: string }>("POST", "/v2/scorers", { name: "courtesy", scorer_type: "llm", output_type: "boolean" });
    expect((await api("POST", `/v2/scorers/${judgeScorer.body.id}/version/llm`, { instructions: "Is the reply courteous?", user_prompt: "{output}", model_name: "judge-model" })).status).toBe(200);

    await page.goto("/scorers");
    const testOn = async (scorer: string, record: string) => {
      const card = page.getByRole("region", { name: `Scorer ${scorer}` });
      await card.getByText("Test on a record").click();
      const form = card.getByRole("form", { name: `Test ${scorer}` });
      await form.getByLabel("Project").selectOption({ label: "demo" });
      await form.getByLabel("Log stream").selectOption({ label: "default" });
      const records = form.getByLabel(/^Record/);
      await expect.poll(() => records.locator("option").allTextContents(), { timeout: BROWSER_WAIT_MS }).toContainEqual(expect.stringContaining(record));
      await records.selectOption({ label: (await records.locator("option").allTextContents()).find((o) => o.includes(record))! });
      await form.getByRole("button", { name: "Run the test" }).click();
      const result = form.getByTestId("scorer-test-result");
      await result.waitFor();
      return result;
    };
    const presetResult = await testOn("mentions_done", "kind reply");
    expect(await presetResult.locator("tr").getAttribute("data-status")).toBe("success");
    expect(await presetResult.textContent()).toContain("scored");
    const judged = await testOn("courtesy", "rude reply");
    await expect.poll(() => judged.textContent()).toContain("Insulting.");
    expect(await judged.textContent()).toContain("judge-model");
    expect(judgeCalls).toBe(1);
    await page.screenshot({ path: join(ARTIFACTS, "scorers-test.png") });
    // Stored nowhere: the records carry neither score.
    const span = (await api<{ metrics?: Record<string, unknown> }>("GET", `/v2/projects/${project}/spans/${rude}`)).body;
    expect(span.metrics?.courtesy).toBeUndefined();
    expect(span.metrics?.mentions_done).toBeUndefined();

    // Enabled on the run and backfilled, the judge scores both spans; the trace view shows each
    // score with its explanation, and the trace (not an llm span) has no score from it.
    const settings = (await api<{ scorers: { id: string }[] }>("GET", settingsPath())).body;
    expect((await api("PATCH", settingsPath(), { scorers: [...settings.scorers.map((s) => ({ id: s.id })), { id: judgeScorer.body.id }], segment_filters: [] })).status).toBe(200);
    const range = { start_time: new Date(Date.now() - 3_600_000).toISOString(), end_time: new Date(Date.now() + 60_000).toISOString(), scorer_ids: [judgeScorer.body.id] };
    expect((await api("POST", `${settingsPath()}/backfill`, range)).status).toBe(200);
    const scoreOf = async (id: string) => (await api<{ metrics?: Record<string, unknown> }>("GET", `/v2/projects/${project}/spans/${id}`)).body.metrics?.courtesy;
    await expect.poll(() => scoreOf(rude), { timeout: BROWSER_WAIT_MS }).toBe(0);
    await expect.poll(() => scoreOf(kind), { timeout: BROWSER_WAIT_MS }).toBe(1);

    await page.goto(`/projects/${project}/log_streams/${server.demo.log_stream_id}/traces?open=${traceId}&span=${rude}`);
    const detail = page.getByTestId("record-detail").filter({ hasText: "rude reply" });
    // The view reads the trace and its spans (two searches) while the evaluation queue and the
    // cron share the one local workerd: the context's load-tolerant wait (BROWSER_WAIT_MS).
    await detail.waitFor().catch(async (error: unknown) => {
      // What the trace view showed instead (an error notice, still loading, another record): CI
      // once timed out here at load 8+ and printed nothing to go on.
      console.error(`trace view at ${page.url()}:`, await page.getByTestId("trace-view").innerText().catch(() => "(no trace view)"));
      console.error("the service's last log lines:\n" + server.output().split("\n").slice(-150).join("\n"));
      throw error;
    });
    const row = detail.getByTestId("record-scores").locator('tr[data-score="courtesy"]');
    await expect.poll(() => row.textContent(), { timeout: BROWSER_WAIT_MS }).toContain("Insulting.");
    expect(await row.getAttribute("data-status")).toBe("success");
    expect(await row.textContent()).toContain("judge-model");
    await page.getByTestId("trace-view").getByRole("treeitem").filter({ hasText: "kind reply" }).click();
    const kindRow = page.getByTestId("record-detail").filter({ hasText: "kind reply" }).getByTestId("record-scores").locator('tr[data-score="courtesy"]');
    await expect.poll(() => kindRow.textContent()).toContain("Courteous.");
    await page.screenshot({ path: join(ARTIFACTS, "scorers-trace-view.png") });
  });
});
