/// <reference types="node" />
/**
 * The records table's Export button and "delete the records matching this filter" in a real
 * headless Chromium against `npm start` (its own server and demo dataset): a streamed download and
 * a queued export to (miniflare's local) R2 each hold exactly what the API exports for the same
 * filter and columns; a member is not offered the deletion; an admin sees the dry run's counts,
 * confirms, and the table reads its page again without the deleted records.
 */
import { readFileSync } from "node:fs";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BROWSER_WAIT_MS, newBrowserContext, signInWithPassword } from "./browser-session";
import { launchChromium } from "./chromium";
import { type DemoServer, startDemoServer } from "./demo-server";

let server: DemoServer;
let browser: Browser;
const contexts: BrowserContext[] = [];

async function apiText(path: string, body: unknown): Promise<string> {
  const response = await fetch(`${server.origin}${path}`, {
    method: "POST",
    headers: { "Service-API-Key": server.demo.api_key, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(200);
  return response.text();
}

async function newPage(): Promise<Page> {
  const context = await newBrowserContext(browser, { viewport: { width: 1280, height: 800 }, baseURL: server.origin, acceptDownloads: true });
  contexts.push(context);
  const page = await context.newPage();
  page.on("pageerror", (error) => {
    throw error;
  });
  return page;
}

const CUSTOMER = (customer: string) => ({ column_id: "user_metadata.customer", operator: "eq", value: customer, type: "text" });

function tracesPath(filter?: unknown, cols?: string): string {
  const params = new URLSearchParams();
  if (filter) params.set("filter", JSON.stringify(filter));
  if (cols) params.set("cols", cols);
  const query = params.toString();
  return `/projects/${server.demo.project_id}/log_streams/${server.demo.log_stream_id}/traces${query ? `?${query}` : ""}`;
}

const rowCount = (page: Page) => page.locator("table.records tbody tr").count();

beforeAll(async () => {
  // The second `npm start` of a loaded machine may take minutes to apply its migrations.
  [server, browser] = await Promise.all([startDemoServer(400_000), launchChromium()]);
}, 420_000);

afterAll(async () => {
  for (const context of contexts) await context.close().catch(() => undefined);
  await browser?.close();
  await server?.stop();
});

describe("exporting from the records table", () => {
  it("downloads the table's filter and columns as CSV, exactly what the API streams", async () => {
    const page = await newPage();
    await signInWithPassword(page, server.demo.email, server.demo.password!);
    const filter = CUSTOMER("globex");
    await page.goto(tracesPath(filter, "name,input,created_at"));
    await expect.poll(() => rowCount(page), { timeout: 15_000 }).toBeGreaterThan(0);
    await page.getByTestId("export-button").click();
    const menu = page.getByRole("dialog", { name: "Export" });
    await menu.getByLabel("Format").selectOption("csv");
    const [download] = await Promise.all([page.waitForEvent("download"), menu.getByRole("button", { name: "Download" }).click()]);
    expect(download.suggestedFilename()).toBe("traces-export.csv");
    const saved = readFileSync((await download.path())!, "utf8");
    const expected = await apiText(`/v2/projects/${server.demo.project_id}/export_records`, {
      log_stream_id: server.demo.log_stream_id,
      root_type: "trace",
      export_format: "csv",
      filter_tree: filter,
      column_ids: ["name", "input", "created_at"],
    });
    expect(saved).toBe(expected);
    expect(saved.split("\n")[0]).toBe("name,input,created_at");
    expect(saved.trim().split("\n").length - 1).toBe(await rowCount(page));
  });

  it("queues a file, follows its progress to a link that needs no credentials, unredacted when asked", async () => {
    const page = await newPage();
    await signInWithPassword(page, server.demo.member_email, server.demo.member_password!);
    await page.goto(tracesPath());
    await expect.poll(() => rowCount(page), { timeout: 15_000 }).toBeGreaterThan(0);
    await page.getByTestId("export-button").click();
    const menu = page.getByRole("dialog", { name: "Export" });
    await menu.getByLabel("Format").selectOption("jsonl_flat");
    await menu.getByLabel("Redacted input and output").uncheck();
    await menu.getByRole("button", { name: "Export to a file" }).click();
    const job = page.getByTestId("export-job");
    await expect.poll(() => job.getAttribute("data-status"), { timeout: BROWSER_WAIT_MS }).toBe("completed");
    const href = await job.getByRole("link").getAttribute("href");
    const file = await fetch(href!);
    expect(file.status).toBe(200);
    const expected = await apiText(`/v2/projects/${server.demo.project_id}/export_records`, {
      log_stream_id: server.demo.log_stream_id,
      root_type: "trace",
      export_format: "jsonl_flat",
      redact: false,
    });
    expect(await file.text()).toBe(expected);
    // A member exports, but is not offered deleting.
    expect(await menu.getByTestId("delete-matching").count()).toBe(0);
  });

  it("lets an admin delete the records matching the filter after the dry run's counts", async () => {
    const page = await newPage();
    await signInWithPassword(page, server.demo.email, server.demo.password!);
    const filter = CUSTOMER("umbrella");
    const before = await fetch(`${server.origin}/v2/projects/${server.demo.project_id}/traces/delete?dry_run=true`, {
      method: "POST",
      headers: { "Service-API-Key": server.demo.api_key, "content-type": "application/json" },
      body: JSON.stringify({ log_stream_id: server.demo.log_stream_id, filter_tree: filter }),
    }).then((r) => r.json() as Promise<{ would_delete: { sessions: number; traces: number; spans: number } }>);
    expect(before.would_delete.traces).toBeGreaterThan(0);
    await page.goto(tracesPath(filter));
    await expect.poll(() => rowCount(page), { timeout: 15_000 }).toBe(before.would_delete.traces);
    await page.getByTestId("export-button").click();
    await page.getByTestId("delete-matching").click();
    const counts = `${before.would_delete.sessions} sessions, ${before.would_delete.traces} traces and ${before.would_delete.spans} spans`;
    await expect.poll(() => page.getByTestId("delete-dry-run").textContent()).toContain(counts);
    await page.getByTestId("confirm-delete-matching").click();
    await expect.poll(() => page.getByTestId("delete-result").textContent(), { timeout: BROWSER_WAIT_MS }).toContain("Deleted");
    await expect.poll(() => page.locator(".empty-table").count(), { timeout: 15_000 }).toBe(1);
  });
});
