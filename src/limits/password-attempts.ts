/**
 * The gate in front of every password check the service makes (`/login`, HTTP Basic on any
 * route): the email's guard and the client IP's guard (password-guard.ts) must both admit the
 * check before any PBKDF2 is spent, else 429 with `Retry-After`. The 429 does not say which of
 * the two refused, and unknown emails are guarded like known ones: it tells nothing about
 * which accounts exist.
 *
 * The client IP is `CF-Connecting-IP`, which Cloudflare sets on every request (a client cannot
 * forge it). IPv6 clients are counted per /64, the block one subscriber usually holds. Without
 * the header (only in tests that call the worker directly; `wrangler dev` sets the loopback
 * address) the IP guard is skipped and the email guard alone applies.
 */
import type { Env } from "../env";
import { ApiError } from "../http/errors";
import { passwordPolicies } from "./limit-settings";
import type { GuardPolicy, GuardVerdict } from "./password-guard";
import { rememberRefusal, remainingRefusal } from "./refusal-memo";

export interface PasswordGate {
  /** Before verifying: resolves when the check may go ahead, throws a 429 otherwise. */
  admit(): Promise<void>;
  /** After a right password: takes the check back (and clears the email's failures). */
  succeeded(): Promise<void>;
  /** The check could not be made (the database failed): takes it back, clears nothing. */
  withdraw(): Promise<void>;
}

/** The key an address is counted under: IPv4 as is, IPv6 by its /64. */
export function clientKey(ip: string): string {
  const address = ip.trim().toLowerCase();
  if (!address.includes(":")) return address;
  const [head = "", tail = ""] = address.split("::");
  const headGroups = head === "" ? [] : head.split(":");
  const tailGroups = tail === "" ? [] : tail.split(":");
  const groups = address.includes("::") ? [...headGroups, ...Array(Math.max(0, 8 - headGroups.length - tailGroups.length)).fill("0"), ...tailGroups] : headGroups;
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ""))
    .join(":")}::/64`;
}

function guard(env: Env, key: string) {
  return env.PASSWORD_GUARD.get(env.PASSWORD_GUARD.idFromName(key));
}

export function tooManyFailures(retryAfterSeconds: number): ApiError {
  return new ApiError(429, `Too many failed password checks for this account or from this address; retry in ${retryAfterSeconds} s.`, {
    "Retry-After": String(retryAfterSeconds),
  });
}

export function passwordGate(env: Env, email: string, clientIp: string | undefined): PasswordGate {
  const policies = passwordPolicies(env);
  const address = clientIp ? clientKey(clientIp) : undefined;
  const emailKey = `email:${email.trim().toLowerCase()}`;
  const guarded: { key: string; memoKey: string; policy: GuardPolicy; clearOnSuccess: boolean; address?: string }[] = [
    // The email's guard may let a clean address through its lock-out (password-guard.ts), so a
    // refusal is remembered for this email and this address only.
    { key: emailKey, memoKey: `${emailKey}|${address ?? ""}`, policy: policies.email, clearOnSuccess: true, address },
  ];
  if (address) guarded.push({ key: `ip:${address}`, memoKey: `ip:${address}`, policy: policies.ip, clearOnSuccess: false });
  let verdicts: GuardVerdict[] = [];
  /** Takes back the checks the guards counted (and the addresses this check added). */
  const takeBack = () =>
    Promise.all(
      guarded.map((g, i) => {
        const verdict = verdicts[i];
        if (!verdict?.admitted) return undefined;
        return guard(env, g.key).succeeded(g.policy, false, verdict.newAddress ? g.address : undefined);
      }),
    );
  return {
    async admit() {
      // A lock-out this isolate already heard of: refused without asking the guards again.
      const known = Math.max(0, ...guarded.map((g) => remainingRefusal(g.memoKey) ?? 0));
      if (known > 0) throw tooManyFailures(known);
      verdicts = await Promise.all(guarded.map((g) => guard(env, g.key).admit(g.policy, g.address)));
      const wait = Math.max(0, ...verdicts.map((v) => (v.admitted ? 0 : v.retryAfterSeconds)));
      guarded.forEach((g, i) => {
        const verdict = verdicts[i]!;
        if (!verdict.admitted) rememberRefusal(g.memoKey, verdict.retryAfterSeconds);
      });
      if (verdicts.some((v) => !v.admitted)) {
        // The guard that admitted counted a check that will not run: take it back.
        await takeBack();
        throw tooManyFailures(wait);
      }
    },
    async succeeded() {
      await Promise.all(guarded.map((g) => guard(env, g.key).succeeded(g.policy, g.clearOnSuccess)));
    },
    async withdraw() {
      await takeBack();
    },
  };
}
