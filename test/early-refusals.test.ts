/**
 * Every answer given before the request's body was read (issue 30: under `wrangler dev` about one
 * cross-site OTLP POST in ten answered 503 "Your worker restarted mid-request" instead of its
 * 403) first takes the rest of the body, so the client is never cut off while it sends: a
 * cross-site 403 (OTLP, the API, /login), a browser's unlabelled body (415), bad credentials
 * (401), an unknown route (404), a body past its route's cap (413). The client's body here is a
 * stream that counts what the worker pulled from it. test/node/early-refusals-wrangler.test.ts
 * sends the same refusals through a real `wrangler dev`.
 */
import { SELF } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { DRAIN_LIMIT_BYTES } from "../src/http/drain-request-body";
import { createTenant, type Tenant } from "./support/tenants";

let tenant: Tenant;
beforeAll(async () => {
  tenant = await createTenant("admin");
});

const CHUNK = 64 * 1024;

/** A body of `chunks` chunks that records how many the worker pulled, and whether it was cancelled. */
function countingBody(chunks: number, fill = 0x20) {
  const state = { pulled: 0, cancelled: false };
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (state.pulled === chunks) return controller.close();
      state.pulled += 1;
      controller.enqueue(new Uint8Array(CHUNK).fill(fill));
    },
    cancel() {
      state.cancelled = true;
    },
  });
  return { stream, state };
}

async function send(path: string, headers: Record<string, string>, chunks: number) {
  const { stream, state } = countingBody(chunks);
  const response = await SELF.fetch(`http://trace-store.test${path}`, { method: "POST", headers, body: stream, duplex: "half" } as RequestInit);
  const text = await response.text();
  return { status: response.status, text, state };
}

const basic = () => `Basic ${btoa(`${tenant.email}:${tenant.password}`)}`;
const crossSite = { origin: "https://attacker.example", "sec-fetch-site": "cross-site" };

describe("an answer given before the body was read takes the rest of the body first", () => {
  const cases: [string, string, () => Record<string, string>, number][] = [
    ["a cross-site OTLP POST, HTTP Basic, text/plain", "/otel/v1/traces", () => ({ ...crossSite, authorization: basic(), "content-type": "text/plain" }), 403],
    ["a cross-site OTLP POST without a content type", "/v2/otel/traces", () => ({ ...crossSite, authorization: basic() }), 403],
    ["a cross-site API POST", "/v2/projects", () => ({ ...crossSite, "Service-API-Key": tenant.apiKey, "content-type": "application/json" }), 403],
    ["a cross-site form to /login", "/login", () => ({ ...crossSite, "content-type": "application/x-www-form-urlencoded" }), 403],
    ["a browser's text/plain body from our own origin", "/v2/projects", () => ({ origin: "http://trace-store.test", "Service-API-Key": tenant.apiKey, "content-type": "text/plain" }), 415],
    ["bad credentials", "/v2/projects", () => ({ "Service-API-Key": "not-a-key", "content-type": "application/json" }), 401],
    ["OTLP with bad credentials", "/otel/v1/traces", () => ({ "Service-API-Key": "not-a-key", "content-type": "application/x-protobuf" }), 401],
    ["an unknown route", "/v2/no-such-route", () => ({ "Service-API-Key": tenant.apiKey, "content-type": "application/json" }), 404],
  ];
  for (const [name, path, headers, status] of cases) {
    it(`${name}: ${status}, the 1 MiB body read to its end`, async () => {
      const answer = await send(path, headers(), 16);
      expect(answer.status, answer.text).toBe(status);
      expect(answer.state.pulled).toBe(16);
    });
  }

  it("a body past its route's cap: 413, the body read on to its end", async () => {
    // 3 MiB to partial_search (capped at 2 MiB): the first 2 MiB are read and refused, the rest drained.
    const answer = await send(`/v2/projects/${crypto.randomUUID()}/traces/partial_search`, { "Service-API-Key": tenant.apiKey, "content-type": "application/json" }, 48);
    expect(answer.status, answer.text).toBe(413);
    expect(answer.state.pulled).toBe(48);
  });

  it("past the drain bound the body is cancelled, not read on for ever", async () => {
    const chunks = DRAIN_LIMIT_BYTES / CHUNK + 64;
    const answer = await send("/otel/v1/traces", { ...crossSite, "content-type": "text/plain" }, chunks);
    expect(answer.status, answer.text).toBe(403);
    expect(answer.state.pulled).toBeLessThan(chunks);
  });
});
