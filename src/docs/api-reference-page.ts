/**
 * `GET /docs`: the interactive API reference (Scalar) for `/openapi.json`.
 *
 * Its script is served from the worker's own static assets (copied there from the
 * `@scalar/api-reference` package by scripts/lib/build-ui.ts), never from a CDN, so the page works
 * offline and in locked-down networks. Everything else Scalar would fetch from its own servers is
 * switched off: web fonts (the system fonts are used), telemetry, and the request proxy (the
 * "Test request" client calls this same origin directly, so credentials typed there never leave it).
 *
 * The page carries a Content-Security-Policy (contract, section 12): scripts from this origin plus
 * Scalar's inline start-up script by its SHA-256 hash (the page is the same for every request, so a
 * hash computed once per isolate serves them all, where a nonce would need a new page each time).
 * Styles allow 'unsafe-inline': Scalar's bundle injects its component styles as <style> elements at
 * run time, which no hash can name; CSS cannot run script, and framing stays forbidden.
 */
import { Scalar } from "@scalar/hono-api-reference";
import type { Context } from "hono";
import type { AppEnv } from "../http/app-env";
import { contentSecurityPolicy } from "../http/security-headers";

/** Where the build puts the reference bundle inside the assets directory (a URL path). */
export const API_REFERENCE_BUNDLE_PATH = "/vendor/scalar-api-reference.js";

const scalarPage = Scalar({
  url: "/openapi.json",
  pageTitle: "Trace store API",
  cdn: API_REFERENCE_BUNDLE_PATH,
  withDefaultFonts: false,
  proxyUrl: "",
  // Options of the bundled Scalar version that this integration's types do not list yet.
  ...({ telemetry: false, agent: { disabled: true }, showDeveloperTools: "never" } as object),
});

/** Bodies of the page's inline scripts (those without `src`), exactly as the browser hashes them. */
export function inlineScripts(html: string): string[] {
  return [...html.matchAll(/<script(?![^>]*\ssrc=)[^>]*>([\s\S]*?)<\/script>/g)].map((match) => match[1]!);
}

async function sha256Source(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return `'sha256-${btoa(String.fromCharCode(...new Uint8Array(digest)))}'`;
}

async function renderPage(c: Context<AppEnv>): Promise<{ html: string; policy: string }> {
  // Scalar's handler always answers (it never calls `next`).
  const answer = await scalarPage(c as unknown as Parameters<typeof scalarPage>[0], async () => undefined);
  if (!(answer instanceof Response)) throw new Error("the Scalar page handler gave no response");
  const html = await answer.text();
  const scriptHashes = await Promise.all(inlineScripts(html).map(sha256Source));
  const policy = contentSecurityPolicy({
    "default-src": ["'none'"],
    "script-src": ["'self'", ...scriptHashes],
    "style-src": ["'self'", "'unsafe-inline'"],
    "img-src": ["'self'", "data:"],
    "font-src": ["'self'", "data:"],
    // The document, and "Test request" calls to this same origin.
    "connect-src": ["'self'"],
    "base-uri": ["'none'"],
    "object-src": ["'none'"],
    "form-action": ["'self'"],
    "frame-ancestors": ["'none'"],
  });
  return { html, policy };
}

let page: Promise<{ html: string; policy: string }> | undefined;

export async function apiReferencePage(c: Context<AppEnv>): Promise<Response> {
  page ??= renderPage(c).catch((error) => {
    page = undefined;
    throw error;
  });
  const { html, policy } = await page;
  c.header("Content-Security-Policy", policy);
  return c.html(html);
}
