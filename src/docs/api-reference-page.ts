/**
 * `GET /docs`: the interactive API reference (Scalar) for `/openapi.json`.
 *
 * Its script is served from the worker's own static assets (copied there from the
 * `@scalar/api-reference` package by scripts/lib/build-ui.ts), never from a CDN, so the page works
 * offline and in locked-down networks. Everything else Scalar would fetch from its own servers is
 * switched off: web fonts (the system fonts are used), telemetry, and the request proxy (the
 * "Test request" client calls this same origin directly, so credentials typed there never leave it).
 */
import { Scalar } from "@scalar/hono-api-reference";

/** Where the build puts the reference bundle inside the assets directory (a URL path). */
export const API_REFERENCE_BUNDLE_PATH = "/vendor/scalar-api-reference.js";

export const apiReferencePage = Scalar({
  url: "/openapi.json",
  pageTitle: "Trace store API",
  cdn: API_REFERENCE_BUNDLE_PATH,
  withDefaultFonts: false,
  proxyUrl: "",
  // Options of the bundled Scalar version that this integration's types do not list yet.
  ...({ telemetry: false, agent: { disabled: true }, showDeveloperTools: "never" } as object),
});
