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
 * The state is stored (one small row per key): a lock-out survives the object being evicted. An
 * alarm deletes it once forgotten, so keys seen once do not accumulate.
 */
import { DurableObject } from "cloudflare:workers";

export interface GuardPolicy {
  freeFailures: number;
  maxLockoutSeconds: number;
  forgetAfterSeconds: number;
}

export type GuardVerdict = { admitted: true } | { admitted: false; retryAfterSeconds: number };

interface GuardState {
  failures: number;
  lastFailureAt: number;
  lockedUntil: number;
}

const EMPTY: GuardState = { failures: 0, lastFailureAt: 0, lockedUntil: 0 };

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
      this.state = (await ctx.storage.get<GuardState>("state")) ?? EMPTY;
    });
  }

  /** Admits one password check (counted as a failure until `succeeded`), or says how long to wait. */
  async admit(policy: GuardPolicy): Promise<GuardVerdict> {
    const now = Date.now();
    let { failures, lockedUntil } = this.state;
    if (failures > 0 && now - this.state.lastFailureAt > policy.forgetAfterSeconds * 1000) {
      failures = 0;
      lockedUntil = 0;
    }
    if (lockedUntil > now) return { admitted: false, retryAfterSeconds: Math.max(1, Math.ceil((lockedUntil - now) / 1000)) };
    failures += 1;
    const lock = lockoutMs(failures, policy);
    await this.save({ failures, lastFailureAt: now, lockedUntil: lock > 0 ? now + lock : 0 }, policy);
    return { admitted: true };
  }

  /**
   * The admitted check was right. `clear`: forget every failure (the email's owner proved the
   * password); otherwise take back only this check's count (an IP shared by many users keeps
   * the failures of the others).
   */
  async succeeded(policy: GuardPolicy, clear: boolean): Promise<void> {
    const failures = clear ? 0 : Math.max(0, this.state.failures - 1);
    const lock = lockoutMs(failures, policy);
    await this.save({ failures, lastFailureAt: this.state.lastFailureAt, lockedUntil: lock > 0 ? this.state.lastFailureAt + lock : 0 }, policy);
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
