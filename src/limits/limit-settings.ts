/**
 * The configurable limits (wrangler.toml `[vars]`; docs/limits.md says what each does and how to
 * change it). A value that is missing or not a positive whole number falls back to its default,
 * so a typo in a variable never turns a limit off.
 */
import type { Env } from "../env";
import type { GuardPolicy } from "./password-guard";
import type { ScanPolicy } from "./scan-slots";

/** The window the scan time budget is counted over. */
export const SCAN_WINDOW_MS = 10_000;

export const LIMIT_DEFAULTS = {
  /** Scan-class searches (src/search/search-cost.ts) one organization may run at once. */
  ORG_CONCURRENT_SCANS: 2,
  /**
   * Share of the time (percent, over SCAN_WINDOW_MS) one organization's scans may hold slots,
   * counted per scan: two scans running for 1 s use 2 s. Not capped at 100, so that
   * 100 × ORG_CONCURRENT_SCANS lifts the time budget (at 100, one client sending scans back to
   * back reaches the budget and is refused).
   */
  ORG_SCAN_TIME_PERCENT: 10,
  /**
   * Most candidates a substring search may take from the text index (src/search/text-driver.ts);
   * a needle the run holds more often is answered by a scan-class search.
   */
  TEXT_INDEX_MAX_CANDIDATES: 20_000,
  /**
   * Most records of a run a substring search may scan when the text index lags its writes by more
   * than TEXT_INDEX_MAX_CANDIDATES records (src/search/text-driver.ts): past it, a 503 with
   * Retry-After (the index is catching up) instead of a multi-second scan.
   */
  TEXT_INDEX_LAG_SCAN_MAX_RECORDS: 250_000,
  /**
   * Seconds a streamed export, past its first page, waits in all for one page's scan slot before
   * the refusal fails it (src/export/slot-wait.ts): longer than a lease (40 s) and the window.
   */
  EXPORT_SLOT_WAIT_SECONDS: 120,
  /** Failed password checks per email before lock-outs start. */
  PASSWORD_FREE_FAILURES_PER_EMAIL: 5,
  /** Failed password checks per client IP before lock-outs start (an office shares one IP). */
  PASSWORD_FREE_FAILURES_PER_IP: 10,
  /** Longest lock-out, in seconds; each failure past the free ones doubles it up to this. */
  PASSWORD_MAX_LOCKOUT_SECONDS: 900,
  /** Seconds without a failure after which a key's failures are forgotten. */
  PASSWORD_FORGET_AFTER_SECONDS: 3600,
} as const;

export type LimitName = keyof typeof LIMIT_DEFAULTS;

type LimitVars = Partial<Record<LimitName, string>>;

export function limitSetting(env: Env, name: LimitName): number {
  const raw = (env as unknown as LimitVars)[name];
  const value = raw === undefined ? Number.NaN : Number(raw);
  return Number.isSafeInteger(value) && value > 0 ? value : LIMIT_DEFAULTS[name];
}

export function passwordPolicies(env: Env): { email: GuardPolicy; ip: GuardPolicy } {
  const shared = {
    maxLockoutSeconds: limitSetting(env, "PASSWORD_MAX_LOCKOUT_SECONDS"),
    forgetAfterSeconds: limitSetting(env, "PASSWORD_FORGET_AFTER_SECONDS"),
  };
  return {
    email: { freeFailures: limitSetting(env, "PASSWORD_FREE_FAILURES_PER_EMAIL"), ...shared },
    ip: { freeFailures: limitSetting(env, "PASSWORD_FREE_FAILURES_PER_IP"), ...shared },
  };
}

export function scanPolicy(env: Env): ScanPolicy {
  const percent = limitSetting(env, "ORG_SCAN_TIME_PERCENT");
  return { maxConcurrent: limitSetting(env, "ORG_CONCURRENT_SCANS"), budgetMs: (SCAN_WINDOW_MS * percent) / 100, windowMs: SCAN_WINDOW_MS };
}
