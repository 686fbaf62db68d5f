/**
 * A streamed export past its first page waits for its scan slot instead of being refused
 * (issue 30: once the organization's scan time was spent, a page refused mid-stream cut the
 * file, and `wrangler dev` ended the cut body as if it were whole). Before the first byte a
 * refusal is an ordinary 429 the client can retry; after it, the client is already reading, and
 * a slot frees within a lease (40 s) and scan time within the 10 s window, so the export sleeps
 * for the refusal's Retry-After and asks again, up to EXPORT_SLOT_WAIT_SECONDS in all for one
 * page. Sleeping costs no CPU time, and a Worker answering a connected client has no wall-time
 * limit. Past the bound the refusal stands and the stream fails visibly (export-route.ts).
 */
import type { Env } from "../env";
import { ApiError } from "../http/errors";
import { limitSetting } from "../limits/limit-settings";

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Whether an error is a refusal to retry later (a 429 with its Retry-After in seconds). */
export function refusalRetryAfter(error: unknown): number | undefined {
  if (!(error instanceof ApiError) || error.status !== 429) return undefined;
  const seconds = Number(error.headers["Retry-After"]);
  return Number.isFinite(seconds) && seconds > 0 ? seconds : 1;
}

/** Runs `attempt`, and again after each refusal's Retry-After while the wait stays within the bound. */
export async function admittedWhenFree<T>(env: Env, attempt: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + limitSetting(env, "EXPORT_SLOT_WAIT_SECONDS") * 1000;
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      const seconds = refusalRetryAfter(error);
      if (seconds === undefined) throw error;
      const left = deadline - Date.now();
      if (left <= 0) throw error;
      await sleep(Math.min(seconds * 1000, left));
    }
  }
}
