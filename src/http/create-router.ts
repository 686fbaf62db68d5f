import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "./app-env";
import { validationResponse } from "./errors";
import { type Location, toValidationErrors } from "./validation-errors";

const LOCATION_BY_TARGET: Record<string, Location> = {
  json: "body",
  form: "body",
  query: "query",
  param: "path",
  header: "header",
};

/** The raw input a validator saw, so a 422 can echo the offending `input` like Pydantic. */
async function rawInput(c: Context, target: string): Promise<unknown> {
  switch (target) {
    case "json":
      return c.req.json().catch(() => undefined);
    case "form":
      return c.req.parseBody().catch(() => undefined);
    case "query":
      return Object.fromEntries(Object.entries(c.req.queries()).map(([k, v]) => [k, v.length === 1 ? v[0] : v]));
    case "param":
      return c.req.param();
    case "header":
      return c.req.header();
    default:
      return undefined;
  }
}

/** Every router of the service: one validation hook, so every 422 has the same shape. */
export function createRouter() {
  return new OpenAPIHono<AppEnv>({
    defaultHook: async (result, c) => {
      if (result.success) return;
      const location = LOCATION_BY_TARGET[result.target] ?? "body";
      const items = toValidationErrors(location, result.error.issues, await rawInput(c, result.target));
      return validationResponse(c, items);
    },
  });
}

export type Router = ReturnType<typeof createRouter>;
