/**
 * Bounded before parsed (issue 9, point 1): every body is read within its route's cap
 * (src/http/body-limits.ts), a declared Content-Length over it is refused without reading a byte,
 * a streamed body is refused as soon as it passes the cap, and nothing of a protected route's
 * body is read before its caller is authenticated.
 *
 * The "never read" cases send a body that never ends: a server that read it would never answer,
 * and the test would time out.
 */
import { SELF } from "cloudflare:test";
import limitsDoc from "../docs/limits.md?raw";
import { beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_BODY_LIMIT, bodyLimitFor, formatBytes, listedBodyLimits, openApiPathOf, routeKey } from "../src/http/body-limits";
import { OTLP_LIMITS } from "../src/otlp/otlp-limits";
import { OTLP_PATHS } from "../src/otlp/otlp-routes";
import { call } from "./support/client";
import { type Tenant, createTenant } from "./support/tenants";

const BASE = "http://trace-store.test";
const KiB = 1024;
const MiB = 1024 * KiB;

let tenant: Tenant;
let projectId: string;
let logStreamId: string;

beforeAll(async () => {
  tenant = await createTenant();
  projectId = (await call("/v2/projects", { as: tenant, body: { name: "limits" } })).body.id;
  logStreamId = (await call(`/v2/projects/${projectId}/log_streams`, { as: tenant, body: { name: "ls" } })).body.id;
});

/** A body that sends `chunk` forever (until the reader cancels it). */
function endless(chunk = "x".repeat(64 * KiB)): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(chunk);
  return new ReadableStream({ pull: (controller) => controller.enqueue(bytes) });
}

/** A body of exactly these bytes, streamed in small chunks without a Content-Length. */
function streamed(text: string, chunkSize = 16 * KiB): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  let offset = 0;
  return new ReadableStream({
    pull(controller) {
      if (offset >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(offset, offset + chunkSize));
      offset += chunkSize;
    },
  });
}

async function send(path: string, body: BodyInit, headers: Record<string, string> = {}, method = "POST") {
  const response = await SELF.fetch(`${BASE}${path}`, { method, headers: { "content-type": "application/json", ...headers }, body });
  const text = await response.text();
  let parsed: any = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // keep the text
  }
  return { status: response.status, body: parsed, headers: response.headers };
}

function expectTooLarge(response: { status: number; body: any; headers: Headers }, bytes: number): void {
  expect(response.status, JSON.stringify(response.body)).toBe(413);
  expect(Object.keys(response.body)).toEqual(["detail"]);
  expect(response.body.detail).toContain(String(bytes));
  expect(response.body.detail).toContain(formatBytes(bytes));
  expect(response.headers.get("x-request-id")).toBeTruthy();
}

/** A JSON object padded with spaces to exactly `size` bytes. */
function jsonOfSize(value: Record<string, unknown>, size: number): string {
  const text = JSON.stringify(value);
  expect(text.length).toBeLessThanOrEqual(size);
  return text.slice(0, -1) + " ".repeat(size - text.length) + "}";
}

