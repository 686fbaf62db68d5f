import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "./app-env";
import { validationResponse } from "./errors";

/** Every response carries `x-request-id` (the caller's, if it sent a sane one). */
export const requestId: MiddlewareHandler<AppEnv> = async (c, next) => {
  const incoming = c.req.header("x-request-id");
  const id = incoming && /^[\w.-]{1,128}$/.test(incoming) ? incoming : crypto.randomUUID();
  c.set("requestId", id);
  await next();
  c.header("x-request-id", id);
};

const JSON_MEDIA_TYPE = /^application\/([\w.-]+\+)?json$/i;
const METHODS_WITH_BODY = new Set(["POST", "PUT", "PATCH"]);

/**
 * Parses a JSON body once, before any route: malformed JSON is a 422 `json_invalid` (FastAPI's
 * answer) rather than Hono's 400, and an empty body counts as `{}` so a missing field is reported
 * by name. Routes then read the parsed body from Hono's cache.
 */
export const jsonBody: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (!METHODS_WITH_BODY.has(c.req.method)) return next();
  const mediaType = (c.req.header("content-type") ?? "").split(";")[0]?.trim() ?? "";
  if (!JSON_MEDIA_TYPE.test(mediaType)) return next();
  const text = await c.req.text();
  if (text.trim() === "") {
    (c.req.bodyCache as Record<string, unknown>).text = Promise.resolve("{}");
    return next();
  }
  try {
    JSON.parse(text);
  } catch (error) {
    return validationResponse(c, [
      {
        loc: ["body", 0],
        msg: "JSON decode error",
        type: "json_invalid",
        input: {},
        ctx: { error: error instanceof Error ? error.message : "invalid JSON" },
      },
    ]);
  }
  return next();
};
