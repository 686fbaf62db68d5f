/**
 * The scan slots of one organization (issue 9, point 8): a counting semaphore in a Durable Object
 * (one per organization, so every isolate in every location shares it). A scan-class search
 * (src/search/search-cost.ts) holds a slot while it runs; an organization that already runs as
 * many scans as it may gets a 429 with `Retry-After` instead of queueing another one on the
 * shared database.
 *
 * A slot is a lease: it expires on its own after LEASE_MS, longer than D1 lets one statement
 * run (30 s), so an isolate that crashed or lost its connection mid-search never holds a slot
 * for ever, and a live search never outlives its lease. Leases are kept in memory: a Durable
 * Object stays in memory while it receives calls, and is evicted only after tens of seconds
 * without any, longer than a lease lives; an eviction can only free slots early, never keep
 * them.
 *
 * `Retry-After` is the average time recent scans of the organization held their slot (at least
 * 1 s): about when the next slot frees.
 */
import { DurableObject } from "cloudflare:workers";

/** D1 caps a statement or batch at 30 s; the lease outlives the longest search by 10 s. */
export const LEASE_MS = 40_000;

export type SlotVerdict = { granted: true; lease: string } | { granted: false; retryAfterSeconds: number };

export class ScanSlots extends DurableObject {
  private readonly leases = new Map<string, { acquiredAt: number; expiresAt: number }>();
  /** Exponential moving average of how long released leases were held, in ms. */
  private averageHoldMs = 1000;

  async acquire(maxConcurrent: number, leaseMs: number = LEASE_MS): Promise<SlotVerdict> {
    const now = Date.now();
    for (const [lease, held] of this.leases) if (held.expiresAt <= now) this.leases.delete(lease);
    if (this.leases.size >= maxConcurrent) {
      return { granted: false, retryAfterSeconds: Math.max(1, Math.ceil(this.averageHoldMs / 1000)) };
    }
    const lease = crypto.randomUUID();
    this.leases.set(lease, { acquiredAt: now, expiresAt: now + leaseMs });
    return { granted: true, lease };
  }

  async release(lease: string): Promise<void> {
    const held = this.leases.get(lease);
    if (!held) return;
    this.leases.delete(lease);
    this.averageHoldMs = 0.8 * this.averageHoldMs + 0.2 * (Date.now() - held.acquiredAt);
  }

  /** Slots in use now (for tests and operators). */
  async inUse(): Promise<number> {
    const now = Date.now();
    return [...this.leases.values()].filter((held) => held.expiresAt > now).length;
  }
}
