/**
 * Runs a scan-class query while holding one of its organization's scan slots (scan-slots.ts),
 * or answers 429 with `Retry-After` when the organization already runs as many as it may
 * (ORG_CONCURRENT_SCANS) or has used its share of scan time (ORG_SCAN_TIME_PERCENT of the last
 * 10 s); docs/limits.md. Which queries are scan-class is decided by their owners: searches and
 * every route that filters a run's records by src/search/search-cost.ts, the deletion dry run
 * by itself (src/deletion/count-deletion-set.ts).
 */
import type { Env } from "../env";
import { ApiError } from "../http/errors";
import { scanPolicy } from "./limit-settings";
import { rememberRefusal, remainingRefusal } from "./refusal-memo";
import type { ScanPolicy, SlotVerdict } from "./scan-slots";

const SCAN_CLASS = "filters no index narrows, substring or case-insensitive matches, sorts on unindexed columns, deep offsets, dry runs";

/**
 * What a query costs the database: indexed (it reads about what it returns) or scan-class (its
 * cost grows with the run whatever it returns), with the reasons, which the 429 repeats.
 */
export type QueryCost = { class: "indexed" } | { class: "scan"; reasons: string[] };

type Refusal = Extract<SlotVerdict, { granted: false }>;

export function tooManyScans(verdict: Refusal, policy: ScanPolicy, reasons: readonly string[] = []): ApiError {
  const { retryAfterSeconds } = verdict;
  const what =
    verdict.reason === "concurrency"
      ? `Too many scan-class searches at once for this organization (at most ${policy.maxConcurrent}; ${SCAN_CLASS})`
      : `This organization's scan-class searches (${SCAN_CLASS}) used their share of the database (${(policy.budgetMs / 1000).toFixed(1)} s per ${policy.windowMs / 1000} s)`;
  const why = reasons.length > 0 ? ` This one is scan-class for: ${reasons.join("; ")}.` : "";
  return new ApiError(429, `${what}; retry in ${retryAfterSeconds} s, or narrow the search so that an index serves it.${why}`, {
    "Retry-After": String(retryAfterSeconds),
  });
}

/** Runs `work` at once when it is indexed, else while holding a scan slot (whileHoldingScanSlot). */
export function withinScanAdmission<T>(env: Env, organizationId: string, cost: QueryCost, work: () => Promise<T>): Promise<T> {
  return cost.class === "scan" ? whileHoldingScanSlot(env, organizationId, work, cost.reasons) : work();
}

/**
 * Scans this isolate itself is running, per organization: when they alone fill the
 * organization's slots, another is refused without asking the object (which could only agree).
 */
const runningHere = new Map<string, number>();

export async function whileHoldingScanSlot<T>(env: Env, organizationId: string, work: () => Promise<T>, reasons: readonly string[] = []): Promise<T> {
  const policy = scanPolicy(env);
  if ((runningHere.get(organizationId) ?? 0) >= policy.maxConcurrent) throw tooManyScans({ granted: false, retryAfterSeconds: 1, reason: "concurrency" }, policy, reasons);
  // An organization known to have used its scan time is refused without asking the object again.
  // (A refusal for concurrency is not remembered: a slot may free any moment.)
  const memoKey = `scan-time:${organizationId}`;
  const known = remainingRefusal(memoKey);
  if (known !== undefined) throw tooManyScans({ granted: false, retryAfterSeconds: known, reason: "time" }, policy, reasons);
  const slots = env.SCAN_SLOTS.get(env.SCAN_SLOTS.idFromName(organizationId));
  const verdict = await slots.acquire(policy);
  if (!verdict.granted) {
    if (verdict.reason === "time") rememberRefusal(memoKey, verdict.retryAfterSeconds);
    throw tooManyScans(verdict, policy, reasons);
  }
  runningHere.set(organizationId, (runningHere.get(organizationId) ?? 0) + 1);
  try {
    return await work();
  } finally {
    const left = (runningHere.get(organizationId) ?? 1) - 1;
    if (left > 0) runningHere.set(organizationId, left);
    else runningHere.delete(organizationId);
    // A release that fails only frees the slot late: its lease expires on its own.
    await slots.release(verdict.lease).catch(() => undefined);
  }
}
