/**
 * Worker vars that lift the per-organization scan admission (src/limits/scan-admission.ts) for
 * benches that measure what the database does rather than the limits: 1,000 slots, and a time
 * share of 100% for each of them (the share counts every running scan, so 100% alone would
 * still refuse one client's back-to-back scans).
 */
const SLOTS = 1000;

export const SCAN_ADMISSION_OFF = {
  ORG_CONCURRENT_SCANS: String(SLOTS),
  ORG_SCAN_TIME_PERCENT: String(100 * SLOTS),
} as const;
