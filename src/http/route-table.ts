/**
 * Which paths the worker answers: built once from the routes Hono holds (`app.routes`), so that a
 * path can be told to be a route, or no route at all, before anything else runs (authentication
 * included: a path that is no route is a 404 whoever asks, contract section 17).
 */

/** A route as Hono lists it in `app.routes`. Middleware (`use`) is listed with method "ALL". */
export interface ListedRoute {
  method: string;
  path: string;
}

/** One path segment of a Hono pattern as a regular expression source. */
function segmentSource(segment: string): string {
  if (segment === "*") return ".*";
  const param = /^:[A-Za-z_][\w]*(\{(.+)\})?(\?)?$/.exec(segment);
  if (param) return param[2] ?? "[^/]+";
  return segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function patternOf(path: string): RegExp {
  const source = path
    .split("/")
    .map((segment) => segmentSource(segment))
    .join("/");
  return new RegExp(`^${source}$`);
}

export class RouteTable {
  private readonly patterns: RegExp[];

  constructor(routes: readonly ListedRoute[]) {
    const paths = new Set(routes.filter((route) => route.method !== "ALL").map((route) => route.path));
    this.patterns = [...paths].map(patternOf);
  }

  /** Whether some route (of any method) has this path. */
  has(path: string): boolean {
    return this.patterns.some((pattern) => pattern.test(path));
  }
}
