/// <reference types="node" />
/**
 * Redaction in the explorer (issue 33, item 6; docs/redaction.md), in a real headless Chromium
 * against `npm start`: an admin edits the project's policy on its page (defaults, enabled, mode,
 * detectors, a custom pattern) with the live preview masking a sample text, saves it and finds it
 * kept after a reload; records ingested through the API under `mask` show their placeholders as
 * badges in the trace view; under `shadow` a record opens on its redacted view, the toggle shows
 * the original, and another record of the trace opens redacted again. One server, one browser,
 * one signed-in page, in a file of its own so it runs beside the other browser tests.
 */
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { demoApi, newBrowserContext, signInWithPassword, watchPage } from "./browser-session";
import { launchChromium } from "./chromium";
import { type DemoServer, startDemoServer } from "./demo-server";

const ARTIFACTS = resolve(import.meta.dirname, ".artifacts");
const VIEWPORT = { width: 1280, height: 860 };
const DETECTORS = ["email", "phone", "credit_card", "us_ssn", "iban", "ip_address", "api_key", "jwt", "url_credentials"];

let server: DemoServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const cspViolations: string[] = [];

const api = demoApi(() => server);

const policyPath = () => `/v2/projects/${server.demo.project_id}/redaction`;
const tracePath = (id: string) => `/projects/${server.demo.project_id}/log_streams/${server.demo.log_stream_id}/traces?open=${id}`;

/** Ingests one trace with one llm span through the JSON batch route; answers the trace's and span's ids. */
async function ingest(name: string, input: unknown, output: unknown, spanInput: unknown): Promise<{ traceId: string; spanId: string }> {
  const traceId = crypto.randomUUID();
  const spanId = crypto.randomUUID();
  const answer = await api("POST", `/v2/projects/${server.demo.project_id}/traces`, {
    log_stream_id: server.demo.log_stream_id,
    traces: [{ id: traceId, name, input, output, spans: [{ id: spanId, type: "llm", name: `${name} llm`, input: spanInput, output: "Done." }] }],
  });
  expect(answer.status).toBe(200);
  return { traceId, spanId };
}

const placeholders = (where: Locator) => where.getByTestId("redacted").allTextContents();
const section = (detail: Locator, heading: RegExp) => detail.locator("section").filter({ has: detail.page().locator("h4", { hasText: heading }) });

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  // wrangler dev starts slowly on a loaded machine (other engineers' suites run beside this one).
  [server, browser] = await Promise.all([startDemoServer(420_000), launchChromium()]);
  context = await newBrowserContext(browser, { viewport: VIEWPORT, baseURL: server.origin });
  page = await context.newPage();
  await watchPage(page, cspViolations);
  await signInWithPassword(page, server.demo.email, server.demo.password!);
}, 480_000);

afterEach(() => {
  expect(cspViolations.splice(0)).toEqual([]);
});

afterAll(async () => {
  await context?.close().catch(() => undefined);
  await browser?.close();
  await server?.stop();
});

