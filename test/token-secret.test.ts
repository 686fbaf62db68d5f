/**
 * A TOKEN_SECRET that could be guessed turns bearer tokens off (issue 9, point 5): no token is
 * issued or accepted, the answer is a 503 before any password is checked, the log says what to
 * fix, and API keys keep working. The worker is called through its real entry point with the
 * test bindings, the secret replaced.
 */
import { env } from "cloudflare:test";
import { sign } from "hono/jwt";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import example from "../.dev.vars.example?raw";
import { EXAMPLE_TOKEN_SECRET, MIN_TOKEN_SECRET_BYTES, tokenSecretProblem } from "../src/auth/token-secret";
import { type Tenant, createTenant } from "./support/tenants";
import { callWorkerWith } from "./support/worker-call";

let tenant: Tenant;

beforeAll(async () => {
  tenant = await createTenant();
});

afterEach(() => {
  vi.restoreAllMocks();
});

function callWithSecret(secret: string | undefined, path: string, init: RequestInit) {
  return callWorkerWith({ TOKEN_SECRET: secret as string }, path, init);
}

const passwordLogin = (t: Tenant): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/x-www-form-urlencoded" },
  body: new URLSearchParams({ username: t.email, password: t.password }).toString(),
});

const keyLogin = (t: Tenant): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify({ api_key: t.apiKey }),
});

const WEAK = {
  missing: undefined,
  empty: "",
  short: "s".repeat(MIN_TOKEN_SECRET_BYTES - 1),
  placeholder: EXAMPLE_TOKEN_SECRET,
};

describe("a secret that could be guessed", () => {
  it("the placeholder in the code is the one .dev.vars.example ships", () => {
    expect(example).toContain(`TOKEN_SECRET=${EXAMPLE_TOKEN_SECRET}\n`);
  });

  it("is named for what is wrong with it", () => {
    expect(tokenSecretProblem(undefined)).toMatch(/not set/);
    expect(tokenSecretProblem("x".repeat(31))).toMatch(/31 bytes/);
    expect(tokenSecretProblem("é".repeat(16))).toBeUndefined(); // 32 bytes in UTF-8
    expect(tokenSecretProblem(EXAMPLE_TOKEN_SECRET)).toMatch(/placeholder/);
    expect(tokenSecretProblem(`${EXAMPLE_TOKEN_SECRET}\n`)).toMatch(/placeholder/);
    expect(tokenSecretProblem(env.TOKEN_SECRET)).toBeUndefined();
  });

  for (const [label, secret] of Object.entries(WEAK)) {
    it(`${label}: no token is issued, with a 503 and a log line, and a correct password is never a 500`, async () => {
      const log = vi.spyOn(console, "error").mockImplementation(() => undefined);
      for (const prefix of ["", "/v2"]) {
        for (const init of [passwordLogin(tenant), keyLogin(tenant)]) {
          const path = init.headers && (init.headers as Record<string, string>)["content-type"] === "application/json" ? `${prefix}/login/api_key` : `${prefix}/login`;
          const response = await callWithSecret(secret, path, init);
          expect(response.status, `${path}: ${JSON.stringify(response.body)}`).toBe(503);
          expect(response.body.detail).toMatch(/token secret is not configured/);
          expect(response.body.access_token).toBeUndefined();
        }
      }
      // Logged once per isolate and problem, saying how to fix it; the secret itself is never logged.
      const lines = log.mock.calls.map((args) => args.join(" "));
      for (const line of lines) {
        if (secret) expect(line).not.toContain(secret);
      }
      if (lines.length > 0) expect(lines.join("\n")).toMatch(/Bearer tokens are disabled: TOKEN_SECRET .*wrangler secret put TOKEN_SECRET/);
    });
  }

  it("each problem is logged (once per isolate)", async () => {
    const log = vi.spyOn(console, "error").mockImplementation(() => undefined);
    const fresh = `${"z".repeat(10)}`; // 10 bytes: a problem no earlier test had
    await callWithSecret(fresh, "/login", passwordLogin(tenant));
    await callWithSecret(fresh, "/login", passwordLogin(tenant));
    const lines = log.mock.calls.map((args) => args.join(" ")).filter((l) => l.includes("Bearer tokens are disabled"));
    expect(lines).toEqual([expect.stringMatching(/TOKEN_SECRET is 10 bytes long; it needs at least 32/)]);
  });

  it("a token signed with the placeholder is never accepted", async () => {
    const now = Math.floor(Date.now() / 1000);
    const forged = await sign({ sub: tenant.userId, org: tenant.organizationId, role: "admin", email: tenant.email, iat: now, exp: now + 3600 }, EXAMPLE_TOKEN_SECRET, "HS256");
    vi.spyOn(console, "error").mockImplementation(() => undefined);
    const response = await callWithSecret(EXAMPLE_TOKEN_SECRET, "/v2/projects", { headers: { Authorization: `Bearer ${forged}` } });
    expect(response.status).toBe(503);
  });

  it("API keys keep working", async () => {
    vi.spyOn(console, "error").mockImplementation(() => undefined);
    const response = await callWithSecret(WEAK.short, "/v2/projects", { headers: { "Service-API-Key": tenant.apiKey } });
    expect(response.status).toBe(200);
  });

  it("a good secret issues tokens as before", async () => {
    const response = await callWithSecret(env.TOKEN_SECRET, "/login", passwordLogin(tenant));
    expect(response.status).toBe(200);
    expect(response.body.access_token).toBeTruthy();
  });
});
