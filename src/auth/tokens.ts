import { sign, verify } from "hono/jwt";
import { database } from "../db/client";
import type { Env } from "../env";
import type { Principal } from "../http/app-env";
import { type Credential, principalOfToken } from "./principal-store";
import { signingSecret } from "./token-secret";

const DEFAULT_TTL_SECONDS = 24 * 60 * 60;
/** The shortest lifetime the contract allows (section 2). */
const MIN_TTL_SECONDS = 60 * 60;
/**
 * The longest: a token is a credential nobody can see or list, so its lifetime is bounded even
 * though logout, key revocation and password resets can end it early.
 */
export const MAX_TTL_SECONDS = 7 * 24 * 60 * 60;

export interface IssuedToken {
  access_token: string;
  token_type: "bearer";
  expires_in: number;
}

/** TOKEN_TTL_SECONDS, at most 7 days; unset, not a number or under an hour: one day. */
export function tokenLifetime(env: Env): number {
  const configured = Number(env.TOKEN_TTL_SECONDS);
  if (!Number.isFinite(configured) || configured < MIN_TTL_SECONDS) return DEFAULT_TTL_SECONDS;
  return Math.min(MAX_TTL_SECONDS, Math.floor(configured));
}

/**
 * Bearer tokens are HS256 JWTs naming the user and organization, with an id (`jti`, what logout
 * ends), the user's token generation (`gen`, what a password reset moves on) and, when exchanged
 * from an API key, that key's id (`kid`). Each use checks all of them against the catalog
 * (principal-store.ts, at most 5 s stale per isolate) and takes the role the user has now.
 */
export async function issueToken(env: Env, subject: Credential): Promise<IssuedToken> {
  const secret = signingSecret(env.TOKEN_SECRET);
  const now = Math.floor(Date.now() / 1000);
  const ttl = tokenLifetime(env);
  const { principal } = subject;
  const payload = {
    sub: principal.userId,
    org: principal.organizationId,
    role: principal.role,
    email: principal.email,
    jti: crypto.randomUUID(),
    gen: subject.tokenGeneration,
    ...(subject.apiKeyId ? { kid: subject.apiKeyId } : {}),
    iat: now,
    exp: now + ttl,
  };
  return { access_token: await sign(payload, secret, "HS256"), token_type: "bearer", expires_in: ttl };
}

export interface TokenClaims {
  sub: string;
  org: string;
  jti: string;
  gen: number;
  kid?: string;
  exp: number;
}

/** The signed claims of a token, or undefined when it is forged, malformed or expired. */
async function verifiedClaims(env: Env, token: string): Promise<TokenClaims | undefined> {
  // Outside the try: a secret that must not be trusted is the server's fault (503), not the token's.
  const secret = signingSecret(env.TOKEN_SECRET);
  try {
    const payload = await verify(token, secret, "HS256");
    const { sub, org, role, email, exp, jti, gen, kid } = payload as Record<string, unknown>;
    // `verify` accepts a token without `exp`; every token we issue has one, so one without it
    // was not issued by us and must not live for ever. Likewise a token without an id could not
    // be logged out.
    if (typeof exp !== "number") return undefined;
    if (typeof sub !== "string" || typeof org !== "string" || typeof email !== "string") return undefined;
    if (typeof jti !== "string" || typeof gen !== "number" || (kid !== undefined && typeof kid !== "string")) return undefined;
    if (role !== "admin" && role !== "member") return undefined;
    return { sub, org, jti, gen, exp, ...(kid === undefined ? {} : { kid }) };
  } catch {
    return undefined;
  }
}

/**
 * The principal a token names, with the token's id and expiry (for logout): undefined when the
 * token is invalid, logged out, issued before its user's last password reset, exchanged from a
 * revoked key, or its user is gone.
 */
export async function principalFromToken(env: Env, token: string): Promise<Principal | undefined> {
  const claims = await verifiedClaims(env, token);
  if (!claims) return undefined;
  const principal = await principalOfToken(database(env.DB), claims);
  return principal ? { ...principal, token: { id: claims.jti, expiresAt: claims.exp } } : undefined;
}
