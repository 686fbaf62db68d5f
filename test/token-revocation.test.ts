/**
 * Revocation without SQL (issue 19 point 10, contract section 12): tokens carry an id; logout ends
 * that token; revoking a key ends the key and the tokens exchanged from it; deleting a user or
 * resetting a password ends all of the user's tokens; a role change applies; each within 5 s on
 * every isolate (the credential cache lives CACHE_TTL_MS), not a minute. The statements are the
 * admin command line's (src/admin/provisioning.ts; test/node/admin-cli.test.ts runs the CLI).
 */
import { createExecutionContext, createScheduledController, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { deleteUser, resetPassword, revokeApiKey, runStatements, setRole } from "../src/admin/provisioning";
import { CACHE_TTL_MS } from "../src/auth/principal-store";
import { MAX_TTL_SECONDS, tokenLifetime } from "../src/auth/tokens";
import type { Env } from "../src/env";
import worker from "../src/index";
import { call } from "./support/client";
import { createTenant, type Tenant } from "./support/tenants";

const bearer = (token: string) => ({ headers: { Authorization: `Bearer ${token}` } });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function tokenFromKey(tenant: Tenant): Promise<string> {
  const answer = await call("/login/api_key", { body: { api_key: tenant.apiKey } });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body.access_token;
}

async function tokenFromPassword(tenant: Tenant, password = tenant.password): Promise<string> {
  const answer = await call("/login", {
    rawBody: new URLSearchParams({ username: tenant.email, password }).toString(),
    headers: { "content-type": "application/x-www-form-urlencoded" },
  });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body.access_token;
}

const status = async (options: Parameters<typeof call>[1]) => (await call("/v2/current_user", options)).status;

/** Within the promised 5 s, whatever this isolate had cached. */
async function afterCacheLifetime(): Promise<void> {
  expect(CACHE_TTL_MS).toBeLessThanOrEqual(5_000);
  await sleep(CACHE_TTL_MS + 100);
}

describe("tokens carry an id", () => {
  it("every issued token has its own jti", async () => {
    const tenant = await createTenant();
    const [a, b] = [await tokenFromKey(tenant), await tokenFromKey(tenant)];
    const jti = (t: string) => JSON.parse(atob(t.split(".")[1]!.replace(/-/g, "+").replace(/_/g, "/"))).jti;
    expect(jti(a)).toMatch(/^[0-9a-f-]{36}$/);
    expect(jti(a)).not.toBe(jti(b));
  });
});

describe("POST /v2/logout", () => {
  it("ends the token it is called with, at once, and no other", async () => {
    const tenant = await createTenant();
    const [ending, other] = [await tokenFromPassword(tenant), await tokenFromKey(tenant)];
    expect(await status(bearer(ending))).toBe(200);
    const answer = await call("/v2/logout", { method: "POST", ...bearer(ending) });
    expect(answer.status, JSON.stringify(answer.body)).toBe(204);
    expect(await status(bearer(ending))).toBe(401);
    expect(await status(bearer(other))).toBe(200);
    expect(await status({ as: tenant })).toBe(200);
    // Again: the token is already ended, so the caller is not authenticated.
    expect((await call("/v2/logout", { method: "POST", ...bearer(ending) })).status).toBe(401);
  });

  it("is refused for credentials that are not a token (nothing to end)", async () => {
    const tenant = await createTenant();
    const answer = await call("/v2/logout", { method: "POST", as: tenant });
    expect(answer.status).toBe(400);
    expect(answer.body.detail).toMatch(/^Logout ends a bearer token/);
  });

  it("keeps an ended token's id until the token expires, then clears it", async () => {
    const stale = crypto.randomUUID();
    await env.DB.prepare("INSERT INTO revoked_tokens (id, expires_at) VALUES (?, ?)").bind(stale, Math.floor(Date.now() / 1000) - 10).run();
    const tenant = await createTenant();
    expect((await call("/v2/logout", { method: "POST", ...bearer(await tokenFromKey(tenant)) })).status).toBe(204);
    expect(await env.DB.prepare("SELECT id FROM revoked_tokens WHERE id = ?").bind(stale).first()).toBeNull();
  });

  it("the hourly maintenance clears every expired id, even with no logout to do it, and keeps the live ones", async () => {
    const nowSeconds = Math.floor(Date.now() / 1000);
    const expired = Array.from({ length: 250 }, () => crypto.randomUUID());
    const live = crypto.randomUUID();
    await env.DB.prepare("INSERT INTO revoked_tokens (id, expires_at) SELECT value, ? FROM json_each(?)").bind(nowSeconds - 60, JSON.stringify(expired)).run();
    await env.DB.prepare("INSERT INTO revoked_tokens (id, expires_at) VALUES (?, ?)").bind(live, nowSeconds + 3600).run();
    const ctx = createExecutionContext();
    await worker.scheduled(createScheduledController({ scheduledTime: new Date(), cron: "17 * * * *" }), env, ctx);
    await waitOnExecutionContext(ctx);
    const left = await env.DB.prepare("SELECT count(*) AS n FROM revoked_tokens WHERE expires_at < ?").bind(nowSeconds).first<{ n: number }>();
    expect(left!.n).toBe(0);
    expect(await env.DB.prepare("SELECT id FROM revoked_tokens WHERE id = ?").bind(live).first()).not.toBeNull();
  });
});

describe("the admin command line's revocations take effect within 5 s", { timeout: 30_000 }, () => {
  it("revoking an API key ends the key and the tokens exchanged from it, not the user's other tokens", async () => {
    const tenant = await createTenant();
    const [fromKey, fromPassword] = [await tokenFromKey(tenant), await tokenFromPassword(tenant)];
    // Warm this isolate's cache: the revocation must beat it.
    expect([await status({ as: tenant }), await status(bearer(fromKey))]).toEqual([200, 200]);
    await runStatements(env.DB, revokeApiKey(tenant.apiKeyId).statements);
    await afterCacheLifetime();
    expect(await status({ as: tenant })).toBe(401);
    expect(await status(bearer(fromKey))).toBe(401);
    expect(await status(bearer(fromPassword))).toBe(200);
  });

  it("resetting a password ends every token of the user, and the old password; the new one works", async () => {
    const tenant = await createTenant();
    const [fromKey, fromPassword] = [await tokenFromKey(tenant), await tokenFromPassword(tenant)];
    const oldBasic = { headers: { Authorization: `Basic ${btoa(`${tenant.email}:${tenant.password}`)}` } };
    expect([await status(bearer(fromKey)), await status(bearer(fromPassword)), await status(oldBasic)]).toEqual([200, 200, 200]);
    await runStatements(env.DB, (await resetPassword(tenant.userId, "a-new-password-1")).statements);
    await afterCacheLifetime();
    expect(await status(bearer(fromKey))).toBe(401);
    expect(await status(bearer(fromPassword))).toBe(401);
    expect(await status(oldBasic)).toBe(401);
    expect(await status(bearer(await tokenFromPassword(tenant, "a-new-password-1")))).toBe(200);
    // API keys stay (revoked one by one), and a token exchanged now works.
    expect(await status(bearer(await tokenFromKey(tenant)))).toBe(200);
  });

  it("deleting a user ends their keys, tokens and password", async () => {
    const tenant = await createTenant();
    const token = await tokenFromKey(tenant);
    const basic = { headers: { Authorization: `Basic ${btoa(`${tenant.email}:${tenant.password}`)}` } };
    expect([await status({ as: tenant }), await status(bearer(token)), await status(basic)]).toEqual([200, 200, 200]);
    await runStatements(env.DB, deleteUser(tenant.userId).statements);
    await afterCacheLifetime();
    expect([await status({ as: tenant }), await status(bearer(token)), await status(basic)]).toEqual([401, 401, 401]);
  });

  it("a changed role applies to keys and tokens", async () => {
    const tenant = await createTenant("admin");
    const token = await tokenFromKey(tenant);
    expect((await call("/v2/current_user", bearer(token))).body.role).toBe("admin");
    await runStatements(env.DB, setRole(tenant.userId, "member").statements);
    await afterCacheLifetime();
    expect((await call("/v2/current_user", bearer(token))).body.role).toBe("user");
    expect((await call("/v2/current_user", { as: tenant })).body.role).toBe("user");
  });
});

describe("TOKEN_TTL_SECONDS", () => {
  it("has a maximum of 7 days; under an hour or not a number means the default day", () => {
    const lifetime = (value?: string) => tokenLifetime({ TOKEN_TTL_SECONDS: value } as Env);
    expect(MAX_TTL_SECONDS).toBe(7 * 24 * 3600);
    expect(lifetime("7200")).toBe(7200);
    expect(lifetime(String(365 * 24 * 3600))).toBe(MAX_TTL_SECONDS);
    expect(lifetime("60")).toBe(86400);
    expect(lifetime("soon")).toBe(86400);
    expect(lifetime(undefined)).toBe(86400);
  });
});
