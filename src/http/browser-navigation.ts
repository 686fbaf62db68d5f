/**
 * Whether a request is a browser loading a page (contract section 17): only those get the
 * explorer's page. An SDK or a script (httpx sends `Accept: *\/*`, fetch and curl likewise) never
 * does, so it gets JSON: a 404 `{"detail": "Not Found"}` on a path that is no route, never HTML
 * with a 200 that it would take for a service.
 */

/** The quality a media range list gives a type: the most specific range that matches wins. */
function quality(accept: string, type: string, subtype: string): number {
  let best = -1;
  let bestSpecificity = -1;
  for (const part of accept.split(",")) {
    const [range = "", ...params] = part.trim().toLowerCase().split(";");
    const [rangeType, rangeSubtype] = range.trim().split("/");
    if (!rangeType || !rangeSubtype) continue;
    const matches = (rangeType === "*" || rangeType === type) && (rangeSubtype === "*" || rangeSubtype === subtype);
    if (!matches) continue;
    const specificity = (rangeType === "*" ? 0 : 1) + (rangeSubtype === "*" ? 0 : 1);
    let q = 1;
    for (const param of params) {
      const [name, value] = param.trim().split("=");
      if (name === "q" && value !== undefined) {
        const parsed = Number(value);
        q = Number.isFinite(parsed) ? parsed : 0;
      }
    }
    if (specificity > bestSpecificity) {
      bestSpecificity = specificity;
      best = q;
    }
  }
  return Math.max(best, 0);
}

/** `Accept` prefers text/html to application/json (a browser's page load; `*\/*` alone does not). */
export function acceptPrefersHtml(accept: string | undefined): boolean {
  if (!accept) return false;
  return quality(accept, "text", "html") > quality(accept, "application", "json");
}

export function isBrowserNavigation(request: Request): boolean {
  if (request.method !== "GET" && request.method !== "HEAD") return false;
  if (request.headers.get("sec-fetch-mode") === "navigate") return true;
  return acceptPrefersHtml(request.headers.get("accept") ?? undefined);
}
