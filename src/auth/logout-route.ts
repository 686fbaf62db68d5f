/**
 * `POST /v2/logout`: ends the bearer token it is called with, on every isolate within 5 s (the
 * credential cache's lifetime, principal-store.ts), at once on this one. The token's id is kept
 * in `revoked_tokens` until the token would have expired anyway; each logout also clears a few
 * ids whose tokens have expired, and the hourly maintenance clears the rest
 * (pruneExpiredRevocations), so the table stays as small as the set of live logged-out tokens.
 */
import { createRoute } from "@hono/zod-openapi";
import { inArray, lt } from "drizzle-orm";
import { database } from "../db/client";
import { revokedTokens } from "../db/schema";
import { commonErrorResponses, ErrorDetail } from "../http/common-schemas";
import type { Router } from "../http/create-router";
import { ApiError } from "../http/errors";
import { forgetToken } from "./principal-store";

/** Expired ids removed per logout: bounded work, more than one logout adds. */
const EXPIRED_IDS_PER_LOGOUT = 100;

/** Expired ids removed per statement of the hourly maintenance, and statements per run. */
const EXPIRED_IDS_PER_PRUNE = 5_000;
const PRUNES_PER_RUN = 20;

function deleteExpired(db: ReturnType<typeof database>, nowSeconds: number, limit: number) {
  return db.delete(revokedTokens).where(
    inArray(revokedTokens.id, db.select({ id: revokedTokens.id }).from(revokedTokens).where(lt(revokedTokens.expiresAt, nowSeconds)).orderBy(revokedTokens.expiresAt).limit(limit)),
  );
}

/**
 * Clears the ids of logged-out tokens that have expired since (an expired token is refused
 * anyway), up to 100,000 per run by the expiry index: the hourly maintenance calls it, so
 * organizations whose users rarely log out do not keep their ids for ever. Returns the count.
 */
export async function pruneExpiredRevocations(binding: D1Database, nowSeconds = Math.floor(Date.now() / 1000)): Promise<number> {
  const db = database(binding);
  let pruned = 0;
  for (let i = 0; i < PRUNES_PER_RUN; i++) {
    const result = await deleteExpired(db, nowSeconds, EXPIRED_IDS_PER_PRUNE);
    const changes = result.meta.changes ?? 0;
    pruned += changes;
    if (changes < EXPIRED_IDS_PER_PRUNE) break;
  }
  return pruned;
}

const logout = createRoute({
  method: "post",
  path: "/logout",
  tags: ["Authentication"],
  summary: "End the bearer token this request is made with",
  description:
    "The token stops working within 5 seconds everywhere. Only a bearer token can be logged out: API keys are revoked with the admin command line (`revoke-api-key`).",
  responses: {
    204: { description: "The token is ended" },
    400: { content: { "application/json": { schema: ErrorDetail } }, description: "The request was not made with a bearer token" },
    ...commonErrorResponses,
  },
});

export function registerLogout(app: Router): void {
  app.openapi(logout, async (c) => {
    const { token } = c.get("principal");
    if (!token) throw new ApiError(400, "Logout ends a bearer token: send it as Authorization: Bearer <token>. API keys are revoked with the admin command line.");
    const db = database(c.env.DB);
    const now = Math.floor(Date.now() / 1000);
    await db.batch([
      db.insert(revokedTokens).values({ id: token.id, expiresAt: token.expiresAt }).onConflictDoNothing(),
      deleteExpired(db, now, EXPIRED_IDS_PER_LOGOUT),
    ]);
    forgetToken(token.id);
    return c.body(null, 204);
  });
}
