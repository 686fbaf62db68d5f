/**
 * `POST /v2/logout`: ends the bearer token it is called with, on every isolate within 5 s (the
 * credential cache's lifetime, principal-store.ts), at once on this one. The token's id is kept
 * in `revoked_tokens` until the token would have expired anyway; each logout also clears a few
 * ids whose tokens have expired, so the table stays as small as the set of live logged-out tokens.
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
      db.delete(revokedTokens).where(
        inArray(revokedTokens.id, db.select({ id: revokedTokens.id }).from(revokedTokens).where(lt(revokedTokens.expiresAt, now)).orderBy(revokedTokens.expiresAt).limit(EXPIRED_IDS_PER_LOGOUT)),
      ),
    ]);
    forgetToken(token.id);
    return c.body(null, 204);
  });
}