describe("the cap of each route", () => {
  const login = bodyLimitFor("POST", "/login").bytes;
  const small = bodyLimitFor("POST", "/v2/projects").bytes;
  const ingest = bodyLimitFor("POST", "/v2/projects/:project_id/traces").bytes;
  const search = bodyLimitFor("POST", "/v2/projects/:project_id/spans/partial_search").bytes;

  it("is small before authentication, larger for ingestion than for search, small for names", () => {
    expect(login).toBeLessThanOrEqual(16 * KiB);
    expect(ingest).toBe(10 * MiB);
    expect(search).toBeLessThan(ingest);
    expect(small).toBeLessThan(search);
    expect(bodyLimitFor("POST", "/v2/org-jobs/delete-by-metadata").bytes).toBe(small);
    expect(bodyLimitFor("POST", "/v2/projects/:project_id/spans/available_columns").bytes).toBe(small);
  });

  it("a route the table does not list gets the small default", () => {
    expect(bodyLimitFor("POST", "/v2/not/listed")).toEqual({ route: "POST /v2/not/listed", bytes: DEFAULT_BODY_LIMIT, values: 1_000, listed: false });
    expect(DEFAULT_BODY_LIMIT).toBeLessThanOrEqual(small);
  });

  it("every route of the OpenAPI document that takes a body is in the table, and documents its 413", async () => {
    const doc = (await call("/openapi.json")).body as { paths: Record<string, Record<string, { requestBody?: unknown; responses: Record<string, unknown> }>> };
    const listed = new Map(listedBodyLimits());
    const withBody: string[] = [];
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        if (!operation.requestBody) continue;
        const key = routeKey(method, path);
        withBody.push(key);
        expect(listed.has(key), `${key} has no cap in src/http/body-limits.ts`).toBe(true);
        expect(operation.responses["413"], `${key} does not document its 413`).toBeDefined();
      }
    }
    expect(withBody.length).toBeGreaterThanOrEqual(20);
  });

  it("docs/limits.md gives every route of the table its cap, and nothing else", () => {
    const section = limitsDoc.slice(limitsDoc.indexOf("## Request bodies"), limitsDoc.indexOf("Why these sizes"));
    const documented = new Map<string, string>();
    for (const row of section.split("\n").filter((line) => line.startsWith("| `"))) {
      const cells = row.split("|").map((cell) => cell.trim());
      const [routes, cap] = [cells[1]!, `${cells[2]!} / ${cells[3]!.split(" ")[0]}`];
      for (const [, route] of routes.matchAll(/`([A-Z]+ [^`]+)`/g)) {
        // `{traces,spans,sessions}` stands for one route per name.
        const alternatives = /\{([a-z_]+(?:,[a-z_]+)+)\}/.exec(route!);
        const expanded = alternatives ? alternatives[1]!.split(",").map((name) => route!.replace(alternatives[0], name)) : [route!];
        for (const one of expanded) documented.set(one, cap);
      }
    }
    expect(documented).toEqual(new Map(listedBodyLimits().map(([route, cap]) => [route, `${formatBytes(cap.bytes)} / ${cap.values.toLocaleString("en-US")}`])));
    expect(section).toContain(`| any other route with a body | ${formatBytes(DEFAULT_BODY_LIMIT)} | ${bodyLimitFor("POST", "/v2/not/listed").values.toLocaleString("en-US")} |`);
  });

  it("the OpenTelemetry intake, which reads its own bodies, reads them within the table's cap", () => {
    for (const path of OTLP_PATHS) {
      for (const prefix of ["", "/v2"]) expect(bodyLimitFor("POST", `${prefix}${path}`)).toMatchObject({ bytes: OTLP_LIMITS.maxBodyBytes, values: OTLP_LIMITS.maxJsonValues, listed: true });
    }
  });

  it("route patterns become the document's paths", () => {
    expect(openApiPathOf("/v2/projects/:project_id/traces/:trace_id")).toBe("/v2/projects/{project_id}/traces/{trace_id}");
  });
});

describe("a declared Content-Length over the cap: 413 at once, nothing read", () => {
  it("login (no credentials needed)", async () => {
    const login = bodyLimitFor("POST", "/login").bytes;
    for (const path of ["/login", "/v2/login", "/login/api_key", "/v2/login/api_key"]) {
      const response = await send(path, endless(), { "content-length": String(60 * MiB) });
      expectTooLarge(response, login);
    }
  });

  it("ingestion, after authentication", async () => {
    const response = await send(`/v2/projects/${projectId}/traces`, endless(), { "content-length": String(60 * MiB), "Service-API-Key": tenant.apiKey });
    expectTooLarge(response, 10 * MiB);
    expect(response.body.detail).toContain("POST /v2/projects/{project_id}/traces");
  });
});

describe("a body without Content-Length is counted as it arrives", () => {
  it("an endless login body is refused at the cap", async () => {
    expectTooLarge(await send("/login", endless(), { "content-type": "application/x-www-form-urlencoded" }), bodyLimitFor("POST", "/login").bytes);
    expectTooLarge(await send("/v2/login/api_key", endless()), bodyLimitFor("POST", "/login/api_key").bytes);
  });

  it("an endless body to a protected route is refused at that route's cap", async () => {
    const headers = { "Service-API-Key": tenant.apiKey };
    expectTooLarge(await send(`/v2/projects/${projectId}/spans/available_columns`, endless(), headers), bodyLimitFor("POST", "/v2/projects/:project_id/spans/available_columns").bytes);
    expectTooLarge(await send(`/v2/projects/${projectId}/spans/partial_search`, endless(), headers), bodyLimitFor("POST", "/v2/projects/:project_id/spans/partial_search").bytes);
    expectTooLarge(await send("/v2/org-jobs/delete-by-metadata", endless(), headers), bodyLimitFor("POST", "/v2/org-jobs/delete-by-metadata").bytes);
    expectTooLarge(
      await send(`/v2/projects/${projectId}/traces/${crypto.randomUUID()}`, endless(), headers, "PATCH"),
      bodyLimitFor("PATCH", "/v2/projects/:project_id/traces/:trace_id").bytes,
    );
  });

  it("exactly the cap is read and validated; one byte more is a 413, streamed or declared", async () => {
    const cap = bodyLimitFor("POST", "/v2/projects").bytes;
    const headers = { "Service-API-Key": tenant.apiKey };
    const atCap = jsonOfSize({ name: "at-the-cap" }, cap);
    const created = await send("/v2/projects", streamed(atCap), headers);
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body.name).toBe("at-the-cap");
    expect((await send("/v2/projects", atCap, headers)).status).toBe(200);
    const over = jsonOfSize({ name: "over-the-cap" }, cap + 1);
    expectTooLarge(await send("/v2/projects", streamed(over), headers), cap);
    expectTooLarge(await send("/v2/projects", over, headers), cap);
  });

  it("the cap counts bytes, not characters", async () => {
    const cap = bodyLimitFor("POST", "/v2/projects").bytes;
    // 3 bytes per character: a third of the cap in characters is already over it in bytes.
    const name = "漢".repeat(Math.ceil(cap / 3));
    expectTooLarge(await send("/v2/projects", streamed(JSON.stringify({ name })), { "Service-API-Key": tenant.apiKey }), cap);
  });

  it("an ingest body of several MiB within the cap is accepted", async () => {
    const big = "y".repeat(MiB);
    const traces = Array.from({ length: 4 }, (_, i) => ({ name: `big-${i}`, input: big, output: "ok" }));
    const response = await send(`/v2/projects/${projectId}/traces`, streamed(JSON.stringify({ log_stream_id: logStreamId, traces })), { "Service-API-Key": tenant.apiKey });
    expect(response.status, JSON.stringify(response.body).slice(0, 500)).toBe(200);
    expect(response.body.traces_count).toBe(4);
  });
});

describe("authentication comes before the body", () => {
  it("no credentials: 401 without reading an endless body", async () => {
    for (const path of [`/v2/projects/${projectId}/traces`, `/v2/projects/${projectId}/spans/partial_search`, "/v2/org-jobs/delete-by-metadata"]) {
      const response = await send(path, endless());
      expect(response.status, path).toBe(401);
      expect(response.headers.get("www-authenticate")).toBeTruthy();
    }
  });

  it("a wrong API key: 401 without reading an endless body", async () => {
    const response = await send(`/v2/projects/${projectId}/traces`, endless(), { "Service-API-Key": "tsk_wrong" });
    expect(response.status).toBe(401);
  });

  it("a member asking for a deletion: 403 without reading an endless body", async () => {
    const member = await createTenant("member", tenant.organizationId);
    const response = await send("/v2/org-jobs/delete-by-metadata", endless(), { "Service-API-Key": member.apiKey });
    expect(response.status).toBe(403);
  });

  it("malformed JSON within the cap is still FastAPI's json_invalid 422", async () => {
    const response = await send("/v2/projects", streamed('{"name": "x",}'), { "Service-API-Key": tenant.apiKey });
    expect(response.status).toBe(422);
    expect(response.body.detail[0]).toMatchObject({ loc: ["body", 13], type: "json_invalid" });
  });
});
