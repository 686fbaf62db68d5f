/**
 * Authentication (contract, section 2): each of the four schemes is accepted, logins work at the
 * root and under /v2, and every rejection is a 401 with WWW-Authenticate and {"detail": "..."}.
 */
import { env } from "cloudflare:test";
import { sign } from "hono/jwt";
import { beforeAll, describe, expect, it } from "vitest";
import { type CallResult, call } from "./support/client";
import { type Tenant, addUser, createTenant } from "./support/tenants";

const PROTECTED = "/v2/projects";

let tenant: Tenant;
let member: Tenant;

beforeAll(async () => {
  tenant = await createTenant("admin");
  member = await addUser(tenant, "member");
  // Something to list, so that "accepted" also means "scoped to the right organization".
  const created = await call("/v2/projects", { as: tenant, body: { name: "auth-visible" } });
  expect(created.status).toBe(200);
});

function basic(email: string, password: string): string {
  return `Basic ${btoa(`${email}:${password}`)}`;
}

function form(fields: Record<string, string>): { rawBody: string; headers: Record<string, string> } {
  return { rawBody: new URLSearchParams(fields).toString(), headers: { "content-type": "application/x-www-form-urlencoded" } };
}

function expectRequestId(response: CallResult): void {
  expect(response.headers.get("x-request-id")).toMatch(/^[\w.-]{1,128}$/);
}

/** The caller sees exactly its own organization's projects. */
function expectOwnProjects(response: CallResult): void {
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  expectRequestId(response);
  expect(response.body.map((p: { name: string }) => p.name)).toEqual(["auth-visible"]);
}

/**
 * A 401 offers Bearer; Basic only to a request that tried Basic (`sentBasic`): a browser meeting
 * Basic would prompt for a password and then send it on its own, cross-site requests included.
 */
function expectUnauthorized(response: CallResult, detail: string | RegExp, sentBasic = false): void {
  expect(response.status, JSON.stringify(response.body)).toBe(401);
  expect(response.headers.get("www-authenticate")).toMatch(sentBasic ? /^Bearer realm="[^"]+", Basic realm="[^"]+"$/ : /^Bearer realm="[^"]+"$/);
  expectRequestId(response);
  expect(Object.keys(response.body)).toEqual(["detail"]);
  expect(response.body.detail).toMatch(detail);
}

