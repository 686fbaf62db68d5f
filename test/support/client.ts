import { SELF } from "cloudflare:test";
import type { Tenant } from "./tenants";

const BASE = "http://trace-store.test";

export interface CallOptions {
  method?: string;
  body?: unknown;
  /** Raw body text (sent as is), for malformed-input tests. */
  rawBody?: string;
  headers?: Record<string, string>;
  /** Authenticate as this tenant with Service-API-Key (the default scheme in tests). */
  as?: Tenant;
}

export interface CallResult<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

/** Calls the worker through its real entry point (routing, middleware, auth, D1). */
export async function call<T = any>(path: string, options: CallOptions = {}): Promise<CallResult<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.as && !Object.keys(headers).some((h) => /authorization|api-key/i.test(h))) headers["Service-API-Key"] = options.as.apiKey;
  let body: string | undefined;
  if (options.rawBody !== undefined) body = options.rawBody;
  else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers["content-type"] ??= "application/json";
  }
  const response = await SELF.fetch(`${BASE}${path}`, { method: options.method ?? (body === undefined ? "GET" : "POST"), headers, body });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: response.status, body: parsed as T, headers: response.headers };
}
