/**
 * Requests a browser makes on behalf of another site (contract section 12, "Browsers"). A page on
 * any origin can make a signed-in user's browser send a `no-cors` fetch or a form post here, with
 * whatever credentials the browser holds for us (a cached HTTP Basic password). Such a request
 * is refused before it is authenticated or its body read:
 *
 * - any method but GET, HEAD and OPTIONS (login and OTLP included) is a 403 when
 *   `Sec-Fetch-Site` is present and neither `same-origin` nor `none` (typed in the address bar),
 *   or when `Origin` is present and is not this service's own origin (`null`, which sandboxed
 *   frames and some redirects send, counts as foreign);
 * - a request that carries `Origin` or any `Sec-Fetch-*` header (so: from a browser) and a body
 *   must label it as JSON, a form on `/login`, protobuf or JSON on OTLP, else 415. A cross-site page
 *   can only send the "simple" types (text/plain, forms) without a CORS preflight, which we never
 *   grant, so this closes the door even for a browser that sends neither of the headers above.
 *
 * Clients that send neither header (SDKs, curl, OpenTelemetry exporters) are not affected. The
 * explorer and /docs are served from the service's own origin, so their calls pass.
 */
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "./app-env";
import { isFormMediaType, isJsonMediaType, mediaTypeOf } from "./media-type";

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);
const SAME_SITE_VALUES = new Set(["same-origin", "none"]);
const LOGIN_PATHS = new Set(["/login", "/v2/login"]);
const OTLP_MEDIA_TYPES = new Set(["application/x-protobuf", "application/protobuf", "application/json"]);

function fromBrowser(headers: Headers): boolean {
  if (headers.has("origin")) return true;
  for (const name of headers.keys()) if (name.startsWith("sec-fetch-")) return true;
  return false;
}

/**
 * Whether the request has a body to label. A browser's bodiless DELETE (or POST) carries no
 * Content-Type, and nothing a page could smuggle: the origin check above has already passed.
 */
function carriesBody(request: Request): boolean {
  if (request.body === null) return false;
  const length = request.headers.get("content-length");
  return length === null || length.trim() !== "0";
}

/** Whether a browser may send this body type to this path. */
function acceptedBodyType(path: string, contentType: string | undefined): boolean {
  if (isJsonMediaType(contentType)) return true;
  if (LOGIN_PATHS.has(path)) return isFormMediaType(contentType);
  if (path.includes("/otel/")) return OTLP_MEDIA_TYPES.has(mediaTypeOf(contentType));
  return false;
}

export const refuseCrossSiteRequests: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (SAFE_METHODS.has(c.req.method)) return next();
  const headers = c.req.raw.headers;
  const site = headers.get("sec-fetch-site");
  const origin = headers.get("origin");
  if ((site !== null && !SAME_SITE_VALUES.has(site.trim().toLowerCase())) || (origin !== null && origin.trim() !== new URL(c.req.url).origin)) {
    return c.json({ detail: "Cross-site requests may not change anything here: call the API from its own origin, or from a client that is not a browser." }, 403);
  }
  if (fromBrowser(headers) && carriesBody(c.req.raw) && !acceptedBodyType(c.req.path, c.req.header("content-type"))) {
    return c.json({ detail: "A request from a browser must send its body as application/json (a form on /login, protobuf or JSON on /otel)." }, 415);
  }
  return next();
};
