/**
 * Security headers of the worker's own answers (contract, section 12, "Browsers"): `/docs` runs
 * under a Content-Security-Policy that names Scalar's inline script by hash and forbids framing;
 * every API answer (success, error, not found) is nosniff and inert as a document. The explorer's
 * headers come from ui/dist/_headers and are proven in the browser (test/node/ui-browser.test.ts).
 */
import { describe, expect, it } from "vitest";
import { inlineScripts } from "../src/docs/api-reference-page";
import { call } from "./support/client";

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return btoa(String.fromCharCode(...new Uint8Array(digest)));
}

function directives(policy: string | null): Map<string, string[]> {
  return new Map((policy ?? "").split(";").map((d) => d.trim().split(/\s+/)).map(([name, ...sources]) => [name!, sources]));
}

describe("security headers", () => {
  it("/docs allows its own scripts and Scalar's inline start-up script by hash, nothing inline else, and no framing", async () => {
    const response = await call("/docs");
    expect(response.status).toBe(200);
    const policy = directives(response.headers.get("content-security-policy"));
    const inline = inlineScripts(response.body as string);
    expect(inline).toHaveLength(1);
    expect(inline[0]).toContain("Scalar.createApiReference");
    expect(policy.get("script-src")).toEqual(["'self'", `'sha256-${await sha256(inline[0]!)}'`]);
    expect(policy.get("frame-ancestors")).toEqual(["'none'"]);
    expect(policy.get("default-src")).toEqual(["'none'"]);
    expect(policy.get("connect-src")).toEqual(["'self'"]);
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    expect(response.headers.get("referrer-policy")).toBe("strict-origin-when-cross-origin");
    expect(response.headers.get("x-frame-options")).toBe("DENY");
    // The same page (and policy) on every request.
    const again = await call("/docs");
    expect(again.body).toBe(response.body);
    expect(again.headers.get("content-security-policy")).toBe(response.headers.get("content-security-policy"));
  });

  it.each([
    ["a success", "/healthcheck", 200],
    ["a 401", "/v2/projects", 401],
    ["a 404", "/no-such-path", 404],
    ["the OpenAPI document", "/openapi.json", 200],
  ])("%s is nosniff, inert as a document and not frameable", async (_, path, status) => {
    const response = await call(path);
    expect(response.status).toBe(status);
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    expect(response.headers.get("referrer-policy")).toBe("strict-origin-when-cross-origin");
    const policy = directives(response.headers.get("content-security-policy"));
    expect(policy.get("default-src")).toEqual(["'none'"]);
    expect(policy.get("frame-ancestors")).toEqual(["'none'"]);
  });

  it("a 422 is nosniff too", async () => {
    const response = await call("/v2/projects", { rawBody: "{not json", headers: { "content-type": "application/json", "Service-API-Key": "tsk_x" } });
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
  });
});
