/**
 * Brute force (issue 9, point 7): failed password checks, at /login and by HTTP Basic on any
 * route, are limited per email and per client IP with a growing lock-out, 429 with Retry-After;
 * a locked-out guesser costs no PBKDF2. The guards are real Durable Objects (wrangler.toml), with
 * the default policy of wrangler.toml [vars]: 5 free failures per email, 20 per IP.
 */
import { env } from "cloudflare:test";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { clientKey } from "../src/limits/password-attempts";
import { type GuardPolicy, lockoutMs, MAX_FAILED_ADDRESSES } from "../src/limits/password-guard";
import { limitSetting } from "../src/limits/limit-settings";
import { rememberRefusal, remainingRefusal } from "../src/limits/refusal-memo";
import { type CallResult, call } from "./support/client";
import { failingDatabase } from "./support/failing-database";
import { type Tenant, createTenant } from "./support/tenants";
import { callWorkerWith } from "./support/worker-call";

const FREE_PER_EMAIL = limitSetting(env, "PASSWORD_FREE_FAILURES_PER_EMAIL");
const FREE_PER_IP = limitSetting(env, "PASSWORD_FREE_FAILURES_PER_IP");

let ipCounter = 0;
/** A client address no other test uses (TEST-NET-3 and documentation IPv6). */
const freshIp = () => `203.0.113.${++ipCounter}`;

function login(email: string, password: string, ip?: string): Promise<CallResult> {
  return call("/login", {
    rawBody: new URLSearchParams({ username: email, password }).toString(),
    headers: { "content-type": "application/x-www-form-urlencoded", ...(ip ? { "CF-Connecting-IP": ip } : {}) },
  });
}

function basic(email: string, password: string, ip?: string): Promise<CallResult> {
  return call("/v2/projects", { headers: { Authorization: `Basic ${btoa(`${email}:${password}`)}`, ...(ip ? { "CF-Connecting-IP": ip } : {}) } });
}

