import type { MiddlewareHandler } from "hono";
import { database } from "../db/client";
import type { AppEnv, Principal } from "../http/app-env";
import { ApiError } from "../http/errors";
import { passwordGate } from "../limits/password-attempts";
import { API_KEY_PREFIX } from "./api-keys";
import { principalFromApiKey, principalFromPassword } from "./principal-store";
import { principalFromToken } from "./tokens";

/**
 * A 401 offers `Bearer`, and `Basic` only to a request that tried Basic: a browser that meets
 * `Basic` in a 401 asks the user for a password and then sends it on its own to every later
 * request to this origin, those another site makes it send included.
 */
export function unauthorized(detail: string, sentBasic = false): ApiError {
  return new ApiError(401, detail, { "WWW-Authenticate": sentBasic ? 'Bearer realm="trace-store", Basic realm="trace-store"' : 'Bearer realm="trace-store"' });
}

function decodeBasic(encoded: string): { email: string; password: string } | undefined {
  try {
    const bytes = Uint8Array.from(atob(encoded), (ch) => ch.charCodeAt(0));
    const decoded = new TextDecoder().decode(bytes);
    const colon = decoded.indexOf(":");
    if (colon <= 0) return undefined;
    return { email: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
  } catch {
    return undefined;
  }
}

/**
 * Accepts any one of the four schemes of the contract (section 2). The first credential present
 * decides: a wrong API key is a 401 even if a valid token is also sent.
 */
async function resolvePrincipal(c: Parameters<MiddlewareHandler<AppEnv>>[0]): Promise<Principal> {
  const apiKey = c.req.header("Service-API-Key") ?? c.req.header("Alt-AO-API-Key");
  if (apiKey !== undefined) {
    const credential = await principalFromApiKey(database(c.env.DB), apiKey.trim());
    if (!credential) throw unauthorized("Invalid API key");
    return credential.principal;
  }
  const authorization = c.req.header("Authorization");
  if (authorization) {
    const [scheme = "", ...rest] = authorization.trim().split(/\s+/);
    const credentials = rest.join(" ");
    if (scheme.toLowerCase() === "bearer" && credentials) {
      // Clients that can set only this header (OpenTelemetry exporters) send an API key here: our
      // keys start with `tsk_`, which no JWT (three dot-separated base64url parts) does.
      if (credentials.startsWith(API_KEY_PREFIX)) {
        const credential = await principalFromApiKey(database(c.env.DB), credentials);
        if (!credential) throw unauthorized("Invalid API key");
        return credential.principal;
      }
      const principal = await principalFromToken(c.env, credentials);
      if (!principal) throw unauthorized("Invalid or expired token");
      return principal;
    }
    if (scheme.toLowerCase() === "basic" && credentials) {
      const basic = decodeBasic(credentials);
      const credential =
        basic && (await principalFromPassword(database(c.env.DB), basic.email, basic.password, passwordGate(c.env, basic.email, c.req.header("CF-Connecting-IP"))));
      if (!credential) throw unauthorized("Invalid username or password", true);
      return credential.principal;
    }
    throw unauthorized("Unsupported authorization scheme");
  }
  throw unauthorized("Not authenticated");
}

export const authenticate: MiddlewareHandler<AppEnv> = async (c, next) => {
  c.set("principal", await resolvePrincipal(c));
  await next();
};

/** For routes reserved to organization administrators. */
export function requireAdmin(principal: Principal): void {
  if (principal.role !== "admin") throw new ApiError(403, "This operation requires an organization admin");
}

/**
 * A route's middleware for admin-only operations (documented with `adminOnlyResponse`): runs
 * before body validation, so a member learns nothing but "not allowed".
 */
export const adminOnly: MiddlewareHandler<AppEnv> = async (c, next) => {
  requireAdmin(c.get("principal"));
  await next();
};
