/**
 * The only way the page talks to the service: the public HTTP API, with the bearer token of this
 * tab. A 401 forgets the token and tells the app to ask for credentials again; every other failure
 * becomes an ApiError that views show as what it is (403 not allowed, 429 slow down, 422 the
 * faults of the request).
 */
import { clearToken, readToken } from "./token-store";

export interface ValidationItem {
  loc: (string | number)[];
  msg: string;
  type: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** The 422's items, FastAPI-shaped. */
    readonly validation: ValidationItem[] = [],
    /** Seconds, from a 429's Retry-After. */
    readonly retryAfter: number | null = null,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

type UnauthorizedListener = () => void;
const unauthorizedListeners = new Set<UnauthorizedListener>();

/** Called after a 401 forgot the token (the app then shows the sign-in page). */
export function onUnauthorized(listener: UnauthorizedListener): () => void {
  unauthorizedListeners.add(listener);
  return () => unauthorizedListeners.delete(listener);
}

async function errorFrom(response: Response): Promise<ApiError> {
  let detail: unknown = null;
  try {
    detail = ((await response.json()) as { detail?: unknown }).detail;
  } catch {
    // not JSON: the status says enough
  }
  if (response.status === 422 && Array.isArray(detail)) {
    const items = detail as ValidationItem[];
    return new ApiError(422, items.map((i) => i.msg).join("; ") || "Invalid request", items);
  }
  const message = typeof detail === "string" ? detail : response.statusText || `HTTP ${response.status}`;
  const retry = Number(response.headers.get("retry-after"));
  return new ApiError(response.status, message, [], Number.isFinite(retry) && retry > 0 ? retry : null);
}

async function send(method: string, path: string, init: { body?: BodyInit; contentType?: string; auth: boolean }): Promise<Response> {
  const headers: Record<string, string> = { accept: "application/json" };
  if (init.contentType) headers["content-type"] = init.contentType;
  const token = readToken();
  if (init.auth && token) headers.authorization = `Bearer ${token}`;
  let response: Response;
  try {
    response = await fetch(path, { method, headers, body: init.body });
  } catch {
    throw new ApiError(0, "The service cannot be reached. Check your connection and try again.");
  }
  if (response.ok) return response;
  const error = await errorFrom(response);
  if (response.status === 401 && init.auth) {
    clearToken();
    for (const listener of unauthorizedListeners) listener();
  }
  throw error;
}

/**
 * A JSON call to an authenticated route. A body is labelled JSON (the service refuses a browser's
 * unlabelled body with 415, src/http/cross-site-requests.ts); a bodiless DELETE needs no label.
 */
export async function api<T>(method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE", path: string, body?: unknown): Promise<T> {
  const response = await send(method, path, {
    body: body === undefined ? undefined : JSON.stringify(body),
    contentType: body === undefined ? undefined : "application/json",
    auth: true,
  });
  return (await response.json()) as T;
}

interface TokenAnswer {
  access_token: string;
}

/** `POST /login`, the OAuth2 password form. */
export async function loginWithPassword(email: string, password: string): Promise<string> {
  const form = new URLSearchParams({ username: email, password, grant_type: "password" });
  const response = await send("POST", "/login", { body: form.toString(), contentType: "application/x-www-form-urlencoded", auth: false });
  return ((await response.json()) as TokenAnswer).access_token;
}

/** `POST /login/api_key`: the key is exchanged for a token and not kept. */
export async function loginWithApiKey(apiKey: string): Promise<string> {
  const response = await send("POST", "/login/api_key", { body: JSON.stringify({ api_key: apiKey }), contentType: "application/json", auth: false });
  return ((await response.json()) as TokenAnswer).access_token;
}

/**
 * `POST /v2/logout`: ends this tab's token on the server too (within 5 s everywhere), so a copy
 * of it is worthless. Best effort: signing out locally never waits on or fails with the network.
 */
export async function logout(): Promise<void> {
  const token = readToken();
  if (!token) return;
  try {
    await fetch("/v2/logout", { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: "{}" });
  } catch {
    // offline: the token still expires on its own
  }
}
