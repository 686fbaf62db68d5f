import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv } from "./app-env";
import { boundedBody } from "./bounded-body";
import { tooLargeResponse } from "./common-schemas";
import { validationResponse } from "./errors";
import { isJsonMediaType } from "./media-type";
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

/** What a route declares it validates, as @hono/zod-openapi's `createRoute` takes it. */
interface RouteRequest {
  params?: unknown;
  query?: unknown;
  headers?: unknown;
  body?: { content?: Record<string, { schema?: unknown }> };
}

interface SafeParser {
  safeParseAsync(data: unknown): Promise<{ success: boolean; error?: { issues: readonly unknown[] } }>;
}

const isSchema = (value: unknown): value is SafeParser => typeof (value as SafeParser | undefined)?.safeParseAsync === "function";

/**
 * The request's parts in FastAPI's order of reporting (path, query, headers, then the body), each
 * with the schema the route declares for it.
 */
function declaredTargets(request: RouteRequest | undefined): [string, SafeParser][] {
  const targets: [string, unknown][] = [
    ["param", request?.params],
    ["query", request?.query],
    ["header", request?.headers],
    ["json", request?.body?.content?.["application/json"]?.schema],
  ];
  return targets.filter((entry): entry is [string, SafeParser] => isSchema(entry[1]));
}

/**
 * A 422 lists every invalid part of the request, as FastAPI does: the validators run one target
 * at a time and stop at the first failure, so when one fails this checks the route's other
 * targets too. (Only when something is invalid: a valid request is validated once.)
 */
function validationHook(request: RouteRequest | undefined) {
  return async (result: { success: boolean; target: string; error?: { issues: readonly unknown[] } }, c: Context) => {
    if (result.success) return;
    const faultsOf = async (target: string, issues: readonly unknown[]) =>
      toValidationErrors(LOCATION_BY_TARGET[target] ?? "body", issues as never, await rawInput(c, target));
    const items = [];
    let reportedFailing = false;
    for (const [target, schema] of declaredTargets(request)) {
      if (target === result.target) {
        items.push(...(await faultsOf(target, result.error?.issues ?? [])));
        reportedFailing = true;
        continue;
      }
      // A form body (the login routes also take forms) is not read as JSON.
      if (target === "json" && !isJsonMediaType(c.req.header("content-type"))) continue;
      const input = await rawInput(c, target);
      if (input === undefined) continue;
      const other = await schema.safeParseAsync(input);
      if (!other.success) items.push(...toValidationErrors(LOCATION_BY_TARGET[target] ?? "body", (other.error?.issues ?? []) as never, input));
    }
    // A target the route declares otherwise (a form body) is reported on its own.
    if (!reportedFailing) items.push(...(await faultsOf(result.target, result.error?.issues ?? [])));
    return validationResponse(c, items);
  };
}

interface RouteConfig {
  request?: RouteRequest;
  middleware?: MiddlewareHandler | MiddlewareHandler[];
  responses?: Record<string, unknown>;
}

/**
 * A route that declares a body reads it through `boundedBody` (its cap, then the JSON checks),
 * after the route's own middleware and the router's (authentication), before any validator; its
 * document lists the 413 that cap answers.
 */
function withBoundedBody<R extends RouteConfig>(route: R): R {
  if (!route.request?.body) return route;
  const own = route.middleware === undefined ? [] : Array.isArray(route.middleware) ? route.middleware : [route.middleware];
  const schema = route.request.body.content?.["application/json"]?.schema;
  return { ...route, middleware: [...own, boundedBody(schema)], responses: { ...route.responses, ...tooLargeResponse } };
}

/**
 * Every router of the service: one validation hook, so every 422 has the same shape, and every
 * body read within its route's cap (body-limits.ts).
 */
export function createRouter() {
  const router = new OpenAPIHono<AppEnv>({ defaultHook: validationHook(undefined) as never });
  const register = router.openapi;
  // Each route gets a hook that knows the route's other targets (see validationHook).
  router.openapi = ((route: RouteConfig, handler: unknown, hook?: unknown) =>
    register(withBoundedBody(route) as never, handler as never, (hook ?? validationHook(route.request)) as never)) as typeof router.openapi;
  return router;
}

export type Router = ReturnType<typeof createRouter>;
