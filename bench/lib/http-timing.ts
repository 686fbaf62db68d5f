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
 * `wrangler dev`'s proxy keeps pooled keep-alive connections on both sides, and either side may
 * close one just as a request is sent on it: to the worker, the proxy then answers a 503 "Your
 * worker restarted mid-request" although the worker never restarted (cloudflare/workers-sdk#14641);
 * to the client, the socket is closed under the request ("other side closed"). Deployed Workers
 * have no such proxy. A request that is safe to repeat (every bench request but the one that
 * starts a deletion job) is sent again; its time still runs from the first attempt (the client
 * waited that long), and the count is reported with the results.
 */
const DEV_PROXY_RESET = "Your worker restarted mid-request";
const CONNECTION_CLOSED = new Set(["UND_ERR_SOCKET", "ECONNRESET", "EPIPE", "UND_ERR_CLOSED"]);
let devProxyRetries = 0;

export function devProxyRetryCount(): number {
  return devProxyRetries;
}

export interface RequestInit {
  method?: string;
  headers?: Record<string, string>;
  body?: unknown;
  timeoutMs?: number;
  /** Whether the request may be sent again after a dropped connection (default true). */
  repeatable?: boolean;
}

function connectionClosed(error: unknown): boolean {
  const code = (error as { cause?: { code?: unknown } })?.cause?.code;
  return error instanceof TypeError && typeof code === "string" && CONNECTION_CLOSED.has(code);
}

/** The time reported is the client's: from the first attempt to the answer, re-sends included. */
export async function timedJson<T = unknown>(url: string, init: RequestInit = {}): Promise<TimedResponse<T>> {
  const attempts = init.repeatable === false ? 1 : 3;
  const started = performance.now();
  for (let attempt = 1; ; attempt += 1) {
    let response: TimedResponse<T>;
    try {
      response = await timedOnce<T>(url, init);
    } catch (error) {
      if (!connectionClosed(error) || attempt >= attempts) throw error;
      devProxyRetries += 1;
      continue;
    }
    const proxyReset = response.status === 503 && typeof response.body === "string" && response.body.startsWith(DEV_PROXY_RESET);
    if (!proxyReset || attempt >= attempts) return { ...response, ms: performance.now() - started };
    devProxyRetries += 1;
  }
}

async function timedOnce<T>(url: string, init: RequestInit): Promise<TimedResponse<T>> {
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
