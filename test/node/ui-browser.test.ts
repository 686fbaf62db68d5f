/// <reference types="node" />
/**
 * The trace explorer in a real headless Chromium against `npm start` (wrangler dev on a free
 * loopback port, the demo dataset it seeds): one server and one browser for the whole file.
 * Every check that a view shows records compares them with what the public API answers for the
 * same request, so a change to the API that breaks the page fails here.
 *
 * Screenshots of each main view go to test/node/.artifacts/ (git-ignored); docs/screenshots/ holds
 * the copies the README shows (copied by hand: `cp test/node/.artifacts/dashboard*.png docs/screenshots/`).
 */
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { BROWSER_WAIT_MS, demoApi, newBrowserContext, signInWithPassword, watchPage } from "./browser-session";
import { launchChromium } from "./chromium";
import { type DemoServer, startDemoServer } from "./demo-server";
import { renderTimingTraces } from "./render-timing-traces";

const ARTIFACTS = resolve(import.meta.dirname, ".artifacts");
const VIEWPORT = { width: 1280, height: 800 };

let server: DemoServer;
let browser: Browser;
const contexts: BrowserContext[] = [];
/** Content-Security-Policy violations any page reported (each test must end with none). */
const cspViolations: string[] = [];

const api = demoApi(() => server);

/** Ids of the records the API returns for a partial search of the demo run. */
async function searchIds(family: string, body: Record<string, unknown>): Promise<string[]> {
  const answer = await api<{ records: { id: string }[] }>("POST", `/v2/projects/${server.demo.project_id}/${family}/partial_search`, {
    log_stream_id: server.demo.log_stream_id,
    select_columns: { column_ids: ["id"] },
    ...body,
  });
  expect(answer.status).toBe(200);
  return answer.body.records.map((r) => r.id);
}