describe("redaction in the explorer", () => {
  it("lets an admin edit the policy with a live preview, save it, and find it kept", async () => {
    // From the projects page, the project's Redaction link.
    await page.getByTestId("project-redaction").first().click();
    await expect.poll(() => new URL(page.url()).pathname).toBe(`/projects/${server.demo.project_id}/redaction`);
    const form = page.getByTestId("redaction-form");
    const preview = page.getByTestId("redaction-preview");
    const save = page.getByTestId("save-redaction");

    // The defaults of the contract: disabled, mask, every detector, no custom pattern, three fields.
    await form.waitFor();
    expect(await form.locator('input[name="enabled"]').isChecked()).toBe(false);
    expect(await form.locator('select[name="mode"]').inputValue()).toBe("mask");
    for (const d of DETECTORS) expect(await form.locator(`input[name="detector-${d}"]`).isChecked()).toBe(true);
    const fieldsChecked = await Promise.all(["input", "output", "user_metadata", "name", "tags"].map((f) => form.locator(`input[name="field-${f}"]`).isChecked()));
    expect(fieldsChecked).toEqual([true, true, true, false, false]);
    expect(await form.getByTestId("custom-pattern").count()).toBe(0);
    expect(await save.textContent()).toBe("Saved");
    expect(await save.isDisabled()).toBe(true);
    // The preview of the built-in sample shows what the detectors would do once enabled.
    await expect.poll(() => placeholders(preview)).toEqual(
      expect.arrayContaining(["[REDACTED:email]", "[REDACTED:phone]", "[REDACTED:credit_card]", "[REDACTED:iban]", "[REDACTED:api_key]", "[REDACTED:url_credentials]"]),
    );
    expect(await page.getByText("The policy is disabled").count()).toBe(1);

    // Each checkbox sits on its label's line, beside its text (not above it).
    for (const name of ["enabled", "detector-email", "field-input"]) {
      const box = (await form.locator(`input[name="${name}"]`).boundingBox())!;
      const label = (await form.locator("label", { has: page.locator(`input[name="${name}"]`) }).boundingBox())!;
      expect(Math.abs(box.y + box.height / 2 - (label.y + label.height / 2)), name).toBeLessThan(4);
      expect(label.width, name).toBeGreaterThan(box.width + 10);
    }

    // Enable, drop the phone detector, add a custom pattern; the preview follows each edit.
    await form.locator('input[name="enabled"]').check();
    await form.locator('input[name="detector-phone"]').uncheck();
    await page.getByTestId("redaction-sample").fill("Call +44 20 7946 0958 about EMP-123456; mail jane.doe@example.com");
    await expect.poll(() => preview.textContent()).toBe("Call +44 20 7946 0958 about EMP-123456; mail [REDACTED:email]");
    await form.getByRole("button", { name: "Add a pattern" }).click();
    const custom = form.getByTestId("custom-pattern");
    await custom.getByLabel("Name").fill("employee_id");
    // A pattern the engine cannot run: the service's 422 at the preview, and a save refused
    // without losing the edits.
    await custom.getByLabel("Pattern").fill("(EMP)-\\d{6}\\1");
    const refused = await api("POST", `${policyPath()}/preview`, { text: "x", policy: { custom: [{ name: "employee_id", pattern: "(EMP)-\\d{6}\\1" }] } });
    expect(refused.status).toBe(422);
    await expect.poll(() => page.locator(".redaction-page").textContent()).toContain(refused.body.detail[0].msg);
    expect(await save.textContent()).toBe("Save the policy");
    await save.click();
    await expect.poll(() => form.getByRole("alert").textContent()).toContain(refused.body.detail[0].msg);
    expect(await custom.getByLabel("Pattern").inputValue()).toBe("(EMP)-\\d{6}\\1");
    expect(await form.locator('input[name="detector-phone"]').isChecked()).toBe(false);
    expect((await api("GET", policyPath())).body.enabled).toBe(false);
    // A good one, case-insensitive: the preview masks it under the pattern's name, and the
    // refused save's message goes with the edit that answers it.
    await custom.getByLabel("Pattern").fill("EMP-\\d{6}");
    expect(await form.getByRole("alert").count()).toBe(0);
    await custom.getByLabel("Flags").fill("i");
    await page.getByTestId("redaction-sample").fill("Call +44 20 7946 0958 about emp-123456; mail jane.doe@example.com");
    await expect.poll(() => preview.textContent()).toBe("Call +44 20 7946 0958 about [REDACTED:employee_id]; mail [REDACTED:email]");
    expect(await placeholders(preview)).toEqual(["[REDACTED:employee_id]", "[REDACTED:email]"]);
    await shot(page, "redaction-policy");

    await save.click();
    await expect.poll(() => save.textContent()).toBe("Saved");
    const stored = (await api("GET", policyPath())).body;
    expect(stored).toMatchObject({
      enabled: true,
      mode: "mask",
      detectors: DETECTORS.filter((d) => d !== "phone"),
      custom: [{ name: "employee_id", pattern: "EMP-\\d{6}", flags: "i" }],
      fields: ["input", "output", "user_metadata"],
    });

    // Kept after a reload.
    await page.reload();
    await form.waitFor();
    expect(await form.locator('input[name="enabled"]').isChecked()).toBe(true);
    expect(await form.locator('input[name="detector-phone"]').isChecked()).toBe(false);
    expect(await form.locator('input[name="detector-email"]').isChecked()).toBe(true);
    expect(await custom.getByLabel("Name").inputValue()).toBe("employee_id");
    expect(await custom.getByLabel("Pattern").inputValue()).toBe("EMP-\\d{6}");
    expect(await custom.getByLabel("Flags").inputValue()).toBe("i");
    expect(await page.getByText("The policy is disabled").count()).toBe(0);
  });

  it("shows the placeholders of a record masked at ingest as placeholders in the trace view", async () => {
    const { traceId } = await ingest(
      "masked order",
      "I'm jane.doe@example.com, charge card 4111 1111 1111 1111 for EMP-654321",
      "Charged.",
      [{ role: "user", content: "card 4111-1111-1111-1111" }],
    );
    const stored = (await api("GET", `/v2/projects/${server.demo.project_id}/traces/${traceId}`)).body;
    expect(stored.input).toBe("I'm [REDACTED:email], charge card [REDACTED:credit_card] for [REDACTED:employee_id]");

    await page.goto(tracePath(traceId));
    const detail = page.getByTestId("record-detail").filter({ hasText: "masked order" });
    await detail.waitFor();
    const input = section(detail, /^Input$/);
    await expect.poll(() => placeholders(input)).toEqual(["[REDACTED:email]", "[REDACTED:credit_card]", "[REDACTED:employee_id]"]);
    // Drawn as a badge (dashed border, monospace), with a title saying what masked it.
    const badge = input.getByTestId("redacted").first();
    const style = await badge.evaluate((el) => {
      const s = (globalThis as any).getComputedStyle(el);
      return { border: s.borderTopStyle, font: s.fontFamily };
    });
    expect(style.border).toBe("dashed");
    expect(style.font).toMatch(/mono/i);
    expect(await badge.getAttribute("title")).toContain("(email)");
    // Nothing to toggle: mask mode keeps no original.
    expect(await detail.getByTestId("redacted-toggle").count()).toBe(0);
    expect(await page.getByTestId("trace-view").textContent()).not.toContain("jane.doe@example.com");
    await shot(page, "redaction-masked-trace");
  });

  it("opens a shadow-mode record on its redacted view, with a toggle to the original", async () => {
    // Switch to shadow on the policy page.
    await page.goto(`/projects/${server.demo.project_id}/redaction`);
    const form = page.getByTestId("redaction-form");
    await form.locator('select[name="mode"]').selectOption("shadow");
    await page.getByTestId("save-redaction").click();
    await expect.poll(() => page.getByTestId("save-redaction").textContent()).toBe("Saved");
    expect((await api("GET", policyPath())).body.mode).toBe("shadow");

    const { traceId, spanId } = await ingest(
      "shadow order",
      "I'm jane.doe@example.com, charge card 4111 1111 1111 1111",
      "Charged card 4111 1111 1111 1111.",
      [{ role: "user", content: "my mail is john.roe@example.org" }],
    );
    const stored = (await api("GET", `/v2/projects/${server.demo.project_id}/traces/${traceId}`)).body;
    expect(stored.input).toBe("I'm jane.doe@example.com, charge card 4111 1111 1111 1111");
    expect(stored.redacted_input).toBe("I'm [REDACTED:email], charge card [REDACTED:credit_card]");

    await page.goto(tracePath(traceId));
    const view = page.getByTestId("trace-view");
    const detail = page.getByTestId("record-detail").filter({ hasText: "shadow order" });
    await detail.waitFor();
    const toggle = detail.getByTestId("redacted-toggle").locator("input");
    // The redacted view first: placeholders, no original anywhere in the detail.
    expect(await toggle.isChecked()).toBe(true);
    const [toggleBox, toggleLabel] = [(await toggle.boundingBox())!, (await detail.getByTestId("redacted-toggle").boundingBox())!];
    expect(Math.abs(toggleBox.y + toggleBox.height / 2 - (toggleLabel.y + toggleLabel.height / 2))).toBeLessThan(4);
    expect(await placeholders(section(detail, /^Input \(redacted\)$/))).toEqual(["[REDACTED:email]", "[REDACTED:credit_card]"]);
    expect(await placeholders(section(detail, /^Output \(redacted\)$/))).toEqual(["[REDACTED:credit_card]"]);
    expect(await detail.textContent()).not.toContain("jane.doe@example.com");
    expect(await detail.textContent()).not.toContain("4111 1111 1111 1111");
    await shot(page, "redaction-shadow-redacted");

    // The toggle shows the original, by choice.
    await toggle.uncheck();
    await expect.poll(() => section(detail, /^Input$/).textContent()).toContain("I'm jane.doe@example.com, charge card 4111 1111 1111 1111");
    expect(await detail.getByTestId("redacted").count()).toBe(0);
    await toggle.check();
    await expect.poll(() => placeholders(section(detail, /^Input \(redacted\)$/))).toEqual(["[REDACTED:email]", "[REDACTED:credit_card]"]);

    // Seeing one record's original is not seeing every record's: the span opens redacted.
    await toggle.uncheck();
    await expect.poll(() => detail.textContent()).toContain("jane.doe@example.com");
    await view.getByRole("treeitem").filter({ hasText: "shadow order llm" }).click();
    const spanDetail = page.getByTestId("record-detail").filter({ hasText: "shadow order llm" });
    await spanDetail.waitFor();
    expect(new URL(page.url()).searchParams.get("span")).toBe(spanId);
    expect(await spanDetail.getByTestId("redacted-toggle").locator("input").isChecked()).toBe(true);
    expect(await placeholders(section(spanDetail, /^Input \(redacted\)$/))).toEqual(["[REDACTED:email]"]);
    expect(await spanDetail.textContent()).not.toContain("john.roe@example.org");
  });
});

async function shot(target: Page, name: string): Promise<void> {
  await target.screenshot({ path: join(ARTIFACTS, `${name}.png`) });
}
