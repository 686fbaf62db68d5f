/**
 * When a failed delivery is tried again (contract section 16): after 5 s, 30 s, 2 min, 10 min,
 * then hourly, for 24 hours from its first attempt; a receiver's `Retry-After` (seconds or an
 * HTTP date) replaces the step, up to 1 hour. Pure; test/alerts-delivery-schedule-unit.test.ts.
 */

export const DEFAULT_RETRY_DELAYS_SECONDS = [5, 30, 120, 600, 3600];
export const DEFAULT_RETRY_FOR_SECONDS = 24 * 3600;
export const MAX_RETRY_AFTER_SECONDS = 3600;
/** Failed attempts in a row after which a channel is disabled. */
export const FAILURES_TO_DISABLE = 20;
/** The receiver's time to answer. */
export const DELIVERY_TIMEOUT_MS = 15_000;

export function retryDelays(raw: string | undefined): number[] {
  if (!raw) return DEFAULT_RETRY_DELAYS_SECONDS;
  const delays = raw.split(",").map((s) => Number(s.trim()));
  return delays.length > 0 && delays.every((d) => Number.isFinite(d) && d >= 0) ? delays : DEFAULT_RETRY_DELAYS_SECONDS;
}

export function retryForSeconds(raw: string | undefined): number {
  const value = Number(raw);
  return raw && Number.isFinite(value) && value > 0 ? value : DEFAULT_RETRY_FOR_SECONDS;
}

/** `Retry-After` in seconds (delta or HTTP date), or undefined when absent or unreadable. */
export function retryAfterSeconds(header: string | null, nowMs: number): number | undefined {
  if (!header) return undefined;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Number(text);
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - nowMs) / 1000));
}

/** The delay before attempt `attempts + 1`, given `attempts` failed ones. */
export function delayAfter(attempts: number, delays: readonly number[], retryAfter: number | undefined): number {
  if (retryAfter !== undefined) return Math.min(retryAfter, MAX_RETRY_AFTER_SECONDS);
  return delays[Math.min(attempts - 1, delays.length - 1)] ?? delays[delays.length - 1] ?? 3600;
}

/** Whether a response or failure is retried: timeouts and network errors (status null), 429 and 5xx. */
export const isRetryable = (status: number | null) => status === null || status === 429 || status >= 500;