async function newPage(colorScheme: "light" | "dark" = "light"): Promise<Page> {
  const context = await newBrowserContext(browser, { viewport: VIEWPORT, colorScheme, baseURL: server.origin });
  contexts.push(context);
  const page = await context.newPage();
  // Scalar's bundle tries eval on /docs and works without it (the policy keeps it blocked).
  await watchPage(page, cspViolations, ["CSP violation: script-src blocked eval on /docs"]);
  return page;
}

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`) });
}

async function signInWithKey(page: Page, key: string): Promise<void> {
  await page.getByRole("tab", { name: "API key" }).click();
  await page.getByLabel("API key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
}

const rowIds = (page: Page) => page.locator("table.records tbody tr").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-id")!));

function runPath(family: string, query = ""): string {
  return `/projects/${server.demo.project_id}/log_streams/${server.demo.log_stream_id}/${family}${query}`;
}

async function waitForRows(page: Page, count: number): Promise<void> {
  await expect.poll(() => page.locator("table.records tbody tr").count(), { timeout: BROWSER_WAIT_MS }).toBe(count);
}

/** A page signed in as the demo admin, kept for the tests that follow each other through the views. */
let admin: Page;

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  [server, browser] = await Promise.all([startDemoServer(), launchChromium()]);
  admin = await newPage();
}, 240_000);

afterEach(() => {
  expect(cspViolations.splice(0)).toEqual([]);
});

afterAll(async () => {
  for (const context of contexts) await context.close().catch(() => undefined);
  await browser?.close();
  await server?.stop();
});

describe("trace explorer", () => {
  it("signs in with email and password, keeps the token for the tab only, and signs out", async () => {
    const page = await newPage();
    await page.goto("/");
    await expect.poll(() => new URL(page.url()).pathname).toBe("/sign-in");
    await shot(page, "sign-in");
    await signInWithPassword(page, server.demo.email, server.demo.password!);
    await page.getByRole("link", { name: /^demo\s/ }).waitFor();
    // Browser-side code is passed as text: this file is type-checked without the DOM's types.
    const stored = (await page.evaluate(`({ session: sessionStorage.getItem("trace-store.token"), local: localStorage.length })`)) as { session: string | null; local: number };
    expect(stored.session).toMatch(/^ey/);
    expect(stored.local).toBe(0);
    await shot(page, "projects");

    await page.getByRole("button", { name: "Sign out" }).click();
    await expect.poll(() => new URL(page.url()).pathname).toBe("/sign-in");
    expect(await page.evaluate(`sessionStorage.getItem("trace-store.token")`)).toBeNull();
    // Signing out ended the token on the server too (POST /v2/logout): a copy of it is worthless.
    const withOldToken = () => fetch(`${server.origin}/v2/current_user`, { headers: { Authorization: `Bearer ${stored.session}` } }).then((r) => r.status);
    await expect.poll(withOldToken, { timeout: 10_000 }).toBe(401);
    await page.goto("/");
    await page.getByRole("button", { name: "Sign in" }).waitFor();
  });

  it("signs in with an API key, refuses a wrong one, and sends a 401 back to sign-in and then where the user was", async () => {
    const page = await newPage();
    await page.goto("/");
    await signInWithKey(page, "tsk_not-a-real-key");
    await expect.poll(() => page.getByRole("alert").textContent()).toContain("Invalid API key");

    await signInWithKey(page, server.demo.api_key);
    await page.getByRole("link", { name: /^demo\s/ }).waitFor();

    // A token the service no longer accepts (here: tampered) is a 401 on the next call.
    const target = runPath("traces");
    await page.evaluate(`sessionStorage.setItem("trace-store.token", "eyJhbGciOiJIUzI1NiJ9.e30.bad")`);
    await page.goto(target);
    await expect.poll(() => new URL(page.url()).pathname).toBe("/sign-in");
    expect(new URL(page.url()).searchParams.get("next")).toBe(target);
    await signInWithKey(page, server.demo.api_key);
    await expect.poll(() => new URL(page.url()).pathname).toBe(target);
    await waitForRows(page, 7);
  });

  it("browses to the demo run's traces: the API's records, columns from available_columns, the total", async () => {
    await signInWithPassword(admin, server.demo.email, server.demo.password!);
    await admin.getByRole("link", { name: /^demo\s/ }).click();
    // A project opens on its run's dashboard; the traces are one click away.
    await expect.poll(() => new URL(admin.url()).pathname).toBe(runPath("dashboard"));
    await admin.getByRole("navigation", { name: "Run views" }).getByRole("link", { name: "Traces" }).click();
    await waitForRows(admin, 7);
    expect(await rowIds(admin)).toEqual(await searchIds("traces", {}));
    await expect.poll(() => admin.getByTestId("page-range").textContent()).toBe("1–7 of 7");

    // Metric columns carry their units; picking one adds it to the table and to the URL.
    const columns = await api<{ columns: { id: string; label: string; data_unit?: string }[] }>(
      "POST",
      `/v2/projects/${server.demo.project_id}/traces/available_columns`,
      { log_stream_id: server.demo.log_stream_id },
    );
    const cost = columns.body.columns.find((c) => c.id === "metrics/cost")!;
    expect(cost.data_unit).toBe("dollars");
    await admin.getByTestId("column-picker-button").click();
    await admin.getByRole("dialog", { name: "Columns" }).getByLabel(/Cost \(\$\)/).check();
    await admin.getByRole("button", { name: "Done" }).click();
    await admin.locator('th[data-column="metrics/cost"]').filter({ hasText: "Cost ($)" }).waitFor();
    expect(new URL(admin.url()).searchParams.get("cols")).toContain("metrics/cost");
    const costIndex = await admin.locator("thead th").evaluateAll((ths) => ths.findIndex((th) => th.getAttribute("data-column") === "metrics/cost"));
    const costCells = admin.locator(`table.records tbody tr td:nth-child(${costIndex + 1})`);
    // The header shows at once; the values come with the next search.
    await expect.poll(async () => (await costCells.allTextContents()).filter((c) => c !== "—").length).toBeGreaterThan(0);
    const costs = await costCells.allTextContents();
    for (const c of costs) expect(c).toMatch(/^(\$[0-9.e-]+|—)$/);
    await shot(admin, "traces-table");
  });

  it("sorts by a clicked header exactly as the API sorts", async () => {
    await admin.locator('th[data-column="name"] button').click();
    await expect.poll(() => admin.locator('th[data-column="name"]').getAttribute("aria-sort")).toBe("ascending");
    await expect.poll(() => rowIds(admin)).toEqual(await searchIds("traces", { sort: { column_id: "name", ascending: true } }));
    await admin.locator('th[data-column="name"] button').click();
    await expect.poll(() => admin.locator('th[data-column="name"]').getAttribute("aria-sort")).toBe("descending");
    await expect.poll(() => rowIds(admin)).toEqual(await searchIds("traces", { sort: { column_id: "name", ascending: false } }));
    expect(new URL(admin.url()).searchParams.get("sort")).toBe("name:desc");
  });

  it("pages through the spans, and the back button returns to the page before", async () => {
    await admin.getByRole("link", { name: "Spans" }).click();
    await admin.getByLabel("Rows per page").selectOption("25");
    await waitForRows(admin, 25);
    const total = (await searchIds("spans", { pagination: { limit: 1000 } })).length;
    await expect.poll(() => admin.getByTestId("page-range").textContent()).toBe(`1–25 of ${total}`);
    expect(await rowIds(admin)).toEqual(await searchIds("spans", { pagination: { limit: 25, starting_token: 0 } }));

    await admin.getByRole("button", { name: "Next →" }).click();
    await waitForRows(admin, total - 25);
    expect(new URL(admin.url()).searchParams.get("page")).toBe("2");
    expect(await rowIds(admin)).toEqual(await searchIds("spans", { pagination: { limit: 25, starting_token: 25 } }));
    await expect.poll(() => admin.getByTestId("page-range").textContent()).toBe(`26–${total} of ${total}`);

    await admin.goBack();
    await waitForRows(admin, 25);
    await expect.poll(() => admin.getByTestId("page-range").textContent()).toBe(`1–25 of ${total}`);
  });

  it("filters with a NOT group and a metric comparison, showing what the API returns for the same tree", async () => {
    await admin.goto(runPath("spans"));
    await admin.getByTestId("filter-toggle").click();
    const root = admin.getByTestId("filter-group").first();
    // toxicity >= 0.02
    await root.getByRole("button", { name: "+ Condition" }).last().click();
    const metric = root.getByTestId("filter-leaf").first();
    await metric.getByLabel("Column").selectOption("metrics/toxicity");
    await metric.getByLabel("Operator").selectOption("gte");
    await metric.getByLabel("Value").fill("0.02");
    await metric.getByLabel("Value").press("Tab");
    // NOT (name contains "reply")
    await root.getByRole("button", { name: "+ Group" }).last().click();
    const group = root.getByTestId("filter-group").first();
    await group.getByRole("checkbox", { name: "NOT" }).check();
    await group.getByRole("button", { name: "+ Condition" }).click();
    const name = group.getByTestId("filter-leaf").first();
    await name.getByLabel("Column").selectOption("name");
    await name.getByLabel("Operator").selectOption("contains");
    await name.getByLabel("Value").fill("reply");
    await name.getByLabel("Value").press("Tab");
    await admin.getByTestId("apply-filter").click();

    await expect.poll(() => new URL(admin.url()).searchParams.get("filter")).not.toBeNull();
    const tree = JSON.parse(new URL(admin.url()).searchParams.get("filter")!);
    expect(tree).toEqual({
      and: [
        { type: "number", column_id: "metrics/toxicity", operator: "gte", value: 0.02 },
        { not: { or: [{ type: "text", column_id: "name", operator: "contains", value: "reply", case_sensitive: true }] } },
      ],
    });
    // The JSON view shows the tree that was sent.
    await admin.getByText("Filter tree JSON").click();
    expect(JSON.parse(await admin.getByLabel("Filter tree JSON").inputValue())).toEqual(tree);

    const expected = await searchIds("spans", { filter_tree: tree });
    expect(expected.length).toBeGreaterThan(0);
    await expect.poll(() => rowIds(admin)).toEqual(expected);
    await expect.poll(() => admin.getByTestId("page-range").textContent()).toBe(`1–${expected.length} of ${expected.length}`);
    await shot(admin, "filter");

    // A date condition set by a quick range: the rows are the API's for the tree in the URL.
    await admin.goto(runPath("traces"));
    await admin.getByTestId("filter-toggle").click();
    await admin.getByRole("button", { name: "+ Condition" }).click();
    const date = admin.getByTestId("filter-leaf").first();
    await date.getByLabel("Column").selectOption("created_at");
    await date.getByRole("button", { name: "Last day" }).click();
    expect(await date.getByLabel("Operator").inputValue()).toBe("gte");
    expect(await date.getByLabel("Date and time").inputValue()).not.toBe("");
    await admin.getByTestId("apply-filter").click();
    await expect.poll(() => new URL(admin.url()).searchParams.get("filter")).toContain("created_at");
    const dateTree = JSON.parse(new URL(admin.url()).searchParams.get("filter")!);
    expect(Date.now() - Date.parse(dateTree.and[0].value)).toBeLessThan(86_400_000 + 60_000);
    await expect.poll(() => rowIds(admin)).toEqual(await searchIds("traces", { filter_tree: dateTree }));
    // Back to the spans filter, by its link (the URL holds it).
    await admin.goto(runPath("spans", `?filter=${encodeURIComponent(JSON.stringify(tree))}`));
    await expect.poll(() => rowIds(admin)).toEqual(expected);
    await admin.getByText("Filter tree JSON").click();

    // An edited tree the service refuses: its 422 is shown next to the leaf it names.
    const bad = { and: [tree.and[0], { type: "number", column_id: "name", operator: "gt", value: 3 }] };
    await admin.getByLabel("Filter tree JSON").fill(JSON.stringify(bad));
    await admin.getByTestId("apply-json").click();
    const refused = await api("POST", `/v2/projects/${server.demo.project_id}/spans/partial_search`, { log_stream_id: server.demo.log_stream_id, filter_tree: bad });
    expect(refused.status).toBe(422);
    const faulty = admin.getByTestId("filter-leaf").nth(1);
    await faulty.locator(".leaf-errors").waitFor();
    expect(await faulty.locator(".leaf-errors").textContent()).toContain(refused.body.detail[0].msg);
    expect(await admin.getByTestId("filter-leaf").first().locator(".leaf-errors").count()).toBe(0);
  });

  it("opens a trace: its span tree beside a waterfall, a span's conversation, model and tokens", async () => {
    const [trace] = (await api("POST", `/v2/projects/${server.demo.project_id}/traces/partial_search`, {
      log_stream_id: server.demo.log_stream_id,
      filters: [{ column_id: "name", operator: "eq", value: "refunds: first answer" }],
      include_counts: true,
    })).body.records;
    await admin.goto(runPath("traces"));
    // Keyboard: arrows move through the rows, Enter opens one.
    await waitForRows(admin, 7);
    const ids = await rowIds(admin);
    expect(ids).toContain(trace.id);
    await admin.locator("table.records tbody tr").first().focus();
    for (let i = 0; i < ids.indexOf(trace.id); i++) await admin.keyboard.press("ArrowDown");
    await admin.keyboard.press("Enter");
    const view = admin.getByTestId("trace-view");
    await view.getByRole("tree").waitFor();
    // The trace and every span, each with a bar on the shared time axis.
    await expect.poll(() => view.getByRole("treeitem").count()).toBe(1 + trace.num_spans);
    expect(await view.getByTestId("waterfall-bar").count()).toBe(1 + trace.num_spans);
    expect(new URL(admin.url()).searchParams.get("open")).toBe(trace.id);

    await view.getByRole("treeitem").filter({ hasText: "draft-answer" }).click();
    const detail = view.getByTestId("record-detail");
    await detail.filter({ hasText: "draft-answer" }).waitFor();
    expect(await detail.locator(".message-system").textContent()).toContain("support assistant");
    expect(await detail.locator(".message-user").first().textContent()).toContain("arrived damaged");
    expect(await detail.locator(".message-assistant").textContent()).toContain("refund request R-88");
    const facts = await detail.locator(".facts").textContent();
    expect(facts).toContain("gpt-4o-mini");
    expect(facts).toContain("412");
    expect(new URL(admin.url()).searchParams.get("span")).not.toBeNull();
    await shot(admin, "trace");

    // Keyboard: up selects the span above (the retriever), Escape closes the view.
    await admin.keyboard.press("ArrowUp");
    await detail.filter({ hasText: "knowledge-base-search" }).waitFor();
    await admin.keyboard.press("Escape");
    await view.waitFor({ state: "detached" });
    expect(new URL(admin.url()).searchParams.get("open")).toBeNull();
  });

  it("finds typed text in inputs, outputs and names (debounced, from 3 characters, with the filter tree), marked in the table and the open trace", async () => {
    const anyColumn = (text: string) => ({ or: ["input", "output", "name"].map((column_id) => ({ type: "text", column_id, operator: "contains", value: text, case_sensitive: false })) });
    await admin.goto(runPath("traces"));
    await waitForRows(admin, 7);
    const searches: string[] = [];
    const listen = (request: { url(): string; method(): string }) => {
      if (request.method() === "POST" && request.url().endsWith("/traces/partial_search")) searches.push(request.url());
    };
    admin.on("request", listen);
    const box = admin.getByTestId("text-search");
    // Two characters: no search, a hint.
    await box.pressSequentially("RE", { delay: 30 });
    await admin.getByText("at least 3 characters").waitFor();
    await admin.waitForTimeout(600);
    expect(searches).toEqual([]);
    // The rest of the word, typed: searched once it pauses (not once per keystroke: 4 searches).
    await box.pressSequentially("FUND", { delay: 30 });
    await expect.poll(() => new URL(admin.url()).searchParams.get("q")).toBe("REFUND");
    const expected = await searchIds("traces", { filter_tree: anyColumn("REFUND") });
    expect(expected.length).toBeGreaterThan(0);
    expect(expected.length).toBeLessThan(7);
    await expect.poll(() => rowIds(admin)).toEqual(expected);
    await admin.waitForTimeout(600);
    admin.off("request", listen);
    expect(searches.length).toBeGreaterThan(0);
    expect(searches.length).toBeLessThan(4);
    // The total comes with the count request, after the rows (slower on a loaded machine).
    await expect.poll(() => admin.getByTestId("page-range").textContent(), { timeout: BROWSER_WAIT_MS }).toBe(`1–${expected.length} of ${expected.length}`);
    // Every match on screen is marked, case folded as the service folds it.
    const marks = await admin.locator("table.records tbody mark").allTextContents();
    expect(marks.length).toBeGreaterThan(0);
    for (const mark of marks) expect(mark.toLowerCase()).toBe("refund");
    await shot(admin, "text-search");

    // With a filter tree: the rows are the API's for the tree AND the text.
    const tree = { type: "text", column_id: "name", operator: "contains", value: "follow-up", case_sensitive: true };
    await admin.goto(runPath("traces", `?filter=${encodeURIComponent(JSON.stringify(tree))}&q=refund`));
    const both = await searchIds("traces", { filter_tree: { and: [tree, anyColumn("refund")] } });
    expect(both.length).toBeGreaterThan(0);
    expect(both.length).toBeLessThan(expected.length);
    await expect.poll(() => rowIds(admin)).toEqual(both);
    expect(await box.inputValue()).toBe("refund");

    // The open trace marks the text in its tree, its names and the selected span's input and output.
    await admin.locator("table.records tbody tr").first().click();
    const view = admin.getByTestId("trace-view");
    await view.getByRole("tree").waitFor();
    await expect.poll(() => view.locator("mark").count()).toBeGreaterThan(0);
    for (const mark of await view.locator("mark").allTextContents()) expect(mark.toLowerCase()).toBe("refund");

    // Clearing the box (Escape) shows every trace again.
    await box.press("Escape");
    await expect.poll(() => new URL(admin.url()).searchParams.get("q")).toBeNull();
    await expect.poll(() => admin.locator("table.records tbody tr").count()).toBeGreaterThan(both.length);
    expect(await admin.locator("table.records tbody mark").count()).toBe(0);
  });

  it("shows a failed tool call's error, and the trace view in the dark theme", async () => {
    const page = await newPage("dark");
    await signInWithKey(await (async () => (await page.goto("/"), page))(), server.demo.api_key);
    const [trace] = (await api("POST", `/v2/projects/${server.demo.project_id}/traces/partial_search`, {
      log_stream_id: server.demo.log_stream_id,
      filters: [{ column_id: "status_code", operator: "eq", value: 500 }],
    })).body.records;
    await page.goto(runPath("traces", `?open=${trace.id}`));
    const view = page.getByTestId("trace-view");
    await view.getByRole("treeitem").filter({ hasText: "account_lookup" }).click();
    await expect.poll(() => view.getByTestId("record-error").textContent()).toContain("account-service timed out");
    expect(await page.evaluate(`matchMedia("(prefers-color-scheme: dark)").matches`)).toBe(true);
    await shot(page, "trace-dark");
  });

  it("shows a session's traces in order, as a conversation", async () => {
    await admin.goto(runPath("sessions"));
    await waitForRows(admin, 3);
    const [session] = (await api("POST", `/v2/projects/${server.demo.project_id}/sessions/partial_search`, {
      log_stream_id: server.demo.log_stream_id,
      filters: [{ column_id: "name", operator: "eq", value: "Refund for a damaged order" }],
    })).body.records;
    await admin.locator(`tr[data-id="${session.id}"]`).click();
    const view = admin.getByTestId("session-view");
    await expect.poll(() => view.getByTestId("session-turn").count()).toBe(2);
    const turns = await view.getByTestId("session-turn").allTextContents();
    expect(turns[0]).toContain("arrived damaged");
    expect(turns[1]).toContain("send the item back");
    await shot(admin, "session");
    await admin.keyboard.press("Escape");
  });

  it("shows a 429 and a 403 as what they are, never a blank page", async () => {
    const page = await newPage();
    await page.goto("/");
    await signInWithKey(page, server.demo.api_key);
    await page.getByRole("link", { name: /^demo\s/ }).waitFor();
    // The service's answers are replaced here: neither can be provoked on demand.
    await page.route("**/v2/projects", (route) =>
      route.fulfill({ status: 429, headers: { "retry-after": "7", "content-type": "application/json" }, body: JSON.stringify({ detail: "Rate limit exceeded" }) }),
    );
    await page.reload();
    const alert = page.getByRole("alert");
    await expect.poll(() => alert.textContent()).toContain("Too many requests (429)");
    expect(await alert.textContent()).toContain("try again in 7 s");
    expect(await alert.getAttribute("data-status")).toBe("429");
    await page.unroute("**/v2/projects");
    await page.route("**/v2/projects", (route) => route.fulfill({ status: 403, contentType: "application/json", body: JSON.stringify({ detail: "Not allowed" }) }));
    await alert.getByRole("button", { name: "Try again" }).click();
    await expect.poll(() => alert.getAttribute("data-status")).toBe("403");
    expect(await alert.textContent()).toContain("Not allowed (403)");
    // Still signed in: only a 401 ends the session.
    expect(await page.evaluate(`sessionStorage.getItem("trace-store.token")`)).not.toBeNull();
  });

  it("does not offer erasing to a member", async () => {
    const page = await newPage();
    await signInWithPassword(page, server.demo.member_email, server.demo.member_password!);
    await expect.poll(() => page.getByTestId("current-user").textContent()).toContain("(member)");
    expect(await page.getByTestId("nav-erase").count()).toBe(0);
    await page.goto("/erase");
    await page.getByText("Only organization admins can erase data").waitFor();
    expect(await page.getByRole("button", { name: "Dry run" }).count()).toBe(0);
  });

  it("lets an admin run a dry run, confirm the counts, and follow the deletion to completion", async () => {
    const dry = await api("POST", "/v2/org-jobs/delete-by-metadata?dry_run=true", { metadata_key: "customer", metadata_value: "initech" });
    const counts = dry.body.would_delete as { sessions: number; traces: number; spans: number };
    expect(counts.traces).toBe(2);

    await admin.goto("/");
    await admin.getByTestId("nav-erase").click();
    await admin.getByLabel("Metadata key").fill("customer");
    await admin.getByLabel("Value").fill("initech");
    await admin.getByRole("button", { name: "Dry run" }).click();
    const result = admin.getByTestId("dry-run-result");
    const summary = `${counts.sessions} session, ${counts.traces} traces and ${counts.spans} spans`;
    await expect.poll(() => result.textContent()).toContain(summary);
    // Nothing is gone after a dry run.
    expect(await searchIds("traces", { filters: [{ column_id: "user_metadata.customer", operator: "eq", value: "initech" }] })).toHaveLength(2);
    await shot(admin, "erase-confirm");

    await admin.getByTestId("confirm-delete").click();
    const finished = admin.getByTestId("job-finished");
    await finished.waitFor();
    expect(await finished.getAttribute("data-status")).toBe("completed");
    expect(await finished.textContent()).toContain(`Deleted ${summary}`);
    expect(await admin.locator("progress").evaluate((p) => (p as unknown as { value: number; max: number }).value === (p as unknown as { max: number }).max)).toBe(true);
    expect(await searchIds("traces", { filters: [{ column_id: "user_metadata.customer", operator: "eq", value: "initech" }] })).toEqual([]);
    await shot(admin, "erase-done");
  });

  it("renders a 100-row table once per answer and measures it (records-table-render)", async () => {
    const run = await api("POST", `/v2/projects/${server.demo.project_id}/log_streams`, { name: "render-timing" });
    const traces = renderTimingTraces();
    const longId = crypto.randomUUID();
    const longInput = `${"A long prompt that goes on. ".repeat(120)}THE END`;
    traces.push({ ...traces[0]!, id: longId, name: "long input", input: longInput } as (typeof traces)[number]);
    expect((await api("POST", `/v2/projects/${server.demo.project_id}/traces`, { log_stream_id: run.body.id, traces })).status).toBe(200);

    const page = await newPage();
    await page.goto("/");
    await signInWithKey(page, server.demo.api_key);
    await page.getByRole("link", { name: /^demo\s/ }).waitFor();
    // Two page loads: each answer is measured once, a reload included. The timing itself is the
    // UI benchmark's (`npm run bench -- ui`), which loads it enough times for a median; here it
    // was seven loads (about 6 s of this file) for a median nothing asserted (issue 36).
    const timings: number[] = [];
    for (let attempt = 0; attempt < 2; attempt++) {
      await page.goto(`/projects/${server.demo.project_id}/log_streams/${run.body.id}/traces?size=100`);
      await waitForRows(page, 100);
      const measured = (await page.evaluate(`performance.getEntriesByName("records-table-render").map((e) => [e.duration, e.detail.rows])`)) as [number, number][];
      expect(measured).toHaveLength(1);
      expect(measured[0]![1]).toBe(100);
      timings.push(measured[0]![0]);
    }
    timings.sort((a, b) => a - b);
    const best = timings[0]!;
    console.log(`[ui] first render of a 100-row table after the API answered: ${timings.map((t) => t.toFixed(1)).join(" ms, ")} ms (2 page loads)`);
    // The page measures its own render, once per answer, for the rows it drew. How long it takes
    // is the UI benchmark's to judge (`npm run bench -- ui`, docs/benchmarks.md), not a timed
    // test's: a wall-clock bound failed CI at 105.8 ms under the whole suite's load.
    expect(best).toBeGreaterThan(0);

    // Long text is cut, with a way to read all of it.
    await page.goto(`/projects/${server.demo.project_id}/log_streams/${run.body.id}/traces?open=${longId}`);
    const input = page.getByTestId("record-detail").locator("section").filter({ hasText: "Input" });
    const showAll = input.getByRole("button", { name: `Show all (${longInput.length.toLocaleString("en-US")} characters)` });
    await showAll.waitFor();
    expect(await input.textContent()).not.toContain("THE END");
    await showAll.click();
    await expect.poll(() => input.locator(".long-text").textContent()).toBe(longInput);
  });

  it("serves the API reference from its own assets: nothing is fetched from another host", async () => {
    const page = await newPage();
    const elsewhere: string[] = [];
    await page.route("**/*", (route) => {
      const url = new URL(route.request().url());
      if (url.hostname === "127.0.0.1") return route.continue();
      elsewhere.push(url.href);
      return route.abort();
    });
    await page.goto("/docs");
    expect(await page.locator("script[src]").evaluateAll((s) => s.map((e) => e.getAttribute("src")))).toEqual(["/vendor/scalar-api-reference.js"]);
    await page.getByRole("heading", { name: "Trace store" }).first().waitFor();
    await page.getByText("Organization jobs").first().waitFor();
    await shot(page, "api-reference");
    expect(elsewhere).toEqual([]);
  });

  it("serves the page, its assets and /docs with a Content-Security-Policy that forbids framing, and nosniff everywhere", async () => {
    // The page paths as a browser loads them (contract section 17: the page only for navigations).
    const navigation = { accept: "text/html,application/xhtml+xml,*/*;q=0.8", "sec-fetch-mode": "navigate" };
    const script = (await (await fetch(`${server.origin}/`, { headers: navigation })).text()).match(/src="(\/assets\/main-[^"]+\.js)"/)![1]!;
    for (const path of ["/", runPath("traces", "?page=2"), "/sign-in", script, "/docs"]) {
      const response = await fetch(`${server.origin}${path}`, { headers: path === script ? {} : navigation });
      expect(response.status, path).toBe(200);
      const policy = response.headers.get("content-security-policy") ?? "";
      expect(policy, path).toContain("frame-ancestors 'none'");
      expect(policy, path).toMatch(/script-src 'self'( 'sha256-[A-Za-z0-9+/=]+')*;/);
      expect(policy, path).not.toContain("unsafe-eval");
      expect(response.headers.get("x-content-type-options"), path).toBe("nosniff");
      expect(response.headers.get("referrer-policy"), path).toMatch(/^(strict-origin-when-cross-origin|same-origin|no-referrer)$/);
    }
    // The API's answers are never sniffed into something else either.
    const api = await fetch(`${server.origin}/v2/projects`);
    expect(api.status).toBe(401);
    expect(api.headers.get("x-content-type-options")).toBe("nosniff");
    // Scalar's inline start-up script runs only because its hash is in the policy.
    const docs = await fetch(`${server.origin}/docs`);
    const inline = (await docs.text()).match(/<script type="text\/javascript">([\s\S]*?)<\/script>/)![1]!;
    const { createHash } = await import("node:crypto");
    expect(docs.headers.get("content-security-policy")).toContain(`'sha256-${createHash("sha256").update(inline).digest("base64")}'`);
  });

  it("shows deeply nested JSON (6,000 levels of text, 500 of structure) without breaking the page", async () => {
    const run = await api("POST", `/v2/projects/${server.demo.project_id}/log_streams`, { name: "deep-json" });
    const deepText = `${"[".repeat(6000)}"bottom"${"]".repeat(6000)}`;
    let deepObject: unknown = { bottom: "of the object" };
    for (let i = 0; i < 500; i++) deepObject = { level: deepObject };
    const id = crypto.randomUUID();
    const ingested = await api("POST", `/v2/projects/${server.demo.project_id}/traces`, {
      log_stream_id: run.body.id,
      traces: [{ id, name: "deep json", input: deepText, output: deepObject }],
    });
    expect(ingested.status).toBe(200);

    const page = await newPage();
    await page.goto("/");
    await signInWithKey(page, server.demo.api_key);
    await page.getByRole("link", { name: /^demo\s/ }).waitFor();
    await page.goto(`/projects/${server.demo.project_id}/log_streams/${run.body.id}/traces?open=${id}`);
    const detail = page.getByTestId("record-detail");
    await detail.filter({ hasText: "deep json" }).waitFor();
    const input = detail.locator("section").filter({ hasText: "Input" });
    const output = detail.locator("section").filter({ hasText: "Output" });
    // The outer levels are a tree as usual; the rest waits behind a button, as text.
    await input.locator(".json-view details").first().waitFor();
    await output.locator(".json-key").filter({ hasText: "level" }).first().waitFor();
    const showInput = input.getByRole("button", { name: /Show the \d[\d,]* levels below as text/ });
    await showInput.click();
    const inputText = input.locator(".json-deep-text .long-text");
    await inputText.getByRole("button", { name: /Show all/ }).click();
    await expect.poll(async () => (await inputText.textContent())!.replace(/\s/g, "")).toContain(`${"[".repeat(100)}"bottom"${"]".repeat(100)}`);
    await output.getByRole("button", { name: /Show the \d[\d,]* levels below as text/ }).click();
    await output.locator(".json-deep-text").getByRole("button", { name: /Show all/ }).click();
    await expect.poll(() => output.locator(".json-deep-text").textContent()).toContain('{"level":{"bottom":"of the object"}}');
    // The page still works: the table behind the view, and closing it.
    await page.keyboard.press("Escape");
    await waitForRows(page, 1);
  });

  it("leaves every API route to the worker, browser navigations included", async () => {
    const page = await newPage();
    const health = await page.goto("/healthcheck");
    expect(await health!.json()).toMatchObject({ message: "ok" });
    const openapi = await page.goto("/openapi.json");
    expect((await openapi!.json()).openapi).toBe("3.1.0");
    const projects = await page.goto("/v2/projects");
    expect(projects!.status()).toBe(401);
    expect(await projects!.json()).toEqual({ detail: expect.any(String) });
    // The OpenTelemetry intake's paths too (it takes POSTs only: a navigation gets the API's JSON answer).
    const otel = await page.goto("/otel/v1/traces");
    expect(otel!.headers()["content-type"]).toContain("application/json");
    // The answer is what this test is about: not waiting for Scalar to render it (about 7 s,
    // the API reference test's business) before the next navigation.
    const docs = await page.goto("/docs", { waitUntil: "commit" });
    expect(await docs!.text()).toContain("Scalar.createApiReference");
    // Any other path is the page, which routes in the browser.
    const deep = await page.goto(runPath("traces", "?page=2"));
    expect(deep!.status()).toBe(200);
    await page.getByRole("button", { name: "Sign in" }).waitFor();
  });
});

interface MetricsBody {
  start_time: string;
  end_time: string;
  interval: number;
  group_by?: string;
  log_stream_id: string;
}

interface MetricsAnswer {
  group_by_columns: string[];
  aggregate_metrics: Record<string, number | null>;
  bucketed_metrics: Record<string, Record<string, string | number | null>[]>;
}

/** The bodies of the page's metrics/search requests, in order. */
function recordMetricsRequests(page: Page): MetricsBody[] {
  const bodies: MetricsBody[] = [];
  page.on("request", (request) => {
    if (request.method() === "POST" && request.url().endsWith("/metrics/search")) bodies.push(request.postDataJSON() as MetricsBody);
  });
  return bodies;
}

async function metricsSearch(body: MetricsBody): Promise<MetricsAnswer> {
  const answer = await api<MetricsAnswer>("POST", `/v2/projects/${server.demo.project_id}/metrics/search`, body);
  expect(answer.status).toBe(200);
  return answer.body;
}

/**
 * Clicks a chart at the middle of a bucket (the x axis spans the request's window exactly), near
 * the top of the plot: above every line, so a grouped chart offers the bucket's groups.
 */
async function clickBucket(page: Page, chart: string, body: MetricsBody, bucket: Record<string, unknown>): Promise<void> {
  const over = page.locator(`[data-chart="${chart}"] .u-over`);
  await over.waitFor({ state: "visible" });
  const box = (await over.boundingBox())!;
  const [start, end] = [Date.parse(body.start_time), Date.parse(body.end_time)];
  const middle = (Date.parse(String(bucket.start_bucket_time)) + Date.parse(String(bucket.end_bucket_time))) / 2;
  await page.mouse.move(box.x + (box.width * (middle - start)) / (end - start), box.y + 3);
  await page.mouse.down();
  await page.mouse.up();
}

describe("dashboard", () => {
  it("charts the run's traces over the last day from its real records, and the range and grouping change the requests", async () => {
    const page = await newPage();
    const requests = recordMetricsRequests(page);
    await page.goto(runPath("dashboard"));
    await signInWithKey(page, server.demo.api_key);
    await page.locator('[data-chart="trace_count"] canvas').waitFor();

    // Last day, half-hour buckets, ending at the bucket that holds now.
    const day = requests.at(-1)!;
    expect(day.log_stream_id).toBe(server.demo.log_stream_id);
    expect(day.interval).toBe(30);
    expect(Date.parse(day.end_time) - Date.parse(day.start_time)).toBe(86_400_000);
    expect(Date.parse(day.end_time)).toBeGreaterThan(Date.now() - 1_800_000);
    expect(day.group_by).toBeUndefined();
    // The totals are the API's for the same request: the run's traces (the demo's seven less the
    // two the erasure test above deleted), their tokens and cost.
    const answer = await metricsSearch(day);
    const traces = (await searchIds("traces", {})).length;
    expect(answer.aggregate_metrics.trace_count).toBe(traces);
    await expect.poll(() => page.locator('[data-total="trace_count"] dd').textContent()).toBe(String(traces));
    expect(await page.locator('[data-total="total_tokens"] dd').textContent()).toBe(answer.aggregate_metrics.total_tokens!.toLocaleString("en-US"));
    // Traces, errors, p50, p95, tokens, cost, and an average per metric of the run (toxicity).
    const charts = await page.locator("[data-chart]").evaluateAll((els) => els.map((e) => e.getAttribute("data-chart")));
    expect(charts.slice(0, 6)).toEqual(["trace_count", "error_count", "p50_latency_ns", "p95_latency_ns", "total_tokens", "total_cost"]);
    expect(charts).toContain("average_toxicity");
    expect(await page.locator(".time-chart canvas").count()).toBe(charts.length);
    await shot(page, "dashboard");

    // Last hour: one-minute buckets; last week: three-hour buckets. Each is in the URL.
    await page.getByRole("group", { name: "Range" }).getByRole("button", { name: "Last hour" }).click();
    await expect.poll(() => requests.at(-1)!.interval).toBe(1);
    const hour = requests.at(-1)!;
    expect(Date.parse(hour.end_time) - Date.parse(hour.start_time)).toBe(3_600_000);
    expect(new URL(page.url()).searchParams.get("range")).toBe("hour");
    const hourTotal = (await metricsSearch(hour)).aggregate_metrics.trace_count;
    await expect.poll(() => page.locator('[data-total="trace_count"] dd').textContent()).toBe(String(hourTotal));
    await page.getByRole("button", { name: "Last week" }).click();
    await expect.poll(() => requests.at(-1)!.interval).toBe(180);

    // A custom range: its own times, an interval chosen from its length (two days: one hour).
    await page.getByRole("button", { name: "Custom" }).click();
    const form = page.getByRole("form", { name: "Custom range" });
    await form.getByLabel("From").fill("2026-01-01T00:00");
    await form.getByLabel("To").fill("2026-01-03T00:00");
    await form.getByRole("button", { name: "Apply" }).click();
    await expect.poll(() => requests.at(-1)!.interval).toBe(60);
    const custom = requests.at(-1)!;
    expect(Date.parse(custom.end_time) - Date.parse(custom.start_time)).toBe(2 * 86_400_000);
    await page.getByTestId("dashboard-empty").waitFor();

    // Grouped by name, by tag, by a metadata key: the request says so and each group is a line.
    await page.getByRole("button", { name: "Last day" }).click();
    await page.getByLabel("Group by").selectOption("name");
    await expect.poll(() => requests.at(-1)!.group_by).toBe("name");
    const byName = await metricsSearch(requests.at(-1)!);
    await expect
      .poll(() => page.locator('[data-chart="trace_count"] .u-legend .u-series:not(:first-child) .u-label').allTextContents())
      .toEqual(byName.group_by_columns);
    await page.getByLabel("Group by").selectOption("tags");
    await expect.poll(() => requests.at(-1)!.group_by).toBe("tags");
    await page.getByLabel("Group by").selectOption("metadata");
    await page.getByRole("form", { name: "Metadata key" }).getByLabel("Metadata key").fill("customer");
    await page.getByRole("button", { name: "Group", exact: true }).click();
    await expect.poll(() => requests.at(-1)!.group_by).toBe("user_metadata.customer");
    expect(new URL(page.url()).searchParams.get("group")).toBe("user_metadata.customer");
    const byCustomer = await metricsSearch(requests.at(-1)!);
    expect(byCustomer.group_by_columns.length).toBeGreaterThan(1);
    await expect
      .poll(() => page.locator('[data-chart="trace_count"] .u-legend .u-series:not(:first-child) .u-label').allTextContents())
      .toEqual(byCustomer.group_by_columns);
    await shot(page, "dashboard-grouped");
  });

  it("opens the table filtered to a clicked bucket: its time range, and its group in a grouped chart", async () => {
    const page = await newPage();
    const requests = recordMetricsRequests(page);
    await page.goto(runPath("dashboard"));
    await signInWithKey(page, server.demo.api_key);
    await page.locator('[data-chart="trace_count"] canvas').waitFor();
    const body = requests.at(-1)!;
    const buckets = (await metricsSearch(body)).bucketed_metrics.trace_count!;
    const busiest = buckets.reduce((a, b) => (Number(b.value) > Number(a.value) ? b : a));
    expect(Number(busiest.value)).toBeGreaterThan(0);

    await clickBucket(page, "trace_count", body, busiest);
    await expect.poll(() => new URL(page.url()).pathname).toBe(runPath("traces"));
    const filter = JSON.parse(new URL(page.url()).searchParams.get("filter")!);
    const at = (value: unknown) => Date.parse(String(value));
    expect(filter.and.map((leaf: { column_id: string; operator: string; value: string }) => [leaf.column_id, leaf.operator, at(leaf.value)])).toEqual([
      ["created_at", "gte", at(busiest.start_bucket_time)],
      ["created_at", "lt", at(busiest.end_bucket_time)],
    ]);
    await waitForRows(page, Number(busiest.value));
    expect(await rowIds(page)).toEqual(await searchIds("traces", { filter_tree: filter }));

    // Grouped by name: a click above the lines lists the bucket's groups; one opens its traces.
    await page.goBack();
    await page.getByLabel("Group by").selectOption("name");
    await expect.poll(() => requests.at(-1)!.group_by).toBe("name");
    const grouped = await metricsSearch(requests.at(-1)!);
    const bucket = grouped.bucketed_metrics.trace_count!.find((b) => b.start_bucket_time === busiest.start_bucket_time)!;
    const name = grouped.group_by_columns.find((g) => Number(bucket[g] ?? 0) > 0)!;
    // The grouped chart replaces the ungrouped one when its answer arrives: wait for its legend,
    // not for a canvas (the old chart's canvas may be the one found, then destroyed mid-click).
    await expect
      .poll(() => page.locator('[data-chart="trace_count"] .u-legend .u-series:not(:first-child) .u-label').allTextContents())
      .toEqual(grouped.group_by_columns);
    await clickBucket(page, "trace_count", requests.at(-1)!, bucket);
    await page.getByRole("dialog", { name: "Open a bucket" }).getByRole("button", { name, exact: true }).click();
    await expect.poll(() => new URL(page.url()).pathname).toBe(runPath("traces"));
    const groupFilter = JSON.parse(new URL(page.url()).searchParams.get("filter")!);
    expect(groupFilter.and.at(-1)).toEqual({ type: "text", column_id: "name", operator: "eq", value: name });
    await waitForRows(page, Number(bucket[name]));
    expect(await rowIds(page)).toEqual(await searchIds("traces", { filter_tree: groupFilter }));
  });

  it("groups by model from the run's LLM calls, and a bucket opens those spans", async () => {
    const page = await newPage();
    const spanRequests: { group_by?: string; filter_tree?: unknown }[] = [];
    page.on("request", (request) => {
      if (request.url().endsWith("/metrics/custom_search")) spanRequests.push(request.postDataJSON());
    });
    await page.goto(runPath("dashboard", "?group=model"));
    await signInWithKey(page, server.demo.api_key);
    await page.locator('[data-chart="span_count"] canvas').waitFor();
    expect(spanRequests.every((r) => r.group_by === "model")).toBe(true);
    await expect.poll(() => page.locator('[data-chart="span_count"] .u-legend .u-series:not(:first-child) .u-label').allTextContents()).toEqual(["gpt-4o-mini"]);
    const llmSpans = await searchIds("spans", { filter_tree: { type: "text", column_id: "type", operator: "eq", value: "llm" }, pagination: { limit: 100 } });
    await expect.poll(() => page.locator('[data-total="span_count"] dd').textContent()).toBe(String(llmSpans.length));
  });

  it("opens a project on the dashboard of the run written to last, with its traces one click away", async () => {
    const project = (await api("POST", "/v2/projects", { name: `landing ${crypto.randomUUID().slice(0, 8)}`, type: "gen_ai" })).body as { id: string; name: string };
    const older = (await api("POST", `/v2/projects/${project.id}/log_streams`, { name: "written last" })).body as { id: string };
    const newer = (await api("POST", `/v2/projects/${project.id}/log_streams`, { name: "created last" })).body as { id: string };
    const trace = (name: string, minutesAgo: number) => ({ name, input: "q", output: "a", created_at: new Date(Date.now() - minutesAgo * 60_000).toISOString() });
    // The run created last was written to two hours ago; the one created first ten minutes ago.
    expect((await api("POST", `/v2/projects/${project.id}/traces`, { log_stream_id: newer.id, traces: [trace("early", 120)] })).status).toBe(200);
    expect((await api("POST", `/v2/projects/${project.id}/traces`, { log_stream_id: older.id, traces: [trace("late a", 10), trace("late b", 9)] })).status).toBe(200);

    const page = await newPage();
    await page.goto("/");
    await signInWithKey(page, server.demo.api_key);
    await page.getByRole("link", { name: new RegExp(`^${project.name}\\s`) }).click();
    await expect.poll(() => new URL(page.url()).pathname).toBe(`/projects/${project.id}/log_streams/${older.id}/dashboard`);
    await expect.poll(() => page.locator('[data-total="trace_count"] dd').textContent()).toBe("2");
    // The other run is in the picker.
    await page.getByLabel("Run", { exact: true }).selectOption(`log_streams/${newer.id}`);
    await expect.poll(() => new URL(page.url()).pathname).toBe(`/projects/${project.id}/log_streams/${newer.id}/dashboard`);
    await expect.poll(() => page.locator('[data-total="trace_count"] dd').textContent()).toBe("1");
    await page.getByRole("navigation", { name: "Run views" }).getByRole("link", { name: "Traces" }).click();
    await waitForRows(page, 1);
    // The back button returns to the projects, not to the step that chose the run.
    await page.goBack();
    await page.goBack();
    await expect.poll(() => new URL(page.url()).pathname).toBe(`/projects/${project.id}/log_streams/${older.id}/dashboard`);
    await page.goBack();
    await expect.poll(() => new URL(page.url()).pathname).toBe("/");
  });
});
