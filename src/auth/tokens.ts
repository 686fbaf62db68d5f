import { sign, verify } from "hono/jwt";
import type { Env } from "../env";
import type { Principal } from "../http/app-env";

const DEFAULT_TTL_SECONDS = 24 * 60 * 60;

export interface IssuedToken {
  access_token: string;
  token_type: "bearer";
  expires_in: number;
}

function secretOf(env: Env): string {
  if (!env.TOKEN_SECRET) throw new Error("TOKEN_SECRET is not configured");
  return env.TOKEN_SECRET;
}

export function tokenLifetime(env: Env): number {
  const configured = Number(env.TOKEN_TTL_SECONDS);
  return Number.isFinite(configured) && configured >= 3600 ? configured : DEFAULT_TTL_SECONDS;
}

/**
 * Bearer tokens are self-contained HS256 JWTs: verifying one needs no database round trip. The
 * price: a token outlives the removal of its user until it expires (at least one hour).
 */
export async function issueToken(env: Env, principal: Principal): Promise<IssuedToken> {
  const now = Math.floor(Date.now() / 1000);
  const ttl = tokenLifetime(env);
  const payload = {
    sub: principal.userId,
    org: principal.organizationId,
    role: principal.role,
    email: principal.email,
    iat: now,
    exp: now + ttl,
  };
  return { access_token: await sign(payload, secretOf(env), "HS256"), token_type: "bearer", expires_in: ttl };
}

/** The principal a token names, or undefined when it is forged, malformed or expired. */
export async function principalFromToken(env: Env, token: string): Promise<Principal | undefined> {
  try {
    const payload = await verify(token, secretOf(env), "HS256");
    const { sub, org, role, email, exp } = payload as Record<string, unknown>;
    // `verify` accepts a token without `exp`; every token we issue has one, so one without it
    // was not issued by us and must not live for ever.
    if (typeof exp !== "number") return undefined;
    if (typeof sub !== "string" || typeof org !== "string" || typeof email !== "string") return undefined;
    if (role !== "admin" && role !== "member") return undefined;
    return { userId: sub, organizationId: org, role, email };
  } catch {
    return undefined;
  }
}
