/**
 * Which answer a path gets (contract section 17):
 * - every API route under `/v2/X` also answers at `/X`, with the same authentication and answer
 *   (Galileo's own clients call root paths: its Python SDK's generated client always does, whatever
 *   base URL it is given);
 * - a browser navigation to any other root path gets the trace explorer's page, which routes in the
 *   browser (its paths, such as `/projects/<id>/...`, are page paths, not API calls);
 * - everything else that is no route is a JSON 404 `{"detail": "Not Found"}`, whoever asks and
 *   before any credential is looked at: never the page with a 200, which an SDK would take for a
 *   service (`/ingest/healthz`, Galileo's separate ingest service, is not ours).
 */
import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv } from "./app-env";
import { isBrowserNavigation } from "./browser-navigation";
import { type ListedRoute, RouteTable } from "./route-table";
import { EXPLORER_HEADERS } from "./security-headers";

type Dispatch = (request: Request, env: AppEnv["Bindings"], ctx?: Context<AppEnv>["executionCtx"]) => Response | Promise<Response>;

const API_PREFIX = "/v2";

const underApiPrefix = (path: string) => path === API_PREFIX || path.startsWith(`${API_PREFIX}/`);

const notFoundAnswer = (c: Context<AppEnv>) => c.json({ detail: "Not Found" }, 404);

function executionContext(c: Context<AppEnv>): Context<AppEnv>["executionCtx"] | undefined {
  try {
    return c.executionCtx;
  } catch {
    // Not inside a Worker invocation (app.request in a script): nothing to keep alive.
    return undefined;
  }
}

function withExplorerHeaders(response: Response): Response {
  const answer = new Response(response.body, response);
  for (const [name, value] of Object.entries(EXPLORER_HEADERS)) answer.headers.set(name, value);
  return answer;
}

/**
 * The two middlewares of the dispatch. `routes` lists the app's routes once they are all
 * registered (read at the first request); `dispatch` is the app itself, for aliases.
 */
export function apiPaths(routes: () => readonly ListedRoute[], dispatch: Dispatch) {
  let table: RouteTable | undefined;
  const isRoute = (path: string) => (table ??= new RouteTable(routes())).has(path);
  /** A navigation to a root path that is not one of the few root routes (/healthcheck, /docs, ...). */
  const wantsPage = (c: Context<AppEnv>) => isBrowserNavigation(c.req.raw) && !underApiPrefix(c.req.path) && !isRoute(c.req.path);

  /**
   * First of all middleware: `/X` is served as `/v2/X` by the whole app, so the answer (and every
   * middleware on the way: authentication, limits, request id) is exactly that of `/v2/X`.
   */
  const rootAliases: MiddlewareHandler<AppEnv> = async (c, next) => {
    const path = c.req.path;
    if (underApiPrefix(path) || isRoute(path) || wantsPage(c) || !isRoute(`${API_PREFIX}${path}`)) return next();
    const url = new URL(c.req.url);
    url.pathname = `${API_PREFIX}${url.pathname}`;
    return dispatch(new Request(url, c.req.raw), c.env, executionContext(c));
  };

  /**
   * After the request id and security headers, before anything reads credentials: the page for
   * navigations, the explorer's files, and the JSON 404 for every other path that is no route.
   */
  const explorerOrNotFound: MiddlewareHandler<AppEnv> = async (c, next) => {
    const path = c.req.path;
    const assets = c.env?.ASSETS;
    if (wantsPage(c)) {
      if (!assets) return notFoundAnswer(c);
      // The page is index.html whatever the path; a conditional request keeps its ETag check.
      const page = await assets.fetch(new Request(new URL("/", c.req.url), { method: c.req.method, headers: c.req.raw.headers }));
      return withExplorerHeaders(page);
    }
    if (isRoute(path)) return next();
    if (assets && !underApiPrefix(path) && (c.req.method === "GET" || c.req.method === "HEAD")) {
      // The explorer's own files (wrangler.toml sends /assets/* and /vendor/* straight to the
      // assets; this serves them when a request reaches the worker anyway). Never the page itself:
      // HTML goes to navigations only.
      const file = await assets.fetch(c.req.raw);
      const type = file.headers.get("content-type") ?? "";
      if ((file.status === 200 || file.status === 304) && !type.startsWith("text/html")) return withExplorerHeaders(file);
      await file.body?.cancel();
    }
    return notFoundAnswer(c);
  };

  return { rootAliases, explorerOrNotFound };
}
