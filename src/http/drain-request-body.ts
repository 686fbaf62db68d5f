/**
 * An answer sent before the request's body was read (a cross-site refusal, a 401, a 413 past a
 * cap, a 404...) leaves the client still sending it. Under `wrangler dev` that made about one
 * such POST in ten answer 503 "Your worker restarted mid-request" instead of its 4xx (issue 30):
 * the dev proxy's fetch to the worker failed when the worker's side stopped taking the body it
 * was still sending. Reading the rest of the body before the answer goes out lets every early
 * refusal arrive as itself. Bounded: past DRAIN_LIMIT_BYTES (above every body cap,
 * src/http/body-limits.ts) the body is cancelled instead, as a server closes on a client that
 * keeps sending; reading costs no more than receiving, which the platform does anyway.
 */

/** More than the largest body any route accepts (10 MiB). */
export const DRAIN_LIMIT_BYTES = 16 * 1024 * 1024;

/** Reads and discards what is left of `request`'s body, if nothing read it. */
export async function drainUnreadBody(request: Request): Promise<void> {
  const body = request.body;
  // Read whole (json(), arrayBuffer()) or being read: locked. Read in part and released (a 413
  // past a cap, bounded-body.ts): unlocked, and the rest is drained.
  if (body === null || body.locked) return;
  const reader = body.getReader();
  let read = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      read += value.byteLength;
      if (read > DRAIN_LIMIT_BYTES) {
        await reader.cancel();
        return;
      }
    }
  } catch {
    // The client went away: nothing left to drain.
  } finally {
    reader.releaseLock();
  }
}
