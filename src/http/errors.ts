/**
 * The one error vocabulary of the service. Handlers throw `ApiError` (a status and a detail
 * string) or `RequestValidationError` (422 items); `onError` turns everything into the contract's
 * bodies, and anything unexpected into a generic 500 logged with its request id only.
 */
import type { Context, ErrorHandler, NotFoundHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import { clientFaultFromDatabase, describeForLog, unavailability } from "./database-errors";
import type { ValidationErrorItem } from "./validation-errors";

export class ApiError extends Error {
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 409 | 410 | 413 | 429 | 500 | 503 | 507,
    readonly detail: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
    this.name = "ApiError";
  }
}

export const notFound = (what: string) => new ApiError(404, `${what} not found`);

export class RequestValidationError extends Error {
  constructor(readonly items: ValidationErrorItem[]) {
    super("request validation failed");
    this.name = "RequestValidationError";
  }
}

export function validationResponse(c: Context, items: ValidationErrorItem[]) {
  return c.json({ detail: items }, 422);
}

/**
 * The body as text, for a 422 that echoes what could not be read: only a body already read
 * within its cap (bounded-body.ts left it in Hono's cache), never the raw stream.
 */
async function rawBodyText(c: Context): Promise<string> {
  if (Object.keys(c.req.bodyCache).length === 0) return "";
  try {
    // Decoded here rather than by c.req.text(), which warns about bodies not labelled as text.
    return new TextDecoder().decode(await c.req.arrayBuffer());
  } catch {
    return "";
  }
}

export const onError: ErrorHandler = async (error, c) => {
  if (error instanceof RequestValidationError) return validationResponse(c, error.items);
  if (error instanceof ApiError) {
    for (const [name, value] of Object.entries(error.headers)) c.header(name, value);
    return c.json({ detail: error.detail }, error.status);
  }
  if (error instanceof HTTPException) {
    // Raised by Hono's own body parsing: a body that is not the declared media type. FastAPI
    // validates such a body as raw bytes, so its 422 echoes them as `input`.
    if (error.status === 415 || error.status === 400) {
      return validationResponse(c, [
        {
          loc: ["body"],
          msg: "Input should be a valid dictionary or object to extract fields from",
          type: "model_attributes_type",
          input: await rawBodyText(c),
        },
      ]);
    }
    return c.json({ detail: error.message || "request failed" }, error.status);
  }
  const clientFault = clientFaultFromDatabase(error);
  if (clientFault) return c.json({ detail: clientFault.detail }, clientFault.status);
  const requestId = c.get("requestId");
  const unavailable = unavailability(error);
  if (unavailable) {
    // Operators see outages; the log line names the kind, never the SQL or its values.
    console.warn(`request ${requestId}: database ${unavailable.what}, answered 503:`, describeForLog(error));
    c.header("Retry-After", String(unavailable.retryAfterSeconds));
    return c.json({ detail: `Database unavailable (${unavailable.what}); retry in ${unavailable.retryAfterSeconds} s.` }, 503);
  }
  // Only the request id and the error itself: never headers, bodies or credentials.
  console.error(`request ${requestId} failed:`, describeForLog(error));
  return c.json({ detail: `Internal server error (request id ${requestId})` }, 500);
};

export const notFoundHandler: NotFoundHandler = (c) => c.json({ detail: "Not Found" }, 404);