function expectLimited(response: CallResult): number {
  expect(response.status, JSON.stringify(response.body)).toBe(429);
  const retryAfter = Number(response.headers.get("retry-after"));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(response.body).toEqual({ detail: `Too many failed password checks for this account or from this address; retry in ${retryAfter} s.` });
  return retryAfter;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Counts PBKDF2 derivations (every password verification makes exactly one). */
function countPbkdf2() {
  return vi.spyOn(crypto.subtle, "deriveBits");
}

afterEach(() => vi.restoreAllMocks());

describe("the lock-out policy", () => {
  const policy: GuardPolicy = { freeFailures: 5, maxLockoutSeconds: 900, forgetAfterSeconds: 3600 };
  it("is free up to the limit, then doubles from one second up to the cap", () => {
    expect([0, 1, 5].map((n) => lockoutMs(n, policy))).toEqual([0, 0, 0]);
    expect([6, 7, 8, 9, 15].map((n) => lockoutMs(n, policy))).toEqual([1000, 2000, 4000, 8000, 512_000]);
    expect(lockoutMs(16, policy)).toBe(900_000);
    expect(lockoutMs(10_000, policy)).toBe(900_000);
  });

  it("a refusal is remembered in the isolate for as long as it was announced, and no longer", () => {
    const key = `memo-test:${crypto.randomUUID()}`;
    const now = 1_000_000;
    expect(remainingRefusal(key, now)).toBeUndefined();
    rememberRefusal(key, 3, now);
    expect(remainingRefusal(key, now)).toBe(3);
    expect(remainingRefusal(key, now + 2_100)).toBe(1);
    expect(remainingRefusal(key, now + 3_000)).toBeUndefined();
    expect(remainingRefusal(key, now)).toBeUndefined();
  });

  it("counts IPv6 clients per /64 and IPv4 clients per address", () => {
    expect(clientKey("2001:db8:85a3:8d3:1319:8a2e:370:7348")).toBe("2001:db8:85a3:8d3::/64");
    expect(clientKey("2001:DB8:85A3:08D3::1")).toBe("2001:db8:85a3:8d3::/64");
    expect(clientKey("2001:db8::1")).toBe("2001:db8:0:0::/64");
    expect(clientKey("::1")).toBe("0:0:0:0::/64");
    expect(clientKey("198.51.100.7")).toBe("198.51.100.7");
  });
});

describe("per email", () => {
  let tenant: Tenant;
  beforeAll(async () => {
    tenant = await createTenant();
  });

  it(`${FREE_PER_EMAIL} failures are free, the next locks the email: then 429 for any password from an address that failed, without a PBKDF2`, async () => {
    const user = await createTenant("member", tenant.organizationId);
    for (let i = 0; i <= FREE_PER_EMAIL; i++) expect((await login(user.email, `wrong-${i}`)).status).toBe(401);
    const pbkdf2 = countPbkdf2();
    const retryAfter = expectLimited(await login(user.email, user.password));
    expect(retryAfter).toBe(1);
    expectLimited(await login(user.email, "wrong-again"));
    // The email is locked everywhere a password is checked, HTTP Basic on any route included.
    expectLimited(await basic(user.email, user.password));
    expect(pbkdf2).not.toHaveBeenCalled();
    pbkdf2.mockRestore();

    await sleep(retryAfter * 1000 + 100);
    const ok = await login(user.email, user.password);
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    // The right password cleared the email's count: the free failures are free again.
    for (let i = 0; i < FREE_PER_EMAIL; i++) expect((await login(user.email, `wrong-after-${i}`)).status).toBe(401);
  });

  it("each failure past the free ones doubles the lock-out", async () => {
    const user = await createTenant("member", tenant.organizationId);
    for (let i = 0; i <= FREE_PER_EMAIL; i++) expect((await login(user.email, `wrong-${i}`)).status).toBe(401);
    expect(expectLimited(await login(user.email, "x"))).toBe(1);
    await sleep(1100);
    expect((await login(user.email, "still-wrong")).status).toBe(401);
    expect(expectLimited(await login(user.email, "x"))).toBe(2);
  });

  it("HTTP Basic failures count against the email like /login failures", async () => {
    const user = await createTenant("member", tenant.organizationId);
    for (let i = 0; i <= FREE_PER_EMAIL; i++) {
      const response = i % 2 === 0 ? await basic(user.email, `wrong-${i}`) : await login(user.email, `wrong-${i}`);
      expect(response.status).toBe(401);
    }
    expectLimited(await basic(user.email, "wrong"));
    expectLimited(await call("/v2/projects/all", { headers: { Authorization: `Basic ${btoa(`${user.email}:${user.password}`)}` } }));
  });

  it("emails are one key whatever their case", async () => {
    const user = await createTenant("member", tenant.organizationId);
    for (let i = 0; i <= FREE_PER_EMAIL; i++) expect((await login(i % 2 ? user.email.toUpperCase() : user.email, `wrong-${i}`)).status).toBe(401);
    expectLimited(await login(` ${user.email.toUpperCase()}`, "wrong"));
  });

  it("an unknown email is limited exactly like a known one (nothing tells them apart)", async () => {
    const unknown = `nobody-${crypto.randomUUID()}@example.com`;
    for (let i = 0; i <= FREE_PER_EMAIL; i++) expect((await login(unknown, `wrong-${i}`)).status).toBe(401);
    expectLimited(await login(unknown, "wrong"));
  });

  it("a burst of parallel guesses is stopped at the limit, and costs at most that many PBKDF2s", async () => {
    const user = await createTenant("member", tenant.organizationId);
    const pbkdf2 = countPbkdf2();
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => login(user.email, `parallel-${i}`)));
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 401).length).toBe(FREE_PER_EMAIL + 1);
    expect(statuses.filter((s) => s === 429).length).toBe(30 - FREE_PER_EMAIL - 1);
    expect(pbkdf2.mock.calls.length).toBe(FREE_PER_EMAIL + 1);
  });

  it("a right password within the last minute is served from the cache, locked out or not", async () => {
    const user = await createTenant("member", tenant.organizationId);
    expect((await basic(user.email, user.password)).status).toBe(200);
    for (let i = 0; i <= FREE_PER_EMAIL; i++) expect((await login(user.email, `wrong-${i}`)).status).toBe(401);
    expectLimited(await login(user.email, "wrong"));
    // The pair was verified a moment ago: no new check is made, so nothing is refused.
    expect((await basic(user.email, user.password)).status).toBe(200);
  });
});

