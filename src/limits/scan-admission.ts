/**
 * Runs a scan-class search while holding one of its organization's scan slots (scan-slots.ts),
 * or answers 429 with `Retry-After` when the organization already runs as many as it may
 * (ORG_CONCURRENT_SCANS, docs/limits.md).
 */
import type { Env } from "../env";
import { ApiError } from "../http/errors";
import { limitSetting } from "./limit-settings";

export function tooManyScans(retryAfterSeconds: number, limit: number): ApiError {
  return new ApiError(
    429,
    `Too many scan-class searches at once for this organization (at most ${limit}: substring or case-insensitive matches, sorts on unindexed columns, deep offsets); retry in ${retryAfterSeconds} s, or narrow the search so that an index serves it.`,
    { "Retry-After": String(retryAfterSeconds) },
  );
}

export async function whileHoldingScanSlot<T>(env: Env, organizationId: string, work: () => Promise<T>): Promise<T> {
  const limit = limitSetting(env, "ORG_CONCURRENT_SCANS");
  const slots = env.SCAN_SLOTS.get(env.SCAN_SLOTS.idFromName(organizationId));
  const verdict = await slots.acquire(limit);
  if (!verdict.granted) throw tooManyScans(verdict.retryAfterSeconds, limit);
  try {
    return await work();
  } finally {
    // A release that fails only frees the slot late: its lease expires on its own.
    await slots.release(verdict.lease).catch(() => undefined);
  }
}
