/** Timed HTTP calls, as a client makes them, and the round-trip count the service reports. */
import { performance } from "node:perf_hooks";

export interface TimedResponse<T = unknown> {
  status: number;
  body: T;
  /** Milliseconds from sending the request to having read the whole body. */
  ms: number;
  /** D1 round trips from the `Server-Timing` header, if the server reported them. */
  roundTrips: number | undefined;
}

const ROUND_TRIPS = /(?:^|,)\s*d1;desc="round trips";dur=(\d+)/;

export function roundTripsOf(headers: Headers): number | undefined {
  const match = ROUND_TRIPS.exec(headers.get("server-timing") ?? "");
  return match ? Number(match[1]) : undefined;
}

/**
 * `wrangler dev`'s proxy answers this 503 when the pooled connection it picked to the worker was
 * just closed by the worker's 5 s keep-alive timeout (cloudflare/workers-sdk#14641): the request
 * never reached the worker, so it is sent again (and its first attempt is not timed). Deployed
 * Workers have no such proxy; the count is reported with the results.
 */
const DEV_PROXY_RESET = "Your worker restarted mid-request";
let devProxyRetries = 0;

export function devProxyRetryCount(): number {
  return devProxyRetries;
}

export async function timedJson<T = unknown>(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: unknown; timeoutMs?: number } = {},
): Promise<TimedResponse<T>> {
  for (let attempt = 1; ; attempt += 1) {
    const response = await timedOnce<T>(url, init);
    if (response.status !== 503 || typeof response.body !== "string" || !response.body.startsWith(DEV_PROXY_RESET) || attempt === 3) return response;
    devProxyRetries += 1;
  }
}

async function timedOnce<T>(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: unknown; timeoutMs?: number },
): Promise<TimedResponse<T>> {
  const body = init.body === undefined ? undefined : JSON.stringify(init.body);
  const headers = { ...(body === undefined ? {} : { "content-type": "application/json" }), ...init.headers };
  const started = performance.now();
  const response = await fetch(url, {
    method: init.method ?? (body === undefined ? "GET" : "POST"),
    headers,
    body,
    signal: AbortSignal.timeout(init.timeoutMs ?? 120_000),
  });
  const text = await response.text();
  const ms = performance.now() - started;
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: response.status, body: parsed as T, ms, roundTrips: roundTripsOf(response.headers) };
}

/** Throws with the answer's body when the status is not the expected one. */
export function expectStatus<T>(response: TimedResponse<T>, status: number, what: string): TimedResponse<T> {
  if (response.status !== status) {
    throw new Error(`${what}: HTTP ${response.status} (expected ${status}): ${JSON.stringify(response.body).slice(0, 1000)}`);
  }
  return response;
}
