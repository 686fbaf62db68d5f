/**
 * The request rate of each organization (issue 9, point 8): every authenticated request counts
 * against its organization in Workers' rate-limiting binding (`ORG_RATE_LIMITER`, `[[ratelimits]]`
 * in wrangler.toml); past the limit, 429 with `Retry-After` before anything else is done (the
 * body is not even read).
 *
 * The binding counts per Cloudflare location in fixed windows of `period` seconds, without a
 * network hop: a cheap check for every request, approximate by design (docs/limits.md).
 */
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../http/app-env";
import { ApiError } from "../http/errors";

/** `simple.period` of ORG_RATE_LIMITER in wrangler.toml (test/limits-config.test.ts keeps them equal). */
export const ORG_RATE_PERIOD_SECONDS = 10;

export const organizationRate: MiddlewareHandler<AppEnv> = async (c, next) => {
  const { success } = await c.env.ORG_RATE_LIMITER.limit({ key: c.get("principal").organizationId });
  if (!success) {
    throw new ApiError(429, `Too many requests for this organization; retry in ${ORG_RATE_PERIOD_SECONDS} s.`, {
      "Retry-After": String(ORG_RATE_PERIOD_SECONDS),
    });
  }
  await next();
};
