/**
 * Resolves credentials to principals. Results are cached in the isolate for at most
 * CACHE_TTL_MS, so that a client sending the same key, password or token on every request pays
 * one database read per 5 s, not one per request; and so that a revoked key, a deleted user, a
 * changed role, a reset password or a logged-out token stops working (or changes) within 5 s on
 * every isolate (issue 19 point 10).
 *
 * A password already verified against the user's current hash is not verified again (no PBKDF2,
 * no brute-force guard) when its cache entry ends: the user's row is read again and the pair
 * still counts while the stored hash is the one it was verified against, for VERIFIED_TTL_MS.
 */
import { eq, sql } from "drizzle-orm";
import type { Database } from "../db/client";
import { apiKeys, users } from "../db/schema";
import type { Principal } from "../http/app-env";
import type { PasswordGate } from "../limits/password-attempts";
import { hashApiKey } from "./api-keys";
import { sha256Hex } from "./crypto";
import { type PasswordHash, hashPassword, verifyPassword } from "./passwords";

/** How stale a credential's principal may be: the revocation delay the contract promises. */
export const CACHE_TTL_MS = 5_000;
const VERIFIED_TTL_MS = 60_000;
const CACHE_MAX_ENTRIES = 10_000;

/** A principal with what a token issued to it must carry (tokens.ts). */
export interface Credential {
  principal: Principal;
  tokenGeneration: number;
  /** The API key presented, when the credential was one. */
  apiKeyId?: string;
}

class ExpiringMap<V> {
  private readonly entries = new Map<string, { value: V; expiresAt: number }>();
  constructor(private readonly ttlMs: number) {}

