/**
 * Page loads of the explorer's 100-row traces table in headless Chromium (the browser tests'
 * launcher, test/node/chromium.ts), each giving two figures from the same page:
 *
 * - **explorer**: the page's own `records-table-render` measure (ui/src/views/records-table.tsx):
 *   from the moment the search's JSON is parsed to the table laid out (Preact's render of the
 *   page for the new answer, style and layout);
 * - **reference**: the same table drawn without the explorer, right after, in the same page: the
 *   cells' text (and their class, so the explorer's stylesheet lays them out alike) read from the
 *   explorer's table, turned into an HTML string, set through innerHTML into a new box next to
 *   the explorer's, and laid out (a forced read of offsetHeight, as the explorer's measure does),
 *   timed from the start of the string's building. It is what the browser itself needs for that
 *   table, so the ratio is what the explorer adds, and both come from the same moment's load.
 */
import type { Browser, Page } from "playwright-core";
import { launchChromium } from "../../test/node/chromium";
import type { UiService } from "./ui-service";

/** The browser tests' viewport. */
const VIEWPORT = { width: 1280, height: 800 };
export const PAGE_ROWS = 100;

export interface RenderSample {
  explorerMs: number;
  referenceMs: number;
}

export interface TableRenders {
  /** Every page load's figures, the warm-up's first. */
  samples: RenderSample[];
  rows: number;
  columns: number;
  browserVersion: string;
}

/**
 * The reference render, as text: the bench is type-checked without the DOM's types, and the page
 * runs it through the DevTools protocol (its Content-Security-Policy allows no eval of its own).
 */
const REFERENCE_RENDER = `(() => {
  const explorer = document.querySelector("table.records");
  const heads = [...explorer.tHead.rows[0].cells].map((th) => th.textContent);
  const rows = [...explorer.tBodies[0].rows].map((tr) => [...tr.cells].map((td) => [td.className, td.textContent]));
  const escape = (text) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  const start = performance.now();
  let html = '<table class="records"><thead><tr>';
  for (const head of heads) html += "<th>" + escape(head) + "</th>";
  html += "</tr></thead><tbody>";
  for (const row of rows) {
    html += "<tr>";
    for (const [className, text] of row) html += '<td class="' + escape(className) + '">' + escape(text) + "</td>";
    html += "</tr>";
  }
  html += "</tbody></table>";
  const box = document.createElement("div");
  box.className = "table-scroll";
  box.innerHTML = html;
  explorer.closest(".table-scroll").after(box);
  void box.offsetHeight;
  const measure = performance.measure("reference-table-render", { start, end: performance.now() });
  box.remove();
  return { ms: measure.duration, rows: rows.length, columns: heads.length };
})()`;

async function signInWithKey(page: Page, apiKey: string): Promise<void> {
  await page.goto("/");
  await page.getByRole("tab", { name: "API key" }).click();
  await page.getByLabel("API key").fill(apiKey);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("link", { name: /^demo\s/ }).waitFor();
}

/** One load of the run's traces page with 100 rows: both figures, checked to be of 100 rows. */
async function measureLoad(page: Page, path: string): Promise<RenderSample & { rows: number; columns: number }> {
  await page.goto(path);
  const rows = page.locator("table.records tbody tr");
  await rows.nth(PAGE_ROWS - 1).waitFor({ timeout: 30_000 });
  const measured = (await page.evaluate(`performance.getEntriesByName("records-table-render").map((e) => [e.duration, e.detail.rows])`)) as [number, number][];
  // One measure per answer, for the rows drawn: anything else is not the figure this bench reports.
  if (measured.length !== 1 || measured[0]![1] !== PAGE_ROWS) throw new Error(`expected one records-table-render measure of ${PAGE_ROWS} rows, got ${JSON.stringify(measured)}`);
  const reference = (await page.evaluate(REFERENCE_RENDER)) as { ms: number; rows: number; columns: number };
  if (reference.rows !== PAGE_ROWS) throw new Error(`the reference drew ${reference.rows} rows, not ${PAGE_ROWS}`);
  return { explorerMs: measured[0]![0], referenceMs: reference.ms, rows: reference.rows, columns: reference.columns };
}

/** `loads` page loads in one page of one browser, signed in with the demo's API key. */
export async function measureTableRenders(service: UiService, loads: number): Promise<TableRenders> {
  const browser: Browser = await launchChromium();
  try {
    const context = await browser.newContext({ viewport: VIEWPORT, colorScheme: "light", baseURL: service.server.baseUrl });
    const page = await context.newPage();
    const errors: Error[] = [];
    page.on("pageerror", (error) => errors.push(error));
    await signInWithKey(page, service.demo.api_key);
    const path = `/projects/${service.demo.project_id}/log_streams/${service.runId}/traces?size=${PAGE_ROWS}`;
    const samples: RenderSample[] = [];
    let shape = { rows: 0, columns: 0 };
    for (let load = 0; load < loads; load++) {
      const { rows, columns, ...sample } = await measureLoad(page, path);
      samples.push(sample);
      shape = { rows, columns };
    }
    if (errors.length > 0) throw new Error(`the page reported errors: ${errors.map((e) => e.message).join("; ")}`);
    return { samples, ...shape, browserVersion: browser.version() };
  } finally {
    await browser.close();
  }
}
