/**
 * Reads a route's request body within its cap (body-limits.ts), once, and checks JSON before any
 * validator sees it. createRouter puts this middleware in front of the validators of every route
 * that declares a body, after the router's own middleware: on the protected router that is after
 * `authenticate`, so nothing of the body is read for a caller without valid credentials.
 *
 * The bytes read are left in Hono's body cache, so the validators, the 422 echo and the handlers
 * all read them from there and the stream is never read a second time.
 */
import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv } from "./app-env";
import { type BodyLimit, bodyLimitFor, formatBytes } from "./body-limits";
import { ApiError, validationResponse } from "./errors";
import { jsonShape } from "./json-shape";
import { isJsonMediaType } from "./media-type";
import { toValidationErrors } from "./validation-errors";

/**
 * Deepest JSON nesting a body may have. Validating recursive schemas (spans nested in spans) costs
 * stack per level and overflowed near 1,600 levels; 512 levels (about 250 nested spans) is far
 * beyond any real trace. Pydantic's JSON parser refuses deep bodies the same way (json_invalid).
 */
export const MAX_JSON_DEPTH = 512;

const METHODS_WITH_BODY = new Set(["POST", "PUT", "PATCH"]);

export function bodyTooLarge(limit: BodyLimit): ApiError {
  return new ApiError(
    413,
    `Request body too large: ${limit.route} accepts at most ${limit.bytes} bytes (${formatBytes(limit.bytes)}). Send fewer or smaller records per request.`,
  );
}

/**
 * The whole body, or undefined as soon as more than `cap` bytes have arrived (the rest is left
 * unread, the stream released: the entry point drains a request's body up to a bound before the
 * 413 goes out, src/http/drain-request-body.ts). Also the OTLP intake's reader (src/otlp/read-body.ts).
 */
export async function readWithin(body: ReadableStream<Uint8Array> | null, cap: number): Promise<Uint8Array | undefined> {
  if (body === null) return new Uint8Array(0);
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > cap) {
      reader.releaseLock();
      return undefined;
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0]!;
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

export function tooManyValues(limit: BodyLimit): ApiError {
  return new ApiError(
    413,
    `Request body too large: ${limit.route} accepts at most ${limit.values} JSON values (objects, arrays, strings, numbers, booleans and nulls, at any depth). Split the batch into smaller requests.`,
  );
}

/**
 * Bodies with more values than this are first validated with zod's `abortEarly`: zod keeps every
 * issue it finds (about 1.2 KB each), so 300,000 wrong values would hold 360 MB (and overflow the
 * stack near 120,000) before any answer. Such a body's 422 names its first faults only; a smaller
 * body's names them all, as FastAPI does.
 */
export const FULL_REPORT_VALUES = 10_000;

interface ParseResult {
  success: boolean;
  error?: { issues: readonly unknown[] };
}

interface EarlyParser {
  safeParseAsync(data: unknown, params?: { abortEarly?: boolean }): Promise<ParseResult>;
}

/**
 * The early validation's result for a valid body, by the parsed body it validated, until the
 * route's validator asks for it. A valid body of more than FULL_REPORT_VALUES values is so
 * validated once, not twice (a 1 MB ingest spends about as long in zod as in everything else).
 */
const earlyResults = new WeakMap<object, ParseResult>();
const reusingSchemas = new WeakSet<object>();

/**
 * Makes `schema.safeParseAsync(body)` without options (how @hono/zod-validator, behind the
 * route's validator, calls it) answer the early validation's result for `body` when there is one,
 * once. A successful validation with `abortEarly` is the same as one without: the option only
 * stops a validation at its first fault. Any other call validates as before.
 */
function reuseEarlyResults(schema: EarlyParser): void {
  if (reusingSchemas.has(schema)) return;
  reusingSchemas.add(schema);
  const validate = schema.safeParseAsync.bind(schema);
  schema.safeParseAsync = (data, params) => {
    const early = params === undefined && typeof data === "object" && data !== null ? earlyResults.get(data) : undefined;
    if (early === undefined) return validate(data, params);
    earlyResults.delete(data as object);
    return Promise.resolve(early);
  };
}

/** Where JSON.parse stopped ("... at position 13 ...", or the end), as FastAPI puts it in `loc`. */
function errorPosition(message: string, text: string): number {
  const match = /at position (\d+)/.exec(message);
  if (match) return Number(match[1]);
  return /end of JSON input/i.test(message) ? text.length : 0;
}

type BodyCache = Record<string, Promise<unknown>>;

/**
 * Malformed JSON is a 422 `json_invalid` (FastAPI's answer) rather than Hono's 400, and an empty
 * body counts as `{}` so that a missing field is reported by name.
 */
function checkJson(c: Context<AppEnv>, bytes: Uint8Array, limit: BodyLimit): Response | { values: number } {
  // Counted on the bytes before anything is decoded or built: past the cap, the body is refused.
  const shape = jsonShape(bytes, limit.values, MAX_JSON_DEPTH);
  if (shape.over === "values") throw tooManyValues(limit);
  if (shape.over === "depth") {
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
  const text = new TextDecoder().decode(bytes);
  const cache = c.req.bodyCache as BodyCache;
  if (text.trim() === "") {
    cache.text = Promise.resolve("{}");
    return { values: 0 };
  }
  cache.text = Promise.resolve(text);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    const message = error instanceof Error ? error.message : "invalid JSON";
    return validationResponse(c, [
      { loc: ["body", errorPosition(message, text)], msg: "JSON decode error", type: "json_invalid", input: {}, ctx: { error: message } },
    ]);
  }
  // Parsed once: Hono's `c.req.json()` would parse the cached text again (for the validator, then
  // for a 422's echo), which for a 10 MiB ingest doubles the CPU and the peak memory. Nothing
  // mutates the parsed value (zod builds its output anew).
  Object.defineProperty(c.req, "json", { value: () => Promise.resolve(parsed), configurable: true });
  return { values: shape.values };
}

/**
 * The body middleware of a route whose JSON body `schema` validates (undefined: no JSON schema).
 * A body of more than FULL_REPORT_VALUES values that is invalid is answered here, from its first
 * faults; a valid one goes on to the route's validator, which takes this validation's result.
 */
export const boundedBody = (schema?: unknown): MiddlewareHandler<AppEnv> => {
  const parser = typeof (schema as EarlyParser | undefined)?.safeParseAsync === "function" ? (schema as EarlyParser) : undefined;
  if (parser) reuseEarlyResults(parser);
  return async (c, next) => {
    if (!METHODS_WITH_BODY.has(c.req.method)) return next();
    const limit = bodyLimitFor(c.req.method, c.req.routePath);
    const declared = c.req.header("content-length");
    if (declared !== undefined && Number(declared) > limit.bytes) throw bodyTooLarge(limit);
    const bytes = await readWithin(c.req.raw.body, limit.bytes);
    if (bytes === undefined) throw bodyTooLarge(limit);
    if (isJsonMediaType(c.req.header("content-type"))) {
      const checked = checkJson(c, bytes, limit);
      if (checked instanceof Response) return checked;
      if (checked.values > FULL_REPORT_VALUES && parser) {
        const input = await c.req.json();
        const early = await parser.safeParseAsync(input, { abortEarly: true });
        if (!early.success) return validationResponse(c, toValidationErrors("body", (early.error?.issues ?? []) as never, input));
        if (typeof input === "object" && input !== null) earlyResults.set(input, early);
      }
    } else {
      (c.req.bodyCache as BodyCache).arrayBuffer = Promise.resolve(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
    }
    return next();
  };
};