  get(key: string): V | undefined {
    const hit = this.entries.get(key);
    if (!hit) return undefined;
    if (hit.expiresAt < Date.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return hit.value;
  }

  set(key: string, value: V): V {
    if (this.entries.size >= CACHE_MAX_ENTRIES) this.entries.clear();
    this.entries.set(key, { value, expiresAt: Date.now() + this.ttlMs });
    return value;
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }
}

const cache = new ExpiringMap<Credential>(CACHE_TTL_MS);
/** Email-and-password pairs verified by PBKDF2, by the stored hash they matched. */
const verifiedPasswords = new ExpiringMap<string>(VERIFIED_TTL_MS);

/** Forget every cached credential (tests that revoke or re-create users). */
export function clearPrincipalCache(): void {
  cache.clear();
  verifiedPasswords.clear();
}

/** Forget one token at once in this isolate (logout); other isolates follow within CACHE_TTL_MS. */
export function forgetToken(tokenId: string): void {
  cache.delete(`token:${tokenId}`);
}

/** The columns of `users` a credential is made of. */
const CREDENTIAL_COLUMNS = {
  userId: users.id,
  organizationId: users.organizationId,
  role: users.role,
  email: users.email,
  tokenGeneration: users.tokenGeneration,
};

type CredentialRow = { userId: string; organizationId: string; role: "admin" | "member"; email: string; tokenGeneration: number };

function credentialOf(row: CredentialRow, apiKeyId?: string): Credential {
  const { tokenGeneration, ...principal } = row;
  return { principal, tokenGeneration, ...(apiKeyId ? { apiKeyId } : {}) };
}

/** A cached credential, or the one `load` finds (remembered), or undefined (not remembered). */
async function cachedLookup(cacheKey: string, load: () => Promise<Credential | undefined>): Promise<Credential | undefined> {
  const hit = cache.get(cacheKey);
  if (hit) return hit;
  const found = await load();
  return found ? cache.set(cacheKey, found) : undefined;
}

export async function principalFromApiKey(db: Database, key: string): Promise<Credential | undefined> {
  const keyHash = await hashApiKey(key);
  return cachedLookup(`key:${keyHash}`, async () => {
    const [row] = await db
      .select({ ...CREDENTIAL_COLUMNS, apiKeyId: apiKeys.id })
      .from(apiKeys)
      .innerJoin(users, eq(users.id, apiKeys.userId))
      .where(eq(apiKeys.keyHash, keyHash))
      .limit(1);
    if (!row) return undefined;
    const { apiKeyId, ...user } = row;
    return credentialOf(user, apiKeyId);
  });
}

/**
 * The user a bearer token names, as the database has it now (role included), or undefined when
 * the token must not be honoured: its user is gone or moved, it was logged out, the user's
 * password was reset after it was issued, or the API key it was exchanged from was revoked. One
 * read (the same one the user lookup always cost), cached per token for CACHE_TTL_MS.
 */
export async function principalOfToken(db: Database, claims: { sub: string; org: string; jti: string; gen: number; kid?: string }): Promise<Principal | undefined> {
  const found = await cachedLookup(`token:${claims.jti}`, async () => {
    const [row] = await db
      .select({
        ...CREDENTIAL_COLUMNS,
        revoked: sql<number>`EXISTS (SELECT 1 FROM revoked_tokens WHERE id = ${claims.jti})`,
        // `users.id` spelled out: drizzle renders a column of the only table unqualified, which
        // inside this subquery would name api_keys.id.
        keyAlive: sql<number>`${claims.kid ?? null} IS NULL OR EXISTS (SELECT 1 FROM api_keys WHERE id = ${claims.kid ?? null} AND user_id = users.id)`,
      })
      .from(users)
      .where(eq(users.id, claims.sub))
      .limit(1);
    if (!row || row.revoked || !row.keyAlive || row.tokenGeneration !== claims.gen || row.organizationId !== claims.org) return undefined;
    return credentialOf(row);
  });
  return found?.principal;
}

let unknownUserHashPromise: Promise<PasswordHash> | undefined;

/** A hash no password matches (random, made once per isolate), verified against for unknown emails. */
function unknownUserHash(): Promise<PasswordHash> {
  unknownUserHashPromise ??= hashPassword(crypto.randomUUID());
  return unknownUserHashPromise;
}

/**
 * The user an email and password name. A pair that was right within the last 5 s is served from
 * the cache; one verified within the last minute against the hash the user still has costs a
 * read; any other is verified (PBKDF2) only once `gate` admits it: the brute-force limits
 * (src/limits/password-attempts.ts) refuse a locked-out email or client before any hashing is
 * spent.
 */
export async function principalFromPassword(db: Database, email: string, password: string, gate: PasswordGate): Promise<Credential | undefined> {
  const pairKey = `password:${await sha256Hex(`${email}\u0000${password}`)}`;
  return cachedLookup(pairKey, async () => {
    const verifiedHash = verifiedPasswords.get(pairKey);
    if (verifiedHash !== undefined) {
      const current = await userByEmail(db, email);
      if (current && current.passwordHash === verifiedHash) return credentialOf(current);
    }
    await gate.admit();
    let row: UserRow | undefined;
    let ok: boolean;
    try {
      row = await userByEmail(db, email);
      ok = await verifiedAgainst(row, password);
    } catch (error) {
      // The check never ran: it is not a failure of the client's.
      await gate.withdraw().catch(() => undefined);
      throw error;
    }
    if (!ok || !row) return undefined;
    await gate.succeeded();
    verifiedPasswords.set(pairKey, row.passwordHash);
    return credentialOf(row);
  });
}

type UserRow = CredentialRow & { passwordHash: string; passwordSalt: string; passwordIterations: number };

async function userByEmail(db: Database, email: string): Promise<UserRow | undefined> {
  const [row] = await db
    .select({ ...CREDENTIAL_COLUMNS, passwordHash: users.passwordHash, passwordSalt: users.passwordSalt, passwordIterations: users.passwordIterations })
    .from(users)
    .where(eq(users.email, email.toLowerCase()))
    .limit(1);
  return row;
}

async function verifiedAgainst(row: UserRow | undefined, password: string): Promise<boolean> {
  if (!row) {
    // Spend the same PBKDF2 work as for a wrong password, so timing does not reveal which
    // emails have accounts.
    await verifyPassword(password, await unknownUserHash());
    return false;
  }
  return verifyPassword(password, { hash: row.passwordHash, salt: row.passwordSalt, iterations: row.passwordIterations });
}
