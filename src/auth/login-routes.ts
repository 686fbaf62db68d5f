import { createRoute, z } from "@hono/zod-openapi";
import { database } from "../db/client";
import { ErrorDetail, HTTPValidationError, retryableErrorResponses } from "../http/common-schemas";
import type { Router } from "../http/create-router";
import { RequestValidationError } from "../http/errors";
import { isJsonMediaType } from "../http/media-type";
import { passwordGate } from "../limits/password-attempts";
import { toValidationErrors } from "../http/validation-errors";
import { unauthorized } from "./authenticate";
import { principalFromApiKey, principalFromPassword } from "./principal-store";
import { signingSecret } from "./token-secret";
import { issueToken } from "./tokens";

const TokenResponse = z
  .object({ access_token: z.string(), token_type: z.literal("bearer"), expires_in: z.number().int() })
  .openapi("Token");

const PasswordForm = z
  .object({
    username: z.string().min(1),
    password: z.string().min(1),
    grant_type: z.literal("password").optional(),
    scope: z.string().optional(),
  })
  .openapi("LoginForm");

const ApiKeyLogin = z.object({ api_key: z.string().min(1) }).openapi("ApiKeyLoginRequest");

const errors = {
  401: { content: { "application/json": { schema: ErrorDetail } }, description: "Bad credentials" },
  422: { content: { "application/json": { schema: HTTPValidationError } }, description: "Validation error" },
  ...retryableErrorResponses,
};

const passwordLogin = createRoute({
  method: "post",
  path: "/login",
  tags: ["Authentication"],
  summary: "Exchange email and password for a bearer token (OAuth2 password flow)",
  request: {
    body: {
      content: {
        "application/x-www-form-urlencoded": { schema: PasswordForm },
        "application/json": { schema: PasswordForm },
      },
      // Not `required`: with two media types, only the validator of the one sent must run.
      required: false,
    },
  },
  responses: { 200: { content: { "application/json": { schema: TokenResponse } }, description: "A bearer token" }, ...errors },
});

const apiKeyLogin = createRoute({
  method: "post",
  path: "/login/api_key",
  tags: ["Authentication"],
  summary: "Exchange an API key for a bearer token",
  request: { body: { content: { "application/json": { schema: ApiKeyLogin } }, required: true } },
  responses: { 200: { content: { "application/json": { schema: TokenResponse } }, description: "A bearer token" }, ...errors },
});

/** Mounted both at the root and under /v2 (a client whose base URL ends in /v2 logs in there). */
export function registerLogin(app: Router): void {
  app.openapi(passwordLogin, async (c) => {
    const contentType = c.req.header("content-type");
    // With an optional body and two media types, a request without a body reaches the handler
    // unvalidated: answer what FastAPI answers for an empty form (both fields missing).
    if (!contentType) throw new RequestValidationError(toValidationErrors("body", PasswordForm.safeParse({}).error?.issues ?? [], {}));
    // By the media type, as the validators decided: a form whose parameters mention "json" is a form.
    const form = isJsonMediaType(contentType) ? c.req.valid("json") : c.req.valid("form");
    // No password is checked (no PBKDF2 spent) when no token could be issued anyway.
    signingSecret(c.env.TOKEN_SECRET);
    const gate = passwordGate(c.env, form.username, c.req.header("CF-Connecting-IP"));
    const credential = await principalFromPassword(database(c.env.DB), form.username, form.password, gate);
    if (!credential) throw unauthorized("Incorrect username or password");
    return c.json(await issueToken(c.env, credential), 200);
  });

  app.openapi(apiKeyLogin, async (c) => {
    const { api_key } = c.req.valid("json");
    signingSecret(c.env.TOKEN_SECRET);
    const credential = await principalFromApiKey(database(c.env.DB), api_key.trim());
    if (!credential) throw unauthorized("Invalid API key");
    return c.json(await issueToken(c.env, credential), 200);
  });
}
