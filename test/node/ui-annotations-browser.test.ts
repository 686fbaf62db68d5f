/// <reference types="node" />
/**
 * The explorer's annotation views in a real headless Chromium against `npm start` (its demo
 * dataset; the templates and other users' ratings are made through the public API): rating the
 * open trace, span and session with every template type by mouse and keyboard, the aggregates
 * changing, the service's 422 shown at the rating, and the table filtered and sorted by an
 * annotation column exactly as the API answers the same tree. A file of its own, with its own
 * server, so that it runs beside test/node/ui-browser.test.ts without sharing state.
 *
 * Screenshots go to test/node/.artifacts/ (git-ignored); docs/screenshots/ holds the copies the
 * README shows.
 */
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { demoApi, newBrowserContext, signInWithPassword, watchPage } from "./browser-session";
import { launchChromium } from "./chromium";
import { type DemoServer, startDemoServer } from "./demo-server";

const ARTIFACTS = resolve(import.meta.dirname, ".artifacts");
const VIEWPORT = { width: 1280, height: 860 };

let server: DemoServer;
let browser: Browser;
const contexts: BrowserContext[] = [];
const cspViolations: string[] = [];
let memberToken: string;

interface Template {
  id: string;
  name: string;
}
const templates: Record<string, Template> = {};

/** As the demo admin (its API key). */
const api = demoApi(() => server);
/** As the demo organization's member. */
const asMember = demoApi(() => server, () => ({ Authorization: `Bearer ${memberToken}` }));

const projectPath = () => `/v2/projects/${server.demo.project_id}`;

async function searchIds(family: string, body: Record<string, unknown>): Promise<string[]> {
  const answer = await api<{ records: { id: string }[] }>("POST", `${projectPath()}/${family}/partial_search`, {
    log_stream_id: server.demo.log_stream_id,
    select_columns: { column_ids: ["id"] },
    ...body,
  });
  expect(answer.status).toBe(200);
  return answer.body.records.map((r) => r.id);
}

