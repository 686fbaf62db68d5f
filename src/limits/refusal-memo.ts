/**
 * Refusals remembered in the isolate until they end: once a guard or the scan slots said "not
 * before T" for a key (an email, a client IP, an organization's scans), further requests for
 * that key in this isolate are refused until T without asking the Durable Object again. A client
 * that ignores Retry-After and retries at once then costs a map lookup per retry, not a Durable
 * Object call. Only refusals are remembered, and only for as long as the object said: another
 * isolate asks the object, which stays the authority.
 */
const MAX_KEYS = 10_000;

const refusedUntil = new Map<string, number>();

/** Seconds until `key`'s remembered refusal ends (at least 1), or undefined when there is none. */
export function remainingRefusal(key: string, now = Date.now()): number | undefined {
  const until = refusedUntil.get(key);
  if (until === undefined) return undefined;
  if (until <= now) {
    refusedUntil.delete(key);
    return undefined;
  }
  return Math.max(1, Math.ceil((until - now) / 1000));
}

export function rememberRefusal(key: string, retryAfterSeconds: number, now = Date.now()): void {
  if (refusedUntil.size >= MAX_KEYS) refusedUntil.clear();
  refusedUntil.set(key, now + retryAfterSeconds * 1000);
}