describe("proof of possession through a lock-out (issue 19 point 11)", () => {
  it("one wrong guess per lock period from one address no longer keeps the owner out", async () => {
    const user = await createTenant();
    const guesser = freshIp();
    for (let i = 0; i <= FREE_PER_EMAIL; i++) expect((await login(user.email, `wrong-${i}`, guesser)).status).toBe(401);
    expectLimited(await login(user.email, user.password, guesser));
    // The owner, from an address that has not failed, signs in at once, by /login and by Basic.
    const owner = freshIp();
    const ok = await login(user.email, user.password, owner);
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    // ...and that cleared the email's failures: it is no longer locked.
    expect((await login(user.email, "wrong-again")).status).toBe(401);
  });

  it("a guess from a fresh address gets one verification, and that address is then locked out too", async () => {
    const user = await createTenant();
    for (let i = 0; i <= FREE_PER_EMAIL; i++) expect((await login(user.email, `wrong-${i}`, freshIp())).status).toBe(401);
    const first = freshIp();
    expect((await login(user.email, "fresh-guess", first)).status).toBe(401);
    expectLimited(await login(user.email, user.password, first));
    expectLimited(await basic(user.email, user.password, first));
  });

  it("a burst from one fresh address gets a single verification while the email is locked", async () => {
    const user = await createTenant();
    for (let i = 0; i <= FREE_PER_EMAIL; i++) expect((await login(user.email, `wrong-${i}`)).status).toBe(401);
    const ip = freshIp();
    const pbkdf2 = countPbkdf2();
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => login(user.email, `burst-${i}`, ip)));
    expect(answers.filter((a) => a.status === 401).length).toBe(1);
    expect(answers.filter((a) => a.status === 429).length).toBe(9);
    expect(pbkdf2.mock.calls.length).toBe(1);
  });

  it(`after ${MAX_FAILED_ADDRESSES} failed addresses the lock-out holds for every address`, async () => {
    const user = await createTenant();
    // Each address fails once: the first ones before the lock, the others through it.
    for (let i = 0; i < MAX_FAILED_ADDRESSES; i++) {
      const answer = await login(user.email, `spray-${i}`, freshIp());
      expect([401, 429], JSON.stringify(answer.body)).toContain(answer.status);
    }
    expectLimited(await login(user.email, user.password, freshIp()));
    // Fifty sequential password checks (PBKDF2 at 100,000 iterations each) outlast the 5 s default.
  }, 60_000);
});

describe("per client IP", () => {
  it(`${FREE_PER_IP} failures from one address, over any emails, lock that address and no other`, async () => {
    const ip = freshIp();
    for (let i = 0; i <= FREE_PER_IP; i++) {
      expect((await login(`spray-${i}-${crypto.randomUUID()}@example.com`, "Winter2026!", ip)).status).toBe(401);
    }
    expectLimited(await login(`spray-next-${crypto.randomUUID()}@example.com`, "Winter2026!", ip));
    expectLimited(await basic(`spray-basic-${crypto.randomUUID()}@example.com`, "Winter2026!", ip));
    // Another address, and a real user behind it, are not affected.
    const tenant = await createTenant();
    expect((await login(tenant.email, tenant.password, freshIp())).status).toBe(200);
  });

  it("an IPv6 client is one key for its whole /64", async () => {
    const prefix = `2001:db8:${(++ipCounter).toString(16)}:1`;
    for (let i = 0; i <= FREE_PER_IP; i++) {
      expect((await login(`v6-${i}-${crypto.randomUUID()}@example.com`, "pw", `${prefix}::${(i + 1).toString(16)}`)).status).toBe(401);
    }
    expectLimited(await login(`v6-next-${crypto.randomUUID()}@example.com`, "pw", `${prefix}:aaaa:bbbb:cccc:dddd`));
  });

  it("right passwords from a shared address do not wipe out the failures of others", async () => {
    const ip = freshIp();
    const tenant = await createTenant();
    for (let i = 0; i < FREE_PER_IP; i++) {
      expect((await login(`shared-${i}-${crypto.randomUUID()}@example.com`, "guess", ip)).status).toBe(401);
      // A colleague logging in from the same office between guesses.
      if (i % 5 === 0) expect((await login(tenant.email, tenant.password, ip)).status).toBe(200);
    }
    expect((await login(`shared-last-${crypto.randomUUID()}@example.com`, "guess", ip)).status).toBe(401);
    expectLimited(await login(`shared-after-${crypto.randomUUID()}@example.com`, "guess", ip));
  });
});

describe("a check that could not be made", () => {
  it("is not counted against the email when the database fails", async () => {
    const tenant = await createTenant();
    const failing = failingDatabase(() => new Error("D1_ERROR: Network connection lost."));
    vi.spyOn(console, "warn").mockImplementation(() => undefined);
    for (let i = 0; i < 3 * FREE_PER_EMAIL; i++) {
      const response = await callWorkerWith({ DB: failing }, "/login", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ username: tenant.email, password: tenant.password }).toString(),
      });
      expect(response.status).toBe(503);
    }
    expect((await login(tenant.email, tenant.password)).status).toBe(200);
  });
});

describe("other credentials", () => {
  it("API keys and bearer tokens are not slowed by a locked-out email", async () => {
    const tenant = await createTenant();
    for (let i = 0; i <= FREE_PER_EMAIL; i++) expect((await login(tenant.email, `wrong-${i}`)).status).toBe(401);
    expectLimited(await login(tenant.email, tenant.password));
    expect((await call("/v2/projects", { as: tenant })).status).toBe(200);
    const token = await call("/login/api_key", { body: { api_key: tenant.apiKey } });
    expect(token.status).toBe(200);
    expect((await call("/v2/projects", { headers: { Authorization: `Bearer ${token.body.access_token}` } })).status).toBe(200);
  });
});
