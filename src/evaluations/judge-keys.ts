/**
 * Judge integrations' API keys at rest: AES-GCM under a key derived from the EVALUATION_SECRET
 * Worker secret (TOKEN_SECRET when unset; src/auth/sealed-values.ts). Never returned by the API,
 * never logged. Changing the secret makes stored keys unusable: the judge's calls then fail with a
 * message saying so, and an admin PUTs the integration again.
 */
import { sealValue, unsealValue } from "../auth/sealed-values";
import type { Env } from "../env";

const PURPOSE = "trace-store judge integration keys v1";

const secretOf = (env: Env) => env.EVALUATION_SECRET || env.TOKEN_SECRET;

export function sealKey(env: Env, plain: string): Promise<string> {
  return sealValue(secretOf(env), PURPOSE, plain);
}

export function unsealKey(env: Env, sealed: string): Promise<string> {
  return unsealValue(secretOf(env), PURPOSE, sealed, {
    unknownFormat: "cannot unseal the integration's key (unknown format)",
    unopenable: "cannot unseal the integration's key (was EVALUATION_SECRET changed?); PUT the integration again",
  });
}
