import { sign, verify } from "hono/jwt";
import { database } from "../db/client";
import type { Env } from "../env";
import type { Principal } from "../http/app-env";
import { principalOfUser } from "./principal-store";
import { signingSecret } from "./token-secret";

const DEFAULT_TTL_SECONDS = 24 * 60 * 60;

export interface IssuedToken {
  access_token: string;
  token_type: "bearer";
  expires_in: number;
}

export function tokenLifetime(env: Env): number {
  const configured = Number(env.TOKEN_TTL_SECONDS);
  return Number.isFinite(configured) && configured >= 3600 ? configured : DEFAULT_TTL_SECONDS;
}

/**
 * Bearer tokens are HS256 JWTs naming the user, organization and role at login. Each use also
 * checks that the user still exists in that organization, and takes the role the user has now
 * (cached per isolate for a minute, like API keys): removing a user or changing a role takes
 * effect within a minute, not when the token expires.
 */
export async function issueToken(env: Env, principal: Principal): Promise<IssuedToken> {
  const secret = signingSecret(env.TOKEN_SECRET);
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
  return { access_token: await sign(payload, secret, "HS256"), token_type: "bearer", expires_in: ttl };
}

/** The signed claims of a token, or undefined when it is forged, malformed or expired. */
async function verifiedClaims(env: Env, token: string): Promise<{ sub: string; org: string } | undefined> {
  // Outside the try: a secret that must not be trusted is the server's fault (503), not the token's.
  const secret = signingSecret(env.TOKEN_SECRET);
  try {
    const payload = await verify(token, secret, "HS256");
    const { sub, org, role, email, exp } = payload as Record<string, unknown>;
    // `verify` accepts a token without `exp`; every token we issue has one, so one without it
    // was not issued by us and must not live for ever.
    if (typeof exp !== "number") return undefined;
    if (typeof sub !== "string" || typeof org !== "string" || typeof email !== "string") return undefined;
    if (role !== "admin" && role !== "member") return undefined;
    return { sub, org };
  } catch {
    return undefined;
  }
}

/** The principal a token names: undefined when the token is invalid or its user is gone. */
export async function principalFromToken(env: Env, token: string): Promise<Principal | undefined> {
  const claims = await verifiedClaims(env, token);
  if (!claims) return undefined;
  const user = await principalOfUser(database(env.DB), claims.sub);
  return user && user.organizationId === claims.org ? user : undefined;
}
