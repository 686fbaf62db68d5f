/**
 * What a browser may do with our responses (contract, section 12, "Browsers"): no page of ours
 * may be framed by another site, nothing is sniffed into another content type, and only the path
 * of the referring page (never its query, which holds filters) leaves for another origin.
 *
 * The explorer is served as static assets, so its headers come from `ui/dist/_headers` (written by
 * scripts/lib/build-ui.ts from EXPLORER_HEADERS); the worker's own responses (API, /docs) get them
 * from `securityHeaders`.
 */
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "./app-env";

/** Sources per fetch directive; joined into one Content-Security-Policy value. */
export type CspDirectives = Record<string, readonly string[]>;

export function contentSecurityPolicy(directives: CspDirectives): string {
  return Object.entries(directives)
    .map(([name, sources]) => [name, ...sources].join(" "))
    .join("; ");
}

/** Shared by every page: nothing the page does not name, no <base>, no framing. */
const PAGE_DIRECTIVES = {
  "default-src": ["'none'"],
  "base-uri": ["'none'"],
  "object-src": ["'none'"],
  "frame-ancestors": ["'none'"],
} as const satisfies CspDirectives;

/**
 * The explorer (ui/): its own module script and stylesheet only (Preact sets element styles through
 * the CSSOM, which style-src does not govern), the API on its own origin, and the `data:` favicon of
 * ui/index.html.
 */
export const EXPLORER_CSP = contentSecurityPolicy({
  ...PAGE_DIRECTIVES,
  "script-src": ["'self'"],
  "style-src": ["'self'"],
  "img-src": ["'self'", "data:"],
  "connect-src": ["'self'"],
  "form-action": ["'self'"],
});

/** Headers that every response carries, page or API answer. */
export const BASELINE_HEADERS = {
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "strict-origin-when-cross-origin",
} as const;

/** Headers of the explorer's page and assets (the `/*` rule of ui/dist/_headers). */
export const EXPLORER_HEADERS = {
  ...BASELINE_HEADERS,
  "Content-Security-Policy": EXPLORER_CSP,
  // For browsers older than frame-ancestors.
  "X-Frame-Options": "DENY",
} as const;

/**
 * For the worker's answers: JSON needs no policy of its own beyond "nothing runs, nothing frames"
 * (an answer opened as a document stays inert); a page that sets its own (/docs) keeps it.
 */
const API_CSP = contentSecurityPolicy(PAGE_DIRECTIVES);

export const securityHeaders: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  for (const [name, value] of Object.entries(BASELINE_HEADERS)) c.header(name, value);
  if (!c.res.headers.has("Content-Security-Policy")) c.header("Content-Security-Policy", API_CSP);
  c.header("X-Frame-Options", "DENY");
};
