/**
 * Issue 30's two findings through a real `wrangler dev` (test/node/sdk-service.ts), where the
 * workerd tests could not see them: the dev proxy ended an aborted export body as a complete
 * chunked answer, and answered 503 "Your worker restarted mid-request" to about one early-refused
 * POST in ten. The service runs with 1% scan time (100 ms per 10 s) and one scan at a time, so
 * that an export's pages meet a spent budget.
 */
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningService, startService } from "./sdk-service";

let service: RunningService;
let projectId: string;
let logStreamId: string;
const TRACES = 500;

async function post(path: string, body: unknown) {
  const response = await fetch(`${service.apiUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", "Service-API-Key": service.tenant.apiKey },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, text };
}

beforeAll(async () => {
  service = await startService({ vars: { ORG_SCAN_TIME_PERCENT: "1", ORG_CONCURRENT_SCANS: "1" } });
  projectId = JSON.parse((await post("/projects", { name: `wrangler-export-${Date.now().toString(36)}` })).text).id;
  logStreamId = JSON.parse((await post(`/projects/${projectId}/log_streams`, { name: "default" })).text).id;
  for (let batch = 0; batch < TRACES / 100; batch++) {
    const answer = await post(`/projects/${projectId}/traces`, {
      log_stream_id: logStreamId,
      traces: Array.from({ length: 100 }, (_, i) => ({
        id: crypto.randomUUID(),
        name: `t${batch * 100 + i}`,
        input: "q".repeat(2000),
        output: "a",
        created_at: new Date(Date.parse("2026-11-01T00:00:00Z") + (batch * 100 + i) * 1000).toISOString(),
        spans: [{ id: crypto.randomUUID(), type: "llm", name: "l", input: "q", output: "a" }],
      })),
    });
    expect(answer.status, answer.text).toBe(200);
  }
}, 400_000);

afterAll(async () => {
  await service?.stop();
});

/** A POST read with node:http, which tells a complete chunked answer from a cut one. */
function rawPost(path: string, headers: Record<string, string>, body: string): Promise<{ status: number; text: string; complete: boolean; error?: string }> {
  return new Promise((resolve) => {
    const request = http.request(`${service.origin}${path}`, { method: "POST", headers: { ...headers, "content-length": String(Buffer.byteLength(body)) } }, (response) => {
      let text = "";
      let error: string | undefined;
      response.setEncoding("utf8");
      response.on("data", (chunk) => (text += chunk));
      response.on("error", (e) => (error = e.message));
      response.on("close", () => resolve({ status: response.statusCode ?? 0, text, complete: response.complete, error }));
    });
    request.on("error", (e) => resolve({ status: 0, text: "", complete: false, error: e.message }));
    request.end(body);
  });
}

describe("under wrangler dev", () => {
  it("an export whose scan time runs out mid-stream is whole (jsonl_flat), never a complete-looking short file", async () => {
    const body = JSON.stringify({ log_stream_id: logStreamId, root_type: "trace", export_format: "jsonl_flat", filters: [{ type: "text", column_id: "name", operator: "contains", value: "T", case_sensitive: false }] });
    const headers = { "content-type": "application/json", "Service-API-Key": service.tenant.apiKey };
    let answer = await rawPost(`/v2/projects/${projectId}/export_records`, headers, body);
    // Refused before the first byte (the budget may be spent already): a 429 to retry.
    for (let i = 0; answer.status === 429 && i < 5; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10_500));
      answer = await rawPost(`/v2/projects/${projectId}/export_records`, headers, body);
    }
    expect(answer.status, answer.text.slice(0, 300)).toBe(200);
    const lines = answer.text.split("\n").filter(Boolean);
    if (answer.complete) {
      expect(lines).toHaveLength(TRACES * 2);
      for (const line of lines) JSON.parse(line);
    } else {
      // Only a failure may cut it, and then its last line says so.
      expect(lines.at(-1)).toMatch(/^EXPORT FAILED/);
    }
    expect(answer.complete).toBe(true);
  }, 240_000);

  it("60 cross-site POSTs with a body (OTLP with HTTP Basic and text/plain, the API, /login) are each a 403, never a 503", async () => {
    const basic = `Basic ${Buffer.from(`${service.tenant.email}:${service.tenant.password}`).toString("base64")}`;
    const statuses: Record<string, number> = {};
    for (let i = 0; i < 20; i++) {
      for (const [path, contentType] of [["/otel/v1/traces", "text/plain"], ["/v2/projects", undefined], ["/login", "application/x-www-form-urlencoded"]] as const) {
        const headers: Record<string, string> = { authorization: basic, origin: "https://attacker.example", "sec-fetch-site": "cross-site" };
        if (contentType) headers["content-type"] = contentType;
        const answer = await rawPost(path, headers, "x".repeat(i * 97 + 5));
        const key = `${path} ${answer.status}`;
        statuses[key] = (statuses[key] ?? 0) + 1;
      }
    }
    expect(statuses).toEqual({ "/otel/v1/traces 403": 20, "/v2/projects 403": 20, "/login 403": 20 });
  }, 120_000);
});
