/**
 * The scan slots of one organization (issue 9, point 8), in a Durable Object (one per
 * organization, so every isolate in every location shares it). A scan-class search
 * (src/search/search-cost.ts) must get a slot before it runs, and gets none, a 429 with
 * `Retry-After`, when its organization
 *
 * - already runs `maxConcurrent` scans, or
 * - has used its scan time: scans that held slots for `budgetMs` in total over the last
 *   `windowMs` (running ones counted as far as they got).
 *
 * A database runs one query at a time, so a bound on concurrency alone still lets one
 * organization keep it busy with scans back to back; the time budget is what bounds the share
 * of the database an organization's scans may take (10% by default), whatever their number.
 *
 * A slot is a lease: it expires on its own after LEASE_MS, longer than D1 lets one statement
 * run (30 s), so an isolate that crashed or lost its connection mid-search never holds a slot
 * for ever (its whole lease counts as used time), and a live search never outlives its lease.
 * Leases and usage are kept in memory: a Durable Object stays in memory while it receives calls
 * and is evicted only after tens of seconds without any, longer than a lease lives and about as
 * long as the window; an eviction can only free slots early, never keep them.
 */
import { DurableObject } from "cloudflare:workers";

/** D1 caps a statement or batch at 30 s; the lease outlives the longest search by 10 s. */
export const LEASE_MS = 40_000;

export interface ScanPolicy {
  maxConcurrent: number;
  /** Scan time an organization may use per window, in ms. */
  budgetMs: number;
  windowMs: number;
  leaseMs?: number;
}

export type SlotVerdict = { granted: true; lease: string } | { granted: false; retryAfterSeconds: number; reason: "concurrency" | "time" };

interface Usage {
  endedAt: number;
  ms: number;
}

const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

export class ScanSlots extends DurableObject {
  private readonly leases = new Map<string, { acquiredAt: number; expiresAt: number }>();
  /** Scans that ended (released or expired), oldest first. */
  private readonly usage: Usage[] = [];
  /** Exponential moving average of how long released leases were held, in ms. */
  private averageHoldMs = 1000;

  async acquire(policy: ScanPolicy): Promise<SlotVerdict> {
    const now = Date.now();
    for (const [lease, held] of this.leases) {
      if (held.expiresAt > now) continue;
      this.leases.delete(lease);
      this.usage.push({ endedAt: held.expiresAt, ms: held.expiresAt - held.acquiredAt });
    }
    while (this.usage.length > 0 && this.usage[0]!.endedAt <= now - policy.windowMs) this.usage.shift();
    if (this.leases.size >= policy.maxConcurrent) return { granted: false, retryAfterSeconds: seconds(this.averageHoldMs), reason: "concurrency" };
    let used = 0;
    for (const ended of this.usage) used += ended.ms;
    for (const held of this.leases.values()) used += now - held.acquiredAt;
    if (used >= policy.budgetMs) return { granted: false, retryAfterSeconds: seconds(this.timeUntilBelow(policy, used, now)), reason: "time" };
    const lease = crypto.randomUUID();
    this.leases.set(lease, { acquiredAt: now, expiresAt: now + (policy.leaseMs ?? LEASE_MS) });
    return { granted: true, lease };
  }

  async release(lease: string): Promise<void> {
    const held = this.leases.get(lease);
    if (!held) return;
    this.leases.delete(lease);
    const now = Date.now();
    this.usage.push({ endedAt: now, ms: now - held.acquiredAt });
    this.averageHoldMs = 0.8 * this.averageHoldMs + 0.2 * (now - held.acquiredAt);
  }

  /** Slots in use now (for tests and operators). */
  async inUse(): Promise<number> {
    const now = Date.now();
    return [...this.leases.values()].filter((held) => held.expiresAt > now).length;
  }

  /** When enough of the used time has left the window for a scan to be admitted again. */
  private timeUntilBelow(policy: ScanPolicy, used: number, now: number): number {
    let remaining = used;
    for (const ended of this.usage) {
      remaining -= ended.ms;
      if (remaining < policy.budgetMs) return ended.endedAt + policy.windowMs - now;
    }
    // Only running scans are over the budget: about when one of them ends.
    return this.averageHoldMs;
  }
}
