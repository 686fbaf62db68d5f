import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "./app-env";

/** Every response carries `x-request-id` (the caller's, if it sent a sane one). */
export const requestId: MiddlewareHandler<AppEnv> = async (c, next) => {
  const incoming = c.req.header("x-request-id");
  const id = incoming && /^[\w.-]{1,128}$/.test(incoming) ? incoming : crypto.randomUUID();
  c.set("requestId", id);
  await next();
  c.header("x-request-id", id);
};
