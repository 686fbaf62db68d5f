/**
 * Resolves credentials to principals. Results are cached in the isolate for a short time so that
 * a client sending the same key or password on every request pays the database (and PBKDF2) once
 * per minute, not once per request: a revoked key keeps working for at most CACHE_TTL_MS.
 */
import { eq } from "drizzle-orm";
import type { Database } from "../db/client";
import { apiKeys, users } from "../db/schema";
import type { Principal } from "../http/app-env";
import type { PasswordGate } from "../limits/password-attempts";
import { hashApiKey } from "./api-keys";
import { sha256Hex } from "./crypto";
import { type PasswordHash, hashPassword, verifyPassword } from "./passwords";

const CACHE_TTL_MS = 60_000;
const CACHE_MAX_ENTRIES = 10_000;

const cache = new Map<string, { principal: Principal; expiresAt: number }>();

function cached(key: string): Principal | undefined {
  const hit = cache.get(key);
  if (!hit) return undefined;
  if (hit.expiresAt < Date.now()) {
    cache.delete(key);
    return undefined;
  }
  return hit.principal;
}

function remember(key: string, principal: Principal): Principal {
  if (cache.size >= CACHE_MAX_ENTRIES) cache.clear();
  cache.set(key, { principal, expiresAt: Date.now() + CACHE_TTL_MS });
  return principal;
}

/** Forget every cached credential (tests that revoke or re-create users). */
export function clearPrincipalCache(): void {
  cache.clear();
}

/** The columns of `users` a principal is made of. */
const PRINCIPAL_COLUMNS = { userId: users.id, organizationId: users.organizationId, role: users.role, email: users.email };

/** A cached principal, or the one `load` finds (remembered), or undefined (not remembered). */
async function cachedLookup(cacheKey: string, load: () => Promise<Principal | undefined>): Promise<Principal | undefined> {
  const hit = cached(cacheKey);
  if (hit) return hit;
  const found = await load();
  return found ? remember(cacheKey, found) : undefined;
}

export async function principalFromApiKey(db: Database, key: string): Promise<Principal | undefined> {
  const keyHash = await hashApiKey(key);
  return cachedLookup(`key:${keyHash}`, async () => {
    const [row] = await db
      .select(PRINCIPAL_COLUMNS)
      .from(apiKeys)
      .innerJoin(users, eq(users.id, apiKeys.userId))
      .where(eq(apiKeys.keyHash, keyHash))
      .limit(1);
    return row;
  });
}

/**
 * The user a bearer token names, as the database has it now (role included), or undefined when
 * the user no longer exists. Cached like the other credentials: a removed user's tokens stop
 * working within CACHE_TTL_MS, a changed role applies within the same time.
 */
export async function principalOfUser(db: Database, userId: string): Promise<Principal | undefined> {
  return cachedLookup(`user:${userId}`, async () => {
    const [row] = await db.select(PRINCIPAL_COLUMNS).from(users).where(eq(users.id, userId)).limit(1);
    return row;
  });
}

let unknownUserHashPromise: Promise<PasswordHash> | undefined;

/** A hash no password matches (random, made once per isolate), verified against for unknown emails. */
function unknownUserHash(): Promise<PasswordHash> {
  unknownUserHashPromise ??= hashPassword(crypto.randomUUID());
  return unknownUserHashPromise;
}

/**
 * The user an email and password name. A pair that was right within the last minute is served
 * from the cache; any other is verified (PBKDF2) only once `gate` admits it: the brute-force
 * limits (src/limits/password-attempts.ts) refuse a locked-out email or client before any
 * hashing is spent.
 */
export async function principalFromPassword(db: Database, email: string, password: string, gate: PasswordGate): Promise<Principal | undefined> {
  return cachedLookup(`password:${await sha256Hex(`${email}\u0000${password}`)}`, async () => {
    await gate.admit();
    let principal: Principal | undefined;
    try {
      principal = await verifiedUser(db, email, password);
    } catch (error) {
      // The check never ran (the database failed): it is not a failure of the client's.
      await gate.withdraw().catch(() => undefined);
      throw error;
    }
    if (principal) await gate.succeeded();
    return principal;
  });
}

async function verifiedUser(db: Database, email: string, password: string): Promise<Principal | undefined> {
  const [row] = await db.select().from(users).where(eq(users.email, email.toLowerCase())).limit(1);
  if (!row) {
    // Spend the same PBKDF2 work as for a wrong password, so timing does not reveal which
    // emails have accounts.
    await verifyPassword(password, await unknownUserHash());
    return undefined;
  }
  const ok = await verifyPassword(password, { hash: row.passwordHash, salt: row.passwordSalt, iterations: row.passwordIterations });
  return ok ? { userId: row.id, organizationId: row.organizationId, role: row.role, email: row.email } : undefined;
}
