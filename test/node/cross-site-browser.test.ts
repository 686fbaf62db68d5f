/// <reference types="node" />
/**
 * Through a victim's browser (issue 19 point 5): a page on another origin makes a real Chromium,
 * whose user is signed in to the service, fire `no-cors` fetches with `credentials: "include"`
 * and an auto-submitted form at the service: an immediate delete-by-metadata, a new project, an
 * OTLP export. The browser holds the admin's password as it would after answering a Basic
 * prompt (Playwright's httpCredentials, sent with every request to the service). Nothing may
 * change. And a browser that opens an API URL must not be asked for a password at all.
 *
 * One `npm start` (wrangler dev, demo dataset) and one small attacker server on another loopback
 * port, both stopped by process / handle at the end.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { demoApi, newBrowserContext } from "./browser-session";
import { launchChromium } from "./chromium";
import { type DemoServer, startDemoServer } from "./demo-server";

let server: DemoServer;
let browser: Browser;
let attacker: Server;
let attackerOrigin: string;

const api = demoApi(() => server);

/** What the attack could change: projects, jobs, and the records it tries to erase. */
async function snapshot() {
  const projects = await api<{ name: string }[]>("GET", "/v2/projects");
  const jobs = await api<{ jobs: unknown[] }>("GET", "/v2/org-jobs");
  const initech = await api<{ records: unknown[] }>("POST", `/v2/projects/${server.demo.project_id}/traces/partial_search`, {
    log_stream_id: server.demo.log_stream_id,
    select_columns: { column_ids: ["id"] },
    filters: [{ column_id: "user_metadata.customer", operator: "eq", value: "initech" }],
  });
  expect([projects.status, jobs.status, initech.status]).toEqual([200, 200, 200]);
  return { projects: projects.body.map((p) => p.name).sort(), jobs: jobs.body.jobs.length, initechTraces: initech.body.records.length };
}

/** The attacker's page: every write a cross-site page can make without a CORS preflight. */
function attackPage(target: string): string {
  const otlp = {
    resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: "5b8efff798038103d269b633813fc60c", spanId: "eee19b7ec3c1b174", name: "planted", startTimeUnixNano: "1700000000000000000", endTimeUnixNano: "1700000001000000000" }] }] }],
  };
  // A text/plain form whose single field spells a JSON object: `{"name":"form-planted","x":"="}`.
  return `<!doctype html><title>cute cats</title>
<iframe name="sink" style="display:none"></iframe>
<form id="f" method="POST" action="${target}/v2/projects" enctype="text/plain" target="sink">
  <input name='{"name":"form-planted","x":"' value='"}'>
</form>
<script>
  const send = (path, body) => fetch(${JSON.stringify(target)} + path, {
    method: "POST", mode: "no-cors", credentials: "include",
    // A Blob without a type: the request carries no Content-Type at all.
    body: new Blob([JSON.stringify(body)]),
  }).catch(() => undefined);
  const sendText = (path, body) => fetch(${JSON.stringify(target)} + path, {
    method: "POST", mode: "no-cors", credentials: "include", body: JSON.stringify(body),
  }).catch(() => undefined);
  const loaded = new Promise((r) => document.querySelector("iframe").addEventListener("load", r, { once: true }));
  document.getElementById("f").submit();
  Promise.all([
    send("/v2/org-jobs/delete-by-metadata?immediate=true", { metadata_key: "customer", metadata_value: "initech" }),
    send("/v2/org-jobs/delete-by-metadata", { metadata_key: "customer", metadata_value: "initech" }),
    send("/v2/projects", { name: "fetch-planted" }),
    sendText("/v2/projects", { name: "text-planted" }),
    send("/otel/v1/traces", ${JSON.stringify(otlp)}),
    send("/v2/login/api_key", { api_key: "x" }),
    loaded,
  ]).then(() => { document.title = "done"; });
</script>`;
}

