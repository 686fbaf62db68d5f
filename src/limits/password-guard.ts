/**
 * The brute-force guard of one key: an email address or a client IP (issue 9, point 7). One
 * Durable Object per key holds that key's failed password checks and its lock-out, so every
 * isolate in every location sees the same count, and a burst of parallel guesses is counted one
 * by one (an object handles its calls one at a time).
 *
 * Policy (docs/limits.md, "Failed password checks"): `freeFailures` failures are free; each
 * further failure locks the key for twice as long as the last (1 s, 2 s, 4 s, ... up to
 * `maxLockoutSeconds`). A check is counted as a failure when it is admitted, before the password
 * is verified, and taken back if the password was right: so a guesser who sends many checks at
 * once is stopped at the limit instead of after it, and nobody already locked out costs a PBKDF2.
 * A right password for the email clears that email's count. Failures are forgotten after
 * `forgetAfterSeconds` without one.
 *
 * Proof of possession (issue 19 point 11): a lock-out alone would let anyone who knows an email
 * keep its owner out with one wrong guess per lock period. So an email's guard also remembers the
 * client addresses its failures came from, and while locked still admits a check from an address
 * that has not failed for it (one at a time: the check is counted as that address's failure until
 * it proves right). A guesser then needs a fresh address for every guess against a locked email,
 * each guess also lengthens the lock, and once MAX_FAILED_ADDRESSES addresses have failed the lock
 * holds for every address (the guesser has that many addresses: availability gives way).
 *
 * The state is stored (one small row per key): a lock-out survives the object being evicted. An
 * alarm deletes it once forgotten, so keys seen once do not accumulate.
 */
import { DurableObject } from "cloudflare:workers";

export interface GuardPolicy {
  freeFailures: number;
  maxLockoutSeconds: number;
  forgetAfterSeconds: number;
}

/** `newAddress`: this check added its address to the failed ones (take it back with `succeeded`). */
export type GuardVerdict = { admitted: true; newAddress?: boolean } | { admitted: false; retryAfterSeconds: number };

interface GuardState {
  failures: number;
  lastFailureAt: number;
  lockedUntil: number;
  /** The client addresses (password-attempts.ts `clientKey`) that failed checks came from. */
  failedFrom: string[];
}

const EMPTY: GuardState = { failures: 0, lastFailureAt: 0, lockedUntil: 0, failedFrom: [] };

/** How many failed addresses an email's lock-out still lets others through (see above). */
export const MAX_FAILED_ADDRESSES = 50;

/** How long `failures` failures lock the key (0 while they are free). */
export function lockoutMs(failures: number, policy: GuardPolicy): number {
  const over = failures - policy.freeFailures;
  if (over <= 0) return 0;
  // 2 ** 30 s is past any cap: stop doubling before the number grows meaningless.
  return Math.min(policy.maxLockoutSeconds, 2 ** Math.min(over - 1, 30)) * 1000;
}

export class PasswordGuard extends DurableObject {
  private state: GuardState = EMPTY;

  constructor(ctx: DurableObjectState, env: unknown) {
    super(ctx, env as never);
    ctx.blockConcurrencyWhile(async () => {
      const stored = await ctx.storage.get<GuardState>("state");
      // State stored before addresses were kept has none.
      this.state = stored ? { ...stored, failedFrom: stored.failedFrom ?? [] } : EMPTY;
    });
  }

  /**
   * Admits one password check (counted as a failure until `succeeded`), or says how long to wait.
   * `address`: the client's, for an email's guard (lets a clean address through a lock-out).
   */
  async admit(policy: GuardPolicy, address?: string): Promise<GuardVerdict> {
    const now = Date.now();
    let { failures, lockedUntil, failedFrom } = this.state;
    if (failures > 0 && now - this.state.lastFailureAt > policy.forgetAfterSeconds * 1000) {
      failures = 0;
      lockedUntil = 0;
      failedFrom = [];
    }
    const added = address !== undefined && !failedFrom.includes(address) ? address : undefined;
    const mayProvePossession = added !== undefined && failedFrom.length < MAX_FAILED_ADDRESSES;
    if (lockedUntil > now && !mayProvePossession) return { admitted: false, retryAfterSeconds: Math.max(1, Math.ceil((lockedUntil - now) / 1000)) };
    failures += 1;
    const lock = lockoutMs(failures, policy);
    // A check admitted through a lock-out lengthens it like any other failure until it proves right.
    const until = Math.max(lockedUntil, lock > 0 ? now + lock : 0);
    await this.save({ failures, lastFailureAt: now, lockedUntil: until, failedFrom: added === undefined ? failedFrom : [...failedFrom, added] }, policy);
    return { admitted: true, newAddress: added !== undefined };
  }

  /**
   * The admitted check was right (or could not be made). `clear`: forget every failure (the
   * email's owner proved the password); otherwise take back only this check's count (an IP shared
   * by many users keeps the failures of the others), and `address` when the check had added it.
   */
  async succeeded(policy: GuardPolicy, clear: boolean, address?: string): Promise<void> {
    if (clear) {
      await this.save(EMPTY, policy);
      return;
    }
    const failures = Math.max(0, this.state.failures - 1);
    const lock = lockoutMs(failures, policy);
    const failedFrom = address === undefined ? this.state.failedFrom : this.state.failedFrom.filter((a) => a !== address);
    await this.save({ failures, lastFailureAt: this.state.lastFailureAt, lockedUntil: lock > 0 ? this.state.lastFailureAt + lock : 0, failedFrom }, policy);
  }

  override async alarm(): Promise<void> {
    this.state = EMPTY;
    await this.ctx.storage.deleteAll();
  }

  private async save(state: GuardState, policy: GuardPolicy): Promise<void> {
    this.state = state;
    if (state.failures === 0) {
      await this.ctx.storage.deleteAll();
      return;
    }
    await this.ctx.storage.put("state", state);
    await this.ctx.storage.setAlarm(state.lastFailureAt + policy.forgetAfterSeconds * 1000);
  }
}
