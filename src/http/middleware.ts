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

/**
 * Deepest JSON nesting a body may have. Validating recursive schemas (spans nested in spans) costs
 * stack per level and overflowed near 1,600 levels; 512 levels (about 250 nested spans) is far
 * beyond any real trace. Pydantic's JSON parser refuses deep bodies the same way (json_invalid).
 */
export const MAX_JSON_DEPTH = 512;

/** Nesting depth of a parsed JSON value, computed without recursion. */
function jsonDepth(value: unknown): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop()!;
    if (current === null || typeof current !== "object") continue;
    if (depth > deepest) deepest = depth;
    if (deepest > MAX_JSON_DEPTH) return deepest;
    for (const child of Object.values(current)) stack.push([child, depth + 1]);
  }
  return deepest;
}

/** Where JSON.parse stopped ("... at position 13 ...", or the end), as FastAPI puts it in `loc`. */
function errorPosition(message: string, text: string): number {
  const match = /at position (\d+)/.exec(message);
  if (match) return Number(match[1]);
  return /end of JSON input/i.test(message) ? text.length : 0;
}

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
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    const message = error instanceof Error ? error.message : "invalid JSON";
    return validationResponse(c, [
      { loc: ["body", errorPosition(message, text)], msg: "JSON decode error", type: "json_invalid", input: {}, ctx: { error: message } },
    ]);
  }
  if (jsonDepth(parsed) > MAX_JSON_DEPTH) {
    return validationResponse(c, [
      {
        loc: ["body"],
        msg: "JSON decode error",
        type: "json_invalid",
        input: {},
        ctx: { error: `recursion limit exceeded: JSON nested deeper than ${MAX_JSON_DEPTH} levels` },
      },
    ]);
  }
  return next();
};