async function newPage(): Promise<Page> {
  const context = await newBrowserContext(browser, { viewport: VIEWPORT, baseURL: server.origin });
  contexts.push(context);
  const page = await context.newPage();
  await watchPage(page, cspViolations);
  return page;
}

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`) });
}

const signIn = (page: Page) => signInWithPassword(page, server.demo.email, server.demo.password!);

function runPath(family: string, query = ""): string {
  return `/projects/${server.demo.project_id}/log_streams/${server.demo.log_stream_id}/${family}${query}`;
}

const rowIds = (page: Page) => page.locator("table.records tbody tr").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-id")!));

/** The record as the API returns it (its feedback fields included). */
async function record(family: string, id: string): Promise<any> {
  const answer = await api("GET", `${projectPath()}/${family}/${id}`);
  expect(answer.status).toBe(200);
  return answer.body;
}

/** The ratings block of one template in the open panel. */
const block = (page: Page, name: string) => page.getByTestId("template-ratings").filter({ has: page.getByText(name, { exact: true }) });
const aggregateOf = (page: Page, name: string) => block(page, name).getByTestId("aggregate").textContent();

let admin: Page;
let traceIds: string[];

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  // wrangler dev starts slowly on a loaded machine (other engineers' suites run beside this one).
  [server, browser] = await Promise.all([startDemoServer(420_000), launchChromium()]);
  const form = new URLSearchParams({ username: server.demo.member_email, password: server.demo.member_password!, grant_type: "password" });
  const login = await fetch(`${server.origin}/login`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: form.toString() });
  memberToken = ((await login.json()) as { access_token: string }).access_token;
  const create = async (key: string, body: Record<string, unknown>) => {
    const answer = await api<Template>("POST", `${projectPath()}/annotation/templates`, body);
    expect(answer.status).toBe(200);
    templates[key] = answer.body;
  };
  await create("helpful", { name: "Helpful", constraints: { annotation_type: "like_dislike" } });
  await create("quality", { name: "Quality", include_explanation: true, criteria: "How good is the answer overall?", constraints: { annotation_type: "star" } });
  await create("accuracy", { name: "Accuracy", constraints: { annotation_type: "score", min: 0, max: 10 } });
  await create("issues", { name: "Issues", constraints: { annotation_type: "tags", tags: ["hallucination", "rude", "slow"], allow_other: true } });
  await create("intent", { name: "Intent", constraints: { annotation_type: "choice", choices: ["refund", "billing", "other"] } });
  await create("topic", {
    name: "Topic",
    constraints: { annotation_type: "tree_choice", choices_tree: [{ id: "acct", label: "Account", children: [{ id: "acct-login", label: "Login", children: [] }] }, { id: "pay", label: "Payments", children: [] }] },
  });
  await create("notes", { name: "Notes", constraints: { annotation_type: "text" } });
  traceIds = await searchIds("traces", {});
  admin = await newPage();
  await signIn(admin);
}, 480_000);

afterEach(() => {
  expect(cspViolations.splice(0)).toEqual([]);
});

afterAll(async () => {
  for (const context of contexts) await context.close().catch(() => undefined);
  await browser?.close();
  await server?.stop();
});

describe("annotations in the explorer", () => {
  it("rates the open trace with every template type, by mouse and keyboard, and shows everyone's ratings and the aggregates", async () => {
    const traceId = traceIds[0]!;
    const helpful = templates.helpful!.id;
    // The member liked it already.
    const liked = await asMember("PUT", `${projectPath()}/annotation/templates/${helpful}/records/${traceId}/rating`, { rating: { annotation_type: "like_dislike", value: true } });
    expect(liked.status).toBe(200);

    await admin.goto(runPath("traces", `?open=${traceId}`));
    const panel = admin.getByTestId("ratings-panel");
    await panel.waitFor();
    await expect.poll(() => aggregateOf(admin, "Helpful")).toBe("1 like · 0 dislikes · 1 rating");
    expect(await block(admin, "Quality").getByText("How good is the answer overall?").count()).toBe(1);

    // Mouse: a dislike is saved at once; the aggregate and agreement are the service's.
    await block(admin, "Helpful").getByRole("button", { name: "Dislike" }).click();
    await expect.poll(() => aggregateOf(admin, "Helpful")).toBe("1 like · 1 dislike · 2 ratings · 0% agreement");
    const afterDislike = await record("traces", traceId);
    expect(afterDislike.annotation_aggregates[helpful].aggregate).toMatchObject({ like_count: 1, dislike_count: 1, tie_count: 1 });
    expect(afterDislike.annotation_agreement[helpful]).toBe(0);
    expect(await block(admin, "Helpful").getByRole("listitem").allTextContents()).toEqual(expect.arrayContaining(["you dislike"]));
    // Changing it: a like replaces the dislike (one rating per user).
    await block(admin, "Helpful").getByRole("button", { name: "Like", exact: true }).click();
    await expect.poll(() => aggregateOf(admin, "Helpful")).toBe("2 likes · 0 dislikes · 2 ratings · 100% agreement");
    expect(await block(admin, "Helpful").getByRole("button", { name: "Like", exact: true }).getAttribute("aria-pressed")).toBe("true");

    // Keyboard: Tab from the first star to the fourth, an explanation, Enter on Save.
    const quality = block(admin, "Quality");
    await quality.getByLabel("Quality: explanation").fill("Right answer, a bit long");
    await quality.getByRole("button", { name: "1 star", exact: true }).focus();
    for (let i = 0; i < 3; i++) await admin.keyboard.press("Tab");
    await admin.keyboard.press("Space");
    await expect.poll(() => aggregateOf(admin, "Quality")).toBe("★ 4 (1) · 1 rating");
    expect((await record("traces", traceId)).annotations[templates.quality!.id]).toEqual({
      [server.demo.user_id]: { annotation_type: "star", value: 4, explanation: "Right answer, a bit long" },
    });
    await quality.getByLabel("Quality: explanation").fill("Right answer, too long");
    await quality.getByRole("button", { name: "Save" }).focus();
    await admin.keyboard.press("Enter");
    await expect.poll(async () => (await record("traces", traceId)).annotations[templates.quality!.id][server.demo.user_id].explanation).toBe("Right answer, too long");
    await expect.poll(() => quality.getByRole("listitem").textContent()).toBe("you ★★★★☆ — Right answer, too long");

    // A score out of range: the service's 422, readable, at the rating; then a good one.
    const accuracy = block(admin, "Accuracy");
    await accuracy.getByLabel("Accuracy: score").fill("11");
    await accuracy.getByRole("button", { name: "Save" }).click();
    const refused = await api("PUT", `${projectPath()}/annotation/templates/${templates.accuracy!.id}/records/${traceId}/rating`, { rating: { annotation_type: "score", value: 11 } });
    expect(refused.status).toBe(422);
    await expect.poll(() => accuracy.getByTestId("rating-error").textContent()).toBe(`rating.value: ${refused.body.detail[0].msg}`);
    await accuracy.getByLabel("Accuracy: score").fill("7");
    await accuracy.getByRole("button", { name: "Save" }).click();
    await expect.poll(() => aggregateOf(admin, "Accuracy")).toBe("avg 7 (1) · 1 rating");
    expect(await accuracy.getByTestId("rating-error").count()).toBe(0);

    // Tags (two of the template's and one other), a choice, a node of the tree, free text.
    const issues = block(admin, "Issues");
    await issues.getByLabel("hallucination").check();
    await issues.getByLabel("slow").check();
    await issues.getByLabel("Issues: other tags (comma-separated)").fill("off-topic");
    await issues.getByRole("button", { name: "Save" }).click();
    await expect.poll(() => aggregateOf(admin, "Issues")).toBe("hallucination 1 · off-topic 1 · slow 1 · 1 rating");
    await block(admin, "Intent").getByLabel("refund").check();
    await block(admin, "Intent").getByRole("button", { name: "Save" }).click();
    await expect.poll(() => aggregateOf(admin, "Intent")).toBe("refund 1 · 1 rating");
    await block(admin, "Topic").getByLabel("Topic: choice").selectOption({ label: "Account › Login" });
    await block(admin, "Topic").getByRole("button", { name: "Save" }).click();
    await expect.poll(() => block(admin, "Topic").getByRole("listitem").textContent()).toBe("you Account › Login");
    expect(await aggregateOf(admin, "Topic")).toBe("Account › Login 1 · 1 rating");
    await block(admin, "Notes").getByLabel("Notes: text").fill("Quoted the refund policy correctly.");
    await block(admin, "Notes").getByRole("button", { name: "Save" }).click();
    await expect.poll(() => aggregateOf(admin, "Notes")).toBe("1 note · 1 rating");

    const rated = await record("traces", traceId);
    expect(rated.feedback_rating_info).toMatchObject({
      [templates.accuracy!.id]: { feedback_type: "score", value: 7 },
      [templates.issues!.id]: { feedback_type: "tags", value: ["hallucination", "slow", "off-topic"] },
      [templates.intent!.id]: { feedback_type: "choice", value: "refund" },
      [templates.topic!.id]: { feedback_type: "tree_choice", value: "acct-login" },
      [templates.notes!.id]: { feedback_type: "text", value: "Quoted the refund policy correctly." },
    });
    await panel.evaluate((element) => element.scrollIntoView({ block: "start" }));
    await shot(admin, "annotation-ratings");

    // Removing one's own rating: the member's stays.
    await block(admin, "Helpful").getByRole("button", { name: "Remove my rating" }).click();
    await expect.poll(() => aggregateOf(admin, "Helpful")).toBe("1 like · 0 dislikes · 1 rating");
    expect(Object.keys((await record("traces", traceId)).annotations[helpful])).toEqual([await memberId()]);
  });

  it("rates a span of the open trace and the open session", async () => {
    const [span] = (await api("POST", `${projectPath()}/spans/partial_search`, { log_stream_id: server.demo.log_stream_id, select_columns: { column_ids: ["id", "trace_id", "type"] }, filters: [{ column_id: "type", operator: "eq", value: "llm" }] })).body.records;
    await admin.goto(runPath("spans", `?open=${span.trace_id}&span=${span.id}`));
    await admin.getByTestId("record-detail").filter({ hasText: span.id }).waitFor();
    await block(admin, "Helpful").getByRole("button", { name: "Dislike" }).click();
    await expect.poll(() => aggregateOf(admin, "Helpful")).toBe("0 likes · 1 dislike · 1 rating");
    expect((await record("spans", span.id)).annotations[templates.helpful!.id]).toEqual({ [server.demo.user_id]: { annotation_type: "like_dislike", value: false, explanation: null } });

    const [session] = (await api("POST", `${projectPath()}/sessions/partial_search`, { log_stream_id: server.demo.log_stream_id })).body.records;
    await admin.goto(runPath("sessions", `?open=${session.id}`));
    const view = admin.getByTestId("session-view");
    await view.getByTestId("ratings-panel").waitFor();
    await block(admin, "Quality").getByRole("button", { name: "5 stars" }).click();
    await expect.poll(() => aggregateOf(admin, "Quality")).toBe("★ 5 (1) · 1 rating");
    expect((await record("sessions", session.id)).annotation_aggregates[templates.quality!.id].aggregate).toMatchObject({ average: 5, counts: { "5": 1 } });
  });

  it("filters and sorts the traces by an annotation column, and by fully_annotated, as the API does", async () => {
    const helpful = templates.helpful!.id;
    // Three traces with thumbs: two disliked by the member, one liked by both.
    for (const [i, value] of [[1, false], [2, false], [3, true]] as const) {
      expect((await asMember("PUT", `${projectPath()}/annotation/templates/${helpful}/records/${traceIds[i]}/rating`, { rating: { annotation_type: "like_dislike", value } })).status).toBe(200);
    }
    expect((await api("PUT", `${projectPath()}/annotation/templates/${helpful}/records/${traceIds[3]}/rating`, { rating: { annotation_type: "like_dislike", value: true } })).status).toBe(200);

    await admin.goto(runPath("traces"));
    await admin.getByTestId("column-picker-button").click();
    const picker = admin.getByRole("dialog", { name: "Columns" });
    // The annotation columns are the project's templates, in their own group.
    const labels = await picker.locator("fieldset", { hasText: "Annotations" }).locator("label").allTextContents();
    expect(labels.map((l) => l.replace(/ \(empty\)$/, ""))).toEqual(["Helpful", "Quality", "Accuracy", "Issues", "Intent", "Topic", "Notes"]);
    await picker.getByLabel("Helpful", { exact: true }).check();
    await admin.getByRole("button", { name: "Done" }).click();
    const header = admin.locator(`th[data-column="annotations/${helpful}"]`);
    await header.waitFor();
    await expect.poll(() => admin.locator(`tr[data-id="${traceIds[3]}"] [data-testid="annotation-cell"]`).textContent()).toBe("2 likes · 0 dislikes");

    // Sorted by the like share, as the API sorts.
    await header.getByRole("button").click();
    await expect.poll(() => header.getAttribute("aria-sort")).toBe("ascending");
    await expect.poll(() => rowIds(admin)).toEqual(await searchIds("traces", { sort: { column_id: `annotations/${helpful}`, ascending: true } }));

    // Helpful = false: the records with at least one dislike. (Unsorted: a sort by an annotation
    // column is scan-class, and the organization's share of scan time is small by default.)
    const unsorted = new URL(admin.url());
    unsorted.searchParams.delete("sort");
    await admin.goto(unsorted.pathname + unsorted.search);
    await admin.getByTestId("filter-toggle").click();
    await admin.getByRole("button", { name: "+ Condition" }).click();
    const leaf = admin.getByTestId("filter-leaf").first();
    await leaf.getByLabel("Column").selectOption(`annotations/${helpful}`);
    await leaf.getByLabel("Value").selectOption("false");
    await admin.getByTestId("apply-filter").click();
    await expect.poll(() => new URL(admin.url()).searchParams.get("filter")).not.toBeNull();
    const tree = JSON.parse(new URL(admin.url()).searchParams.get("filter")!);
    expect(tree).toEqual({ and: [{ type: "boolean", column_id: `annotations/${helpful}`, operator: "eq", value: false }] });
    const disliked = await searchIds("traces", { filter_tree: tree });
    expect(new Set(disliked)).toEqual(new Set([traceIds[1], traceIds[2]]));
    await expect.poll(() => rowIds(admin)).toEqual(disliked);
    // The screenshot: a few columns, the annotation ones among them, the same filter.
    const narrow = new URL(admin.url());
    narrow.searchParams.set("cols", ["name", "output", `annotations/${helpful}`, `annotations/${templates.quality!.id}`, "created_at"].join(","));
    await admin.goto(narrow.pathname + narrow.search);
    await expect.poll(() => admin.locator(`tr[data-id="${traceIds[1]}"] [data-testid="annotation-cell"]`).textContent()).toBe("0 likes · 1 dislike");
    await shot(admin, "annotation-filter");

    // Fully annotated by me: the first trace is rated with every template but Helpful (removed),
    // so nothing yet; rating it makes it match.
    await leaf.getByLabel("Column").selectOption("fully_annotated");
    await leaf.getByLabel("Rated by").selectOption("me");
    await admin.getByTestId("apply-filter").click();
    await expect.poll(() => new URL(admin.url()).searchParams.get("filter")).toContain("fully_annotated");
    const fully = JSON.parse(new URL(admin.url()).searchParams.get("filter")!);
    expect(fully).toEqual({ and: [{ type: "fully_annotated", user_ids: [server.demo.user_id] }] });
    await expect.poll(() => admin.getByText("No traces match.").count()).toBe(1);
    expect(await searchIds("traces", { filter_tree: fully })).toEqual([]);
    expect((await api("PUT", `${projectPath()}/annotation/templates/${helpful}/records/${traceIds[0]}/rating`, { rating: { annotation_type: "like_dislike", value: true } })).status).toBe(200);
    await admin.reload();
    await expect.poll(() => rowIds(admin)).toEqual([traceIds[0]]);
    // The builder reads the leaf back from the URL.
    await expect.poll(() => admin.getByTestId("filter-leaf").first().getByLabel("Rated by").inputValue()).toBe("me");
  });
});

describe("an annotation queue in the explorer", () => {
  it("walks a queue's records one by one with the keyboard and the mouse, with the caller's progress", async () => {
    const created = await api("POST", "/v2/annotation_queues", { name: { value: "Refund review" }, description: "Answers about refunds" });
    expect(created.status).toBe(200);
    const qid: string = created.body.id;
    const addTemplate = async (template: Record<string, unknown>) => {
      const answer = await api("POST", `/v2/annotation_queues/${qid}/templates`, { template });
      expect(answer.status).toBe(200);
      return answer.body.id as string;
    };
    const correct = await addTemplate({ name: "Correct", constraints: { annotation_type: "like_dislike" } });
    const tone = await addTemplate({ name: "Tone", constraints: { annotation_type: "star" } });
    const added = await api("POST", `/v2/annotation_queues/${qid}/records`, {
      project_id: server.demo.project_id,
      run_id: server.demo.log_stream_id,
      record_selector: { type: "record_ids", record_ids: traceIds.slice(0, 3) },
    });
    expect(added.body).toEqual({ num_records_added: 3 });
    const order = (await api("POST", `/v2/annotation_queues/${qid}/partial_search`, { limit: 10 })).body.records.map((r: { id: string }) => r.id);
    expect(order).toHaveLength(3);

    await admin.goto("/annotation-queues");
    await admin.getByTestId("queue-card").filter({ hasText: "Refund review" }).click();
    await expect.poll(() => new URL(admin.url()).pathname).toBe(`/annotation-queues/${qid}`);
    const shown = () => admin.getByTestId("queue-record").getAttribute("data-id");
    await expect.poll(shown).toBe(order[0]);
    await expect.poll(() => admin.getByTestId("queue-position").textContent()).toBe("Record 1 of 3");
    await expect.poll(() => admin.getByTestId("my-progress").textContent()).toBe("You: 0 of 3 done (0%)");

    // Keys: l likes with the thumbs template, 4 gives four stars with the star template.
    await admin.keyboard.press("l");
    await expect.poll(() => aggregateOf(admin, "Correct")).toBe("1 like · 0 dislikes · 1 rating");
    await admin.keyboard.press("4");
    await expect.poll(() => aggregateOf(admin, "Tone")).toMatch(/^★ 4 \(1\)/);
    // Rated with every template of the queue: one record done.
    await expect.poll(() => admin.getByTestId("my-progress").textContent()).toBe("You: 1 of 3 done (33%)");
    const queueNow = (await api("GET", `/v2/annotation_queues/${qid}`)).body;
    expect(queueNow.num_logs_annotated[server.demo.user_id]).toBe(1);

    // Next (arrow key), a dislike by key, stars by mouse; back with p.
    await admin.keyboard.press("ArrowRight");
    await expect.poll(shown).toBe(order[1]);
    expect(new URL(admin.url()).searchParams.get("at")).toBe("2");
    await admin.keyboard.press("d");
    await expect.poll(() => aggregateOf(admin, "Correct")).toBe("0 likes · 1 dislike · 1 rating");
    await block(admin, "Tone").getByRole("button", { name: "2 stars" }).click();
    await expect.poll(() => admin.getByTestId("my-progress").textContent()).toBe("You: 2 of 3 done (67%)");
    await shot(admin, "annotation-queue");
    await admin.keyboard.press("p");
    await expect.poll(shown).toBe(order[0]);
    expect(await block(admin, "Correct").getByRole("button", { name: "Like", exact: true }).getAttribute("aria-pressed")).toBe("true");

    // The last record has no next; n there stays put.
    await admin.getByRole("button", { name: "Next →" }).click();
    await admin.getByRole("button", { name: "Next →" }).click();
    await expect.poll(shown).toBe(order[2]);
    expect(await admin.getByRole("button", { name: "Next →" }).isDisabled()).toBe(true);
    await admin.keyboard.press("n");
    await expect.poll(() => admin.getByTestId("queue-position").textContent()).toBe("Record 3 of 3");

    // What the page wrote is what the queue's search returns.
    const records = (await api("POST", `/v2/annotation_queues/${qid}/partial_search`, { limit: 10 })).body.records;
    expect(records[0].annotations[correct]).toEqual({ [server.demo.user_id]: { annotation_type: "like_dislike", value: true, explanation: null } });
    expect(records[0].annotations[tone][server.demo.user_id].value).toBe(4);
    expect(records[1].annotations[correct][server.demo.user_id].value).toBe(false);
    expect(records[1].annotations[tone][server.demo.user_id].value).toBe(2);
  });
});

async function memberId(): Promise<string> {
  const me = await asMember<{ id: string }>("GET", "/v2/current_user");
  return me.body.id;
}
