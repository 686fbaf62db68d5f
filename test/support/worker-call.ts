import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import type { Env } from "../../src/env";
import worker from "../../src/index";

export interface WorkerAnswer {
  status: number;
  body: any;
  headers: Headers;
}

/**
 * Calls the worker's real entry point with the test bindings, some of them replaced (a failing
 * database, another secret): what `SELF.fetch` cannot do, since its bindings are fixed.
 */
export async function callWorkerWith(bindings: Partial<Env>, path: string, init: RequestInit = {}): Promise<WorkerAnswer> {
  const ctx = createExecutionContext();
  const request = new Request(`http://trace-store.test${path}`, init) as Request<unknown, IncomingRequestCfProperties>;
  const response = await worker.fetch(request, { ...env, ...bindings }, ctx);
  await waitOnExecutionContext(ctx);
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: response.status, body, headers: response.headers };
}
