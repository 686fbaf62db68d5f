import { z } from "@hono/zod-openapi";

/**
 * A UUID as Pydantic accepts it (any version, any case), normalised to lower case. A malformed
 * one is a 422 `uuid_parsing`.
 */
export const Uuid = z
  .guid()
  .transform((s) => s.toLowerCase())
  .openapi({ type: "string", format: "uuid", example: "5b2c3a1e-8f4d-4e6a-9c1b-2d3e4f5a6b7c" });

export const ProjectIdParam = z.object({
  project_id: Uuid.openapi({ param: { name: "project_id", in: "path" } }),
});

export const ErrorDetail = z.object({ detail: z.string() }).openapi("ErrorDetail");

export const ValidationErrorItem = z
  .object({
    loc: z.array(z.union([z.string(), z.number()])),
    msg: z.string(),
    type: z.string(),
    input: z.any().optional(),
    ctx: z.record(z.string(), z.any()).optional(),
  })
  .openapi("ValidationError");

export const HTTPValidationError = z
  .object({ detail: z.array(ValidationErrorItem) })
  .openapi("HTTPValidationError");

const json = <T extends z.ZodType>(schema: T, description: string) => ({
  content: { "application/json": { schema } },
  description,
});

const retryAfter = {
  "Retry-After": {
    description: "Seconds to wait before sending the request again.",
    schema: { type: "integer" as const, minimum: 1 },
  },
};

/** 429 and 503: both say when to come back (docs/limits.md). */
export const retryableErrorResponses = {
  429: {
    ...json(ErrorDetail, "Too many requests: the organization's request rate, its concurrent scan-class searches, or failed password checks (per email and per client IP) are over their limits. Nothing was done; retry after `Retry-After` seconds."),
    headers: retryAfter,
  },
  503: {
    ...json(ErrorDetail, "The database is briefly unavailable (overloaded, restarting, busy or unreachable): nothing was done; retry after `Retry-After` seconds. Also: bearer tokens when the server's token secret is not configured."),
    headers: retryAfter,
  },
} as const;

/** What a route with a body answers when the body is over its cap (src/http/body-limits.ts). */
export const tooLargeResponse = {
  413: json(ErrorDetail, "The request body is larger than this route accepts (the message gives the cap; docs/limits.md). Nothing of it was parsed or stored."),
} as const;

/** The answer of a route reserved to organization admins (`adminOnly`) to anyone else. */
export const adminOnlyResponse = {
  403: json(ErrorDetail, "The caller is not an organization admin"),
} as const;

/** Error answers every authenticated route can give; spread into each route's `responses`. */
export const commonErrorResponses = {
  401: json(ErrorDetail, "Missing or invalid credentials"),
  404: json(ErrorDetail, "Not found, or not in the caller's organization"),
  422: json(HTTPValidationError, "Validation error"),
  ...retryableErrorResponses,
} as const;

/** A boolean query parameter as FastAPI reads it: true/false, 1/0, yes/no, on/off; else bool_parsing. */
export function queryBoolean(defaultValue: boolean) {
  const TRUE = new Set(["true", "1", "yes", "on", "t", "y"]);
  const FALSE = new Set(["false", "0", "no", "off", "f", "n"]);
  return z
    .string()
    .optional()
    .transform((raw, ctx) => {
      if (raw === undefined) return defaultValue;
      const v = raw.trim().toLowerCase();
      if (TRUE.has(v)) return true;
      if (FALSE.has(v)) return false;
      ctx.addIssue({
        code: "custom",
        message: "invalid boolean",
        params: { pydantic: { type: "bool_parsing", msg: "Input should be a valid boolean, unable to interpret input" } },
      });
      return z.NEVER;
    })
    .openapi({ type: "boolean", default: defaultValue });
}