async function tokenFor(path: string, request: Parameters<typeof call>[1]): Promise<string> {
  const response = await call(path, request);
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  expectRequestId(response);
  expect(response.body.token_type).toBe("bearer");
  // wrangler.toml sets TOKEN_TTL_SECONDS = 86400; tokens must outlive an SDK test run.
  expect(response.body.expires_in).toBe(86400);
  expect(response.body.access_token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
  return response.body.access_token;
}

function bearer(token: string) {
  return { headers: { Authorization: `Bearer ${token}` } };
}

/** A token signed with the test secret (vitest.config.ts) and any claims we like. */
async function signedToken(claims: Record<string, unknown>, secret = env.TOKEN_SECRET): Promise<string> {
  return sign(claims, secret, "HS256");
}

function claimsOf(t: Tenant, overrides: Record<string, unknown> = {}) {
  const now = Math.floor(Date.now() / 1000);
  return { sub: t.userId, org: t.organizationId, role: t.role, email: t.email, jti: crypto.randomUUID(), gen: 0, iat: now, exp: now + 3600, ...overrides };
}

describe("each scheme is accepted", () => {
  it("Service-API-Key", async () => {
    expectOwnProjects(await call(PROTECTED, { headers: { "Service-API-Key": tenant.apiKey } }));
  });

  it("Alt-AO-API-Key", async () => {
    expectOwnProjects(await call(PROTECTED, { headers: { "Alt-AO-API-Key": tenant.apiKey } }));
  });

  it("a member's API key", async () => {
    expectOwnProjects(await call(PROTECTED, { headers: { "Service-API-Key": member.apiKey } }));
  });

  for (const prefix of ["", "/v2"]) {
    it(`Bearer from ${prefix}/login with an OAuth2 password form`, async () => {
      const token = await tokenFor(`${prefix}/login`, form({ username: tenant.email, password: tenant.password, grant_type: "password" }));
      expectOwnProjects(await call(PROTECTED, bearer(token)));
    });

    it(`Bearer from ${prefix}/login with JSON`, async () => {
      const token = await tokenFor(`${prefix}/login`, { body: { username: tenant.email, password: tenant.password } });
      expectOwnProjects(await call(PROTECTED, bearer(token)));
    });

    it(`Bearer from ${prefix}/login/api_key`, async () => {
      const token = await tokenFor(`${prefix}/login/api_key`, { body: { api_key: tenant.apiKey } });
      expectOwnProjects(await call(PROTECTED, bearer(token)));
    });
  }

  it("an API key sent as a bearer credential (what OpenTelemetry exporters can send)", async () => {
    expectOwnProjects(await call(PROTECTED, bearer(tenant.apiKey)));
  });

  it("login with the email in another case (emails are case-insensitive)", async () => {
    const token = await tokenFor("/login", form({ username: tenant.email.toUpperCase(), password: tenant.password }));
    expectOwnProjects(await call(PROTECTED, bearer(token)));
  });

  it("the bearer token names the user, organization and role", async () => {
    const token = await tokenFor("/login/api_key", { body: { api_key: member.apiKey } });
    const payload = JSON.parse(atob(token.split(".")[1]!.replace(/-/g, "+").replace(/_/g, "/")));
    expect(payload).toMatchObject({ sub: member.userId, org: member.organizationId, role: "member", email: member.email });
    expect(payload.exp - payload.iat).toBe(86400);
  });

  it("HTTP Basic", async () => {
    expectOwnProjects(await call(PROTECTED, { headers: { Authorization: basic(tenant.email, tenant.password) } }));
  });

  it("HTTP Basic with a password that contains a colon and non-ASCII characters", async () => {
    const unusual = await createTenant("member");
    const email = unusual.email;
    // Provision a second user whose password is awkward to transport.
    const { createUser, runStatements } = await import("../src/admin/provisioning");
    const password = "pä:ss:wörd ✓";
    const user = await createUser({ organizationId: unusual.organizationId, email: `x-${email}`, password, role: "member" });
    await runStatements(env.DB, user.statements);
    const encoded = btoa(String.fromCharCode(...new TextEncoder().encode(`x-${email}:${password}`)));
    const response = await call(PROTECTED, { headers: { Authorization: `Basic ${encoded}` } });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    expect(response.body).toEqual([]);
  });

  it("the scheme name is case-insensitive", async () => {
    const token = await tokenFor("/login/api_key", { body: { api_key: tenant.apiKey } });
    expectOwnProjects(await call(PROTECTED, { headers: { Authorization: `bearer ${token}` } }));
    expectOwnProjects(await call(PROTECTED, { headers: { Authorization: basic(tenant.email, tenant.password).replace("Basic", "BASIC") } }));
  });
});

describe("each rejection is a 401 with WWW-Authenticate", () => {
  it("no credentials", async () => {
    expectUnauthorized(await call(PROTECTED), "Not authenticated");
  });

  it("an unknown API key, in either header", async () => {
    expectUnauthorized(await call(PROTECTED, { headers: { "Service-API-Key": "tsk_not-a-real-key" } }), "Invalid API key");
    expectUnauthorized(await call(PROTECTED, { headers: { "Alt-AO-API-Key": "tsk_not-a-real-key" } }), "Invalid API key");
    expectUnauthorized(await call(PROTECTED, { headers: { "Service-API-Key": "" } }), "Invalid API key");
  });

  it("a wrong API key is refused even next to a valid token", async () => {
    const token = await tokenFor("/login/api_key", { body: { api_key: tenant.apiKey } });
    expectUnauthorized(
      await call(PROTECTED, { headers: { "Service-API-Key": "tsk_wrong", Authorization: `Bearer ${token}` } }),
      "Invalid API key",
    );
  });

  it("a token that is not a JWT", async () => {
    expectUnauthorized(await call(PROTECTED, bearer("not-a-token")), "Invalid or expired token");
    expectUnauthorized(await call(PROTECTED, bearer("a.b.c")), "Invalid or expired token");
    expectUnauthorized(await call(PROTECTED, bearer("tsk_not-a-key")), "Invalid API key");
  });

  it("an expired token", async () => {
    const now = Math.floor(Date.now() / 1000);
    const expired = await signedToken(claimsOf(tenant, { iat: now - 7200, exp: now - 60 }));
    expectUnauthorized(await call(PROTECTED, bearer(expired)), "Invalid or expired token");
    // The same claims with a future expiry are accepted: the expiry alone made the difference.
    expectOwnProjects(await call(PROTECTED, bearer(await signedToken(claimsOf(tenant)))));
  });

  it("a token without an expiry", async () => {
    const { exp: _exp, ...eternal } = claimsOf(tenant);
    expectUnauthorized(await call(PROTECTED, bearer(await signedToken(eternal))), "Invalid or expired token");
  });

  it("a tampered token (claims changed, signature kept)", async () => {
    const other = await createTenant("admin");
    const token = await tokenFor("/login/api_key", { body: { api_key: tenant.apiKey } });
    const [header, payload, signature] = token.split(".") as [string, string, string];
    const claims = JSON.parse(atob(payload.replace(/-/g, "+").replace(/_/g, "/")));
    const forged = btoa(JSON.stringify({ ...claims, org: other.organizationId }))
      .replace(/\+/g, "-")
      .replace(/\//g, "_")
      .replace(/=+$/, "");
    expectUnauthorized(await call(PROTECTED, bearer(`${header}.${forged}.${signature}`)), "Invalid or expired token");
  });

  it("a token signed with another secret", async () => {
    const token = await signedToken(claimsOf(tenant), "some-other-secret-of-sufficient-length");
    expectUnauthorized(await call(PROTECTED, bearer(token)), "Invalid or expired token");
  });

  it("a token of a removed user stops working", async () => {
    const leaving = await addUser(tenant, "member");
    const token = await tokenFor("/login/api_key", { body: { api_key: leaving.apiKey } });
    await env.DB.batch([
      env.DB.prepare("DELETE FROM api_keys WHERE user_id = ?").bind(leaving.userId),
      env.DB.prepare("DELETE FROM users WHERE id = ?").bind(leaving.userId),
    ]);
    expectUnauthorized(await call(PROTECTED, bearer(token)), "Invalid or expired token");
  });

  it("a token carries the role its user has now, not the one at login", async () => {
    const demoted = await addUser(tenant, "admin");
    const token = await tokenFor("/login/api_key", { body: { api_key: demoted.apiKey } });
    await env.DB.prepare("UPDATE users SET role = 'member' WHERE id = ?").bind(demoted.userId).run();
    const answer = await call("/v2/org-jobs/delete-by-metadata?dry_run=true", {
      ...bearer(token),
      body: { metadata_key: "user", metadata_value: "nobody" },
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(403);
  });

  it("an unsigned token (alg none)", async () => {
    const encode = (o: unknown) => btoa(JSON.stringify(o)).replace(/=+$/, "");
    const unsigned = `${encode({ alg: "none", typ: "JWT" })}.${encode(claimsOf(tenant))}.`;
    expectUnauthorized(await call(PROTECTED, bearer(unsigned)), "Invalid or expired token");
  });

  it("Basic with a wrong password, an unknown user, or garbage", async () => {
    expectUnauthorized(await call(PROTECTED, { headers: { Authorization: basic(tenant.email, "wrong") } }), "Invalid username or password", true);
    expectUnauthorized(await call(PROTECTED, { headers: { Authorization: basic("nobody@example.com", "x") } }), "Invalid username or password", true);
    expectUnauthorized(await call(PROTECTED, { headers: { Authorization: "Basic !!!not-base64" } }), "Invalid username or password", true);
    expectUnauthorized(await call(PROTECTED, { headers: { Authorization: `Basic ${btoa("no-colon")}` } }), "Invalid username or password", true);
  });

  it("an unknown scheme, or a scheme without credentials", async () => {
    expectUnauthorized(await call(PROTECTED, { headers: { Authorization: "Digest username=x" } }), "Unsupported authorization scheme");
    expectUnauthorized(await call(PROTECTED, { headers: { Authorization: "Bearer" } }), "Unsupported authorization scheme");
    expectUnauthorized(await call(PROTECTED, { headers: { Authorization: tenant.apiKey } }), "Unsupported authorization scheme");
  });

  for (const prefix of ["", "/v2"]) {
    it(`${prefix}/login with a wrong password or an unknown user`, async () => {
      expectUnauthorized(await call(`${prefix}/login`, form({ username: tenant.email, password: "wrong" })), "Incorrect username or password");
      expectUnauthorized(await call(`${prefix}/login`, { body: { username: "nobody@example.com", password: "x" } }), "Incorrect username or password");
    });

    it(`${prefix}/login/api_key with an unknown key`, async () => {
      expectUnauthorized(await call(`${prefix}/login/api_key`, { body: { api_key: "tsk_unknown" } }), "Invalid API key");
    });
  }
});

describe("login input is validated", () => {
  it("a form without password is a 422 naming the field", async () => {
    const response = await call("/login", form({ username: tenant.email }));
    expect(response.status).toBe(422);
    expect(response.body.detail).toEqual([
      { loc: ["body", "password"], msg: "Field required", type: "missing", input: { username: tenant.email } },
    ]);
  });

  it("a login without any body is a 422 naming both fields", async () => {
    const response = await call("/login", { method: "POST" });
    expect(response.status, JSON.stringify(response.body)).toBe(422);
    expect(response.body.detail).toEqual([
      { loc: ["body", "username"], msg: "Field required", type: "missing", input: {} },
      { loc: ["body", "password"], msg: "Field required", type: "missing", input: {} },
    ]);
  });

  it("a login with an unsupported media type is a 422", async () => {
    const response = await call("/login", { rawBody: "username=a&password=b", headers: { "content-type": "text/plain" } });
    expect(response.status, JSON.stringify(response.body)).toBe(422);
    expect(response.body.detail[0]).toMatchObject({ loc: ["body"], type: "model_attributes_type" });
  });

  it("the media type decides how a login is read, whatever its parameters say", async () => {
    const fields = new URLSearchParams({ username: tenant.email, password: tenant.password }).toString();
    for (const contentType of ["application/x-www-form-urlencoded; x=json", "Application/X-WWW-Form-Urlencoded; boundary=json"]) {
      const response = await call("/login", { rawBody: fields, headers: { "content-type": contentType } });
      expect(response.status, `${contentType}: ${JSON.stringify(response.body)}`).toBe(200);
      expect(response.body.token_type).toBe("bearer");
    }
    // Parameters the form parser cannot honour are the client's fault, never a 500.
    for (const contentType of ["application/x-www-form-urlencoded; charset=json", "application/x-www-form-urlencoded;json", "application/json-seq", "multipart/form-data; x=json"]) {
      const response = await call("/login", { rawBody: fields, headers: { "content-type": contentType } });
      expect(response.status, `${contentType}: ${JSON.stringify(response.body)}`).toBe(422);
    }
    const json = JSON.stringify({ username: tenant.email, password: tenant.password });
    for (const contentType of ["application/json; charset=utf-8", "APPLICATION/JSON", "application/vnd.api+json"]) {
      const response = await call("/login", { rawBody: json, headers: { "content-type": contentType } });
      expect(response.status, `${contentType}: ${JSON.stringify(response.body)}`).toBe(200);
    }
    // A form body labelled JSON is malformed JSON; JSON labelled a form has no fields: both 422.
    expect((await call("/login", { rawBody: fields, headers: { "content-type": "application/json" } })).status).toBe(422);
    expect((await call("/login", { rawBody: json, headers: { "content-type": "application/x-www-form-urlencoded; x=json" } })).status).toBe(422);
  });

  it("/login/api_key without a key is a 422", async () => {
    const response = await call("/login/api_key", { body: {} });
    expect(response.status).toBe(422);
    expect(response.body.detail).toEqual([{ loc: ["body", "api_key"], msg: "Field required", type: "missing", input: {} }]);
  });
});

describe("x-request-id", () => {
  it("is on every kind of answer", async () => {
    const answers = await Promise.all([
      call("/healthcheck"),
      call("/v2/healthcheck"),
      call("/openapi.json"),
      call("/no/such/route"),
      call(PROTECTED),
      call(PROTECTED, { as: tenant }),
      call("/v2/projects", { as: tenant, body: {} }),
      call("/v2/projects/00000000-0000-4000-8000-000000000000", { as: tenant }),
    ]);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 404, 401, 200, 422, 404]);
    for (const answer of answers) expectRequestId(answer);
    expect(new Set(answers.map((a) => a.headers.get("x-request-id"))).size).toBe(answers.length);
  });

  it("echoes a sane id sent by the caller and replaces an unsafe one", async () => {
    const echoed = await call(PROTECTED, { as: tenant, headers: { "x-request-id": "client-req.42" } });
    expect(echoed.headers.get("x-request-id")).toBe("client-req.42");
    const replaced = await call(PROTECTED, { as: tenant, headers: { "x-request-id": "bad id with spaces" } });
    expect(replaced.headers.get("x-request-id")).not.toContain(" ");
    expectRequestId(replaced);
  });
});

describe("the API description declares the schemes", () => {
  it("/openapi.json is OpenAPI 3.1 with the four security schemes, required on protected routes", async () => {
    const response = await call("/openapi.json");
    expect(response.status).toBe(200);
    const document = response.body;
    expect(document.openapi).toBe("3.1.0");
    expect(document.components.securitySchemes).toEqual({
      ServiceApiKey: { type: "apiKey", in: "header", name: "Service-API-Key" },
      AltAoApiKey: { type: "apiKey", in: "header", name: "Alt-AO-API-Key" },
      OAuth2Password: { type: "oauth2", flows: { password: { tokenUrl: "/login", scopes: {} } } },
      HTTPBasic: { type: "http", scheme: "basic" },
    });
    expect(document.security).toEqual([{ ServiceApiKey: [] }, { AltAoApiKey: [] }, { OAuth2Password: [] }, { HTTPBasic: [] }]);
    expect(Object.keys(document.paths)).toEqual(expect.arrayContaining(["/login", "/login/api_key", "/healthcheck", "/v2/projects"]));
  });

  it("/docs is an HTML API reference reading /openapi.json", async () => {
    const response = await call("/docs");
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/text\/html/);
    expect(response.body).toContain("/openapi.json");
  });
});
