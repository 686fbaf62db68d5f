/**
 * What the browser tests share (ui-browser, ui-annotations-browser, ui-redaction-browser,
 * ui-alerts-browser, ui-export-browser, cross-site-browser): calling the demo service's API as its
 * admin, watching a page for errors and Content-Security-Policy violations, and signing in.
 */
import type { Browser, BrowserContext, BrowserContextOptions, Page } from "playwright-core";
import type { DemoServer } from "./demo-server";

/**
 * How long any browser wait may take before it fails. Playwright's 30 s default is ample on a quiet
 * machine (the slowest view, /docs, renders a 380 KB OpenAPI document with a 3.5 MB bundle in about
 * 7 s there), but CI runs the whole suite on 2 cores at load 8 to 15, where Chromium gets a fifth of
 * a core or less: stops 38 and 39 each failed on one 30 s wait (a trace view, then /docs) that
 * passes alone every time. A wait that can never end still fails, only later; what a test
 * asserts does not change.
 */
export const BROWSER_WAIT_MS = 120_000;

/** A browser context whose waits and navigations all tolerate a loaded machine (`BROWSER_WAIT_MS`). */
export async function newBrowserContext(browser: Browser, options: BrowserContextOptions = {}): Promise<BrowserContext> {
  const context = await browser.newContext(options);
  context.setDefaultTimeout(BROWSER_WAIT_MS);
  context.setDefaultNavigationTimeout(BROWSER_WAIT_MS);
  return context;
}

export interface ApiAnswer<T> {
  status: number;
  body: T;
}

/**
 * The demo service's API, as the given credentials (by default the demo admin's API key). Takes
 * the server lazily: the files start it in `beforeAll`, after they made their helpers.
 */
export function demoApi(server: () => DemoServer, auth?: () => Record<string, string>) {
  return async <T = any>(method: string, path: string, body?: unknown): Promise<ApiAnswer<T>> => {
    const response = await fetch(`${server().origin}${path}`, {
      method,
      headers: { ...(auth ? auth() : { "Service-API-Key": server().demo.api_key }), ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as T };
  };
}

/**
 * A page error fails the test that caused it, whatever the view shows; a blocked script, style,
 * image or request is a bug too (the policy and the page disagree): each violation's text goes
 * into `cspViolations`, which the files check after each test. `allowed` lists the texts that are
 * not bugs (Scalar's bundle tries eval on /docs and works without it).
 */
export async function watchPage(page: Page, cspViolations: string[], allowed: string[] = []): Promise<void> {
  page.on("pageerror", (error) => {
    throw error;
  });
  // Passed as text: the tests are type-checked without the DOM's types.
  await page.addInitScript(
    `document.addEventListener("securitypolicyviolation", (e) => console.error("CSP violation: " + e.violatedDirective + " blocked " + (e.blockedURI || "inline") + " on " + location.pathname))`,
  );
  page.on("console", (message) => {
    const text = message.text();
    if (allowed.includes(text)) return;
    if (message.type() === "error" && /CSP violation|Content Security Policy/.test(text)) cspViolations.push(text);
  });
}

/** Signs in with an email and password on the sign-in page, and waits for the signed-in header. */
export async function signInWithPassword(page: Page, email: string, password: string): Promise<void> {
  await page.goto("/");
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByTestId("current-user").filter({ hasText: email }).waitFor();
}