beforeAll(async () => {
  [server, browser] = await Promise.all([startDemoServer(540_000), launchChromium()]);
  attacker = createServer((_, response) => {
    response.writeHead(200, { "content-type": "text/html" });
    response.end(attackPage(server.origin));
  });
  await new Promise<void>((resolve) => attacker.listen(0, "127.0.0.1", resolve));
  // Another port is another origin: the page is cross-origin (and same-site) to the service.
  attackerOrigin = `http://127.0.0.1:${(attacker.address() as AddressInfo).port}`;
}, 600_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => (attacker ? attacker.close(resolve) : resolve(undefined)));
  await server?.stop();
});

describe("a page on another origin, in the browser of a signed-in admin", () => {
  it("cannot erase, create or export anything", async () => {
    const before = await snapshot();
    expect(before.initechTraces).toBe(2);
    const context = await newBrowserContext(browser, {
      httpCredentials: { username: server.demo.email, password: server.demo.password!, origin: server.origin, send: "always" },
    });
    try {
      let answers: number[] = [];
      // `wrangler dev`'s proxy sometimes fails to pass on a POST that the worker refuses before
      // reading its body (its fetch to the worker errors while the body is still going up) and
      // answers 503 "Your worker restarted mid-request" itself: the request never got an answer
      // from the service, so the attack is made again (the snapshot below shows nothing changed).
      for (let attempt = 1; attempt <= 3; attempt++) {
        const page = await context.newPage();
        const proxyFailures: Promise<boolean>[] = [];
        answers = [];
        page.on("response", (response) => {
          if (!response.url().startsWith(server.origin)) return;
          answers.push(response.status());
          if (response.status() === 503) proxyFailures.push(response.text().then((t) => t.includes("restarted mid-request"), () => false));
        });
        await page.goto(attackerOrigin);
        await page.waitForFunction('document.title === "done"');
        const proxyFailed = (await Promise.all(proxyFailures)).some(Boolean);
        await page.close();
        if (!proxyFailed) break;
      }
      // The attack did reach the service (with the password), and was refused every time.
      expect(answers.length).toBeGreaterThanOrEqual(7);
      expect(new Set(answers)).toEqual(new Set([403]));
    } finally {
      await context.close();
    }
    expect(await snapshot()).toEqual(before);
  });

  it("the same requests from the service's own origin with the same password would be accepted (so the refusal is the origin's)", async () => {
    const context = await newBrowserContext(browser, {
      httpCredentials: { username: server.demo.email, password: server.demo.password!, origin: server.origin, send: "always" },
    });
    try {
      const page = await context.newPage();
      await page.goto(`${server.origin}/docs`);
      // The password goes in the header itself: a 401 no longer challenges with Basic, so Chromium
      // would not add its stored credentials to a script's fetch on its own.
      const authorization = `Basic ${Buffer.from(`${server.demo.email}:${server.demo.password}`).toString("base64")}`;
      const status = await page.evaluate(async (authorization) => {
        const response = await fetch("/v2/projects", {
          method: "POST",
          headers: { "content-type": "application/json", authorization },
          body: JSON.stringify({ name: "own-origin" }),
        });
        return response.status;
      }, authorization);
      expect(status).toBe(200);
      expect((await snapshot()).projects).toContain("own-origin");
    } finally {
      await context.close();
    }
  });
});

describe("a browser that opens an API URL", () => {
  it("is not asked for a password (no Basic challenge), so it never caches one", async () => {
    // A browser that would answer a Basic prompt with the admin's password.
    const context = await newBrowserContext(browser, { httpCredentials: { username: server.demo.email, password: server.demo.password! } });
    try {
      const page = await context.newPage();
      const response = await page.goto(`${server.origin}/v2/current_user`);
      expect(response!.status()).toBe(401);
      expect(await response!.headerValue("www-authenticate")).toBe('Bearer realm="trace-store"');
    } finally {
      await context.close();
    }
  });
});
