/**
 * Which answer a path gets (contract section 17, src/http/api-paths.ts): every API route at `/X`
 * as at `/v2/X`; the explorer's page for browser navigations only; a JSON 404 for anything else
 * that is no route, whoever asks (Galileo's ingest service probe `/ingest/healthz` included).
 */
import { SELF } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { acceptPrefersHtml } from "../src/http/browser-navigation";
import { call } from "./support/client";
import { createTenant, type Tenant } from "./support/tenants";

let tenant: Tenant;
let projectId: string;

beforeAll(async () => {
  tenant = await createTenant();
  const project = await call("/v2/projects", { as: tenant, body: { name: `routing-${crypto.randomUUID()}` } });
  projectId = project.body.id;
});

const BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8";
const NOT_FOUND = { detail: "Not Found" };

describe("every route at the root as under /v2", () => {
  it("answers each operation of the OpenAPI document at /X with the status and body of /v2/X, credentials or none", async () => {
    const doc = (await call("/openapi.json")).body as { paths: Record<string, Record<string, unknown>> };
    const operations = Object.entries(doc.paths)
      .filter(([path]) => path.startsWith("/v2/"))
      .flatMap(([path, methods]) => Object.keys(methods).map((method) => ({ path, method: method.toUpperCase() })));
    expect(operations.length).toBeGreaterThan(60);
    for (const { path, method } of operations) {
      // Path parameters: a project of the caller's where one is named, a fresh UUID otherwise.
      const concrete = path.replace("{project_id}", projectId).replace(/\{[^}]+\}/g, () => "00000000-0000-4000-8000-000000000000");
      const rootPath = concrete.slice("/v2".length);
      for (const as of [undefined, tenant]) {
        // Reads only with credentials: a write with an empty body is a 422 both ways, and does nothing.
        const body = method === "GET" || method === "DELETE" || method === "HEAD" ? undefined : {};
        const underV2 = await call(concrete, { method, as, body });
        const atRoot = await call(rootPath, { method, as, body });
        const what = `${method} ${rootPath} (${as ? "with" : "without"} credentials)`;
        expect(atRoot.status, what).toBe(underV2.status);
        if (underV2.headers.get("content-type")?.includes("application/json")) {
          expect(stripVolatile(atRoot.body), what).toEqual(stripVolatile(underV2.body));
        }
      }
    }
  });

  it("keeps the root's own routes (healthcheck, login, OTLP, /docs, /openapi.json) as they are", async () => {
    expect((await call("/healthcheck")).body).toMatchObject({ message: "ok" });
    expect((await call("/openapi.json")).body.openapi).toBe("3.1.0");
    expect((await call("/login/api_key", { body: { api_key: tenant.apiKey } })).body.token_type).toBe("bearer");
    const docs = await SELF.fetch("http://trace-store.test/docs", { headers: { accept: BROWSER_ACCEPT, "sec-fetch-mode": "navigate" } });
    expect(await docs.text()).toContain("Scalar.createApiReference");
  });

  it("writes through a root alias as through /v2: a project created at /projects is the one /v2/projects lists", async () => {
    const name = `alias-${crypto.randomUUID()}`;
    const created = await call("/projects", { as: tenant, body: { name, type: "gen_ai", created_by: null, create_example_templates: false } });
    expect(created.status).toBe(200);
    const listed = await call(`/v2/projects?project_name=${name}`, { as: tenant });
    expect(listed.body.map((p: { id: string }) => p.id)).toEqual([created.body.id]);
    expect(created.headers.get("x-request-id")).toMatch(/^[\w.-]+$/);
  });
});

describe("no route: a JSON 404, never the page", () => {
  const paths = ["/ingest/healthz", "/v2/ingest/healthz", "/ingest/traces/" + "00000000-0000-4000-8000-000000000000", "/", "/nope", "/v2", "/v2/nope/deeper", "/index.html"];

  it("answers 404 {detail: Not Found} in JSON to any method, with or without credentials", async () => {
    for (const path of paths) {
      for (const method of ["GET", "POST"]) {
        for (const as of [undefined, tenant]) {
          const answer = await call(path, { method, as, body: method === "POST" ? { traces: [] } : undefined });
          const what = `${method} ${path} (${as ? "with" : "without"} credentials)`;
          expect(answer.status, what).toBe(404);
          expect(answer.body, what).toEqual(NOT_FOUND);
          expect(answer.headers.get("content-type"), what).toContain("application/json");
          expect(answer.headers.get("x-request-id"), what).toBeTruthy();
        }
      }
    }
  });

  it("answers the SDK's Accept (*/*, application/json) with JSON on the explorer's own paths too", async () => {
    for (const accept of ["*/*", "application/json", "application/json, text/html;q=0.5"]) {
      const answer = await SELF.fetch(`http://trace-store.test/projects/${projectId}/log_streams/x/traces`, { headers: { accept } });
      expect(answer.status).toBe(404);
      expect(await answer.json()).toEqual(NOT_FOUND);
    }
  });
});

