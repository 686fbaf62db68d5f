/**
 * Requests a browser makes for another site (issue 19 point 5, contract section 12 "Browsers"):
 * a state-changing request with `Sec-Fetch-Site` other than same-origin/none, or with a foreign
 * `Origin`, is a 403 before anything is done, credentials or not; a browser's request must label
 * its body (JSON; a form on /login; protobuf or JSON on OTLP), else 415. Clients that send neither
 * header are unaffected. The real browser version of this is test/node/cross-site-browser.test.ts.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { createProjectWithRun, createTemplate } from "./support/annotations";
import { type CallResult, call } from "./support/client";
import { createTenant, type Tenant } from "./support/tenants";

/** The origin test/support/client.ts calls the worker at. */
const OWN_ORIGIN = "http://trace-store.test";

let tenant: Tenant;
beforeAll(async () => {
  tenant = await createTenant("admin");
});

async function projectNames(): Promise<string[]> {
  const listed = await call("/v2/projects", { as: tenant });
  expect(listed.status).toBe(200);
  return listed.body.map((p: { name: string }) => p.name);
}

function createProject(name: string, headers: Record<string, string>, contentType = "application/json"): Promise<CallResult> {
  return call("/v2/projects", { as: tenant, rawBody: JSON.stringify({ name }), headers: { "content-type": contentType, ...headers } });
}

describe("a state-changing request from another site", () => {
  it.each([
    ["Sec-Fetch-Site: cross-site", { "Sec-Fetch-Site": "cross-site" }],
    ["Sec-Fetch-Site: same-site (a sibling subdomain)", { "Sec-Fetch-Site": "same-site" }],
    ["a foreign Origin", { Origin: "http://attacker.example" }],
    ["Origin: null (a sandboxed frame)", { Origin: "null" }],
    ["our host on another port", { Origin: `${OWN_ORIGIN}:8080` }],
    ["a foreign Origin next to Sec-Fetch-Site: same-origin", { Origin: "http://attacker.example", "Sec-Fetch-Site": "same-origin" }],
  ])("%s is a 403 and changes nothing, valid credentials or not", async (_, headers) => {
    const name = `cross-site-${crypto.randomUUID()}`;
    const answer = await createProject(name, headers);
    expect(answer.status, JSON.stringify(answer.body)).toBe(403);
    expect(answer.body.detail).toMatch(/^Cross-site requests may not change anything here/);
    expect(await projectNames()).not.toContain(name);
  });

  it("an immediate delete-by-metadata is refused before it is authorized or read", async () => {
    const answer = await call("/v2/org-jobs/delete-by-metadata?immediate=true", {
      as: tenant,
      body: { metadata_key: "k", metadata_value: "v" },
      headers: { "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors" },
    });
    expect(answer.status).toBe(403);
  });

  it("login and the OTLP intake are refused too", async () => {
    const login = await call("/login", {
      rawBody: new URLSearchParams({ username: tenant.email, password: tenant.password }).toString(),
      headers: { "content-type": "application/x-www-form-urlencoded", Origin: "http://attacker.example" },
    });
    expect(login.status).toBe(403);
    for (const path of ["/otel/v1/traces", "/v2/otel/traces"]) {
      const otlp = await call(path, { as: tenant, rawBody: "{}", headers: { "content-type": "application/json", "Sec-Fetch-Site": "cross-site" } });
      expect(otlp.status, path).toBe(403);
    }
  });

  it("reads (GET) stay open: the browser's same-origin policy keeps their answers from the other site", async () => {
    const answer = await call("/v2/projects", { as: tenant, headers: { "Sec-Fetch-Site": "cross-site", Origin: "http://attacker.example" } });
    expect(answer.status).toBe(200);
  });
});

describe("a request from our own origin", () => {
  it("passes with Sec-Fetch-Site same-origin or none, or our own Origin", async () => {
    const cases: Record<string, string>[] = [{ "Sec-Fetch-Site": "same-origin", Origin: OWN_ORIGIN }, { "Sec-Fetch-Site": "none" }, { Origin: OWN_ORIGIN }];
    for (const headers of cases) {
      const name = `own-${crypto.randomUUID()}`;
      const answer = await createProject(name, headers);
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect(await projectNames()).toContain(name);
    }
  });

  it.each([
    ["text/plain (what a no-cors fetch sends)", "text/plain;charset=UTF-8"],
    ["a form", "application/x-www-form-urlencoded"],
    ["multipart", "multipart/form-data; boundary=x"],
  ])("must label its body as JSON: %s is a 415", async (_, contentType) => {
    const name = `unlabelled-${crypto.randomUUID()}`;
    const answer = await createProject(name, { "Sec-Fetch-Site": "same-origin", Origin: OWN_ORIGIN }, contentType);
    expect(answer.status, JSON.stringify(answer.body)).toBe(415);
    expect(answer.body.detail).toMatch(/must send its body as application\/json/);
    expect(await projectNames()).not.toContain(name);
  });

  it("a request without a body needs no label: the explorer's DELETE of a template is carried out", async () => {
    const { projectId } = await createProjectWithRun(tenant);
    const template = await createTemplate(tenant, projectId, { annotation_type: "like_dislike" });
    const path = `/v2/projects/${projectId}/annotation/templates/${template.id}`;
    // What a browser's fetch(path, { method: "DELETE" }) sends: no body, no Content-Type.
    const deleted = await call(path, { as: tenant, method: "DELETE", headers: { Origin: OWN_ORIGIN, "Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors" } });
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);
    expect((await call(path, { as: tenant })).status).toBe(404);
    // A body still needs its label, whatever the method.
    const labelled = await call(`/v2/projects/${projectId}/annotation/templates`, {
      as: tenant,
      rawBody: JSON.stringify({ name: "t", constraints: { annotation_type: "text" } }),
      headers: { "content-type": "text/plain", Origin: OWN_ORIGIN, "Sec-Fetch-Site": "same-origin" },
    });
    expect(labelled.status).toBe(415);
  });

  it("logs in with a form, and exports OTLP as protobuf or JSON", async () => {
    const login = await call("/login", {
      rawBody: new URLSearchParams({ username: tenant.email, password: tenant.password }).toString(),
      headers: { "content-type": "application/x-www-form-urlencoded", Origin: OWN_ORIGIN, "Sec-Fetch-Site": "same-origin" },
    });
    expect(login.status, JSON.stringify(login.body)).toBe(200);
    for (const contentType of ["application/x-protobuf", "application/json"]) {
      const otlp = await call("/otel/v1/traces", { as: tenant, rawBody: "", headers: { "content-type": contentType, Origin: OWN_ORIGIN, "X-Galileo-Project": "nothing-sent" } });
      expect(otlp.status, contentType).not.toBe(415);
      expect(otlp.status, contentType).not.toBe(403);
    }
    const text = await call("/otel/v1/traces", { as: tenant, rawBody: "{}", headers: { "content-type": "text/plain", Origin: OWN_ORIGIN } });
    expect(text.status).toBe(415);
  });
});

describe("clients that are not browsers", () => {
  it("sending neither Origin nor Sec-Fetch-* are unaffected", async () => {
    const name = `sdk-${crypto.randomUUID()}`;
    const answer = await createProject(name, {});
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(await projectNames()).toContain(name);
  });
});