describe("browser navigations: the explorer's page", () => {
  const navigations: Record<string, string>[] = [{ "sec-fetch-mode": "navigate", accept: BROWSER_ACCEPT }, { accept: BROWSER_ACCEPT }, { "sec-fetch-mode": "navigate" }];

  it("serves the page with its security headers on the explorer's paths, the root aliases' included", async () => {
    for (const headers of navigations) {
      for (const path of ["/", `/projects/${projectId}/log_streams/x/traces?page=2`, "/projects", "/current_user", "/erase", "/no-such-page"]) {
        const answer = await SELF.fetch(`http://trace-store.test${path}`, { headers });
        const what = `${path} ${JSON.stringify(headers)}`;
        expect(answer.status, what).toBe(200);
        expect(answer.headers.get("content-type"), what).toContain("text/html");
        expect(answer.headers.get("content-security-policy"), what).toContain("script-src 'self'");
        expect(answer.headers.get("x-frame-options"), what).toBe("DENY");
        expect(await answer.text(), what).toMatch(/^<!doctype html>/i);
      }
    }
  });

  it("leaves /v2 and the root's own routes to the API, navigations included", async () => {
    const headers = navigations[0]!;
    const v2 = await SELF.fetch("http://trace-store.test/v2/projects", { headers });
    expect(v2.status).toBe(401);
    expect(await v2.json()).toEqual({ detail: expect.any(String) });
    const unknown = await SELF.fetch("http://trace-store.test/v2/nope", { headers });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual(NOT_FOUND);
    expect(await (await SELF.fetch("http://trace-store.test/healthcheck", { headers })).json()).toMatchObject({ message: "ok" });
  });

  it("serves the explorer's files, and a missing one is a 404", async () => {
    const page = await (await SELF.fetch("http://trace-store.test/", { headers: navigations[0]! })).text();
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(page)?.[1];
    expect(script).toBeTruthy();
    const file = await SELF.fetch(`http://trace-store.test${script}`);
    expect(file.status).toBe(200);
    expect(file.headers.get("content-type")).toContain("javascript");
    await file.body?.cancel();
    const missing = await SELF.fetch("http://trace-store.test/assets/no-such-file.js");
    expect(missing.status).toBe(404);
    await missing.body?.cancel();
  });

  it("tells a browser's Accept from an SDK's", () => {
    expect(acceptPrefersHtml(BROWSER_ACCEPT)).toBe(true);
    expect(acceptPrefersHtml("text/html")).toBe(true);
    expect(acceptPrefersHtml("*/*")).toBe(false);
    expect(acceptPrefersHtml(undefined)).toBe(false);
    expect(acceptPrefersHtml("application/json")).toBe(false);
    expect(acceptPrefersHtml("application/json, text/plain, */*")).toBe(false);
    expect(acceptPrefersHtml("text/html;q=0.5, application/json")).toBe(false);
    expect(acceptPrefersHtml("text/*, application/json;q=0.9")).toBe(true);
  });
});

/** Fields that differ between two identical calls: fresh ids, times, tokens. */
function stripVolatile(body: unknown): unknown {
  if (typeof body !== "object" || body === null) return body;
  if (Array.isArray(body)) return body.map(stripVolatile);
  return Object.fromEntries(
    Object.entries(body as Record<string, unknown>)
      .filter(([key]) => !["id", "job_id", "created_at", "updated_at", "access_token", "expires_in", "message", "url", "expires_at"].includes(key))
      .map(([key, value]) => [key, key === "detail" && typeof value === "string" ? value.replace(/request id [\w-]+/, "") : stripVolatile(value)]),
  );
}
