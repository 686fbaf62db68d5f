/**
 * Judge integrations' API keys at rest: AES-GCM under a key derived (HKDF-SHA256) from the
 * EVALUATION_SECRET Worker secret (TOKEN_SECRET when unset). Never returned by the API, never
 * logged. Changing the secret makes stored keys unusable: the judge's calls then fail with a
 * message saying so, and an admin PUTs the integration again.
 */
import { fromBase64, randomBytes, toBase64 } from "../auth/crypto";
import type { Env } from "../env";

const keys = new Map<string, Promise<CryptoKey>>();

function sealingKey(secret: string): Promise<CryptoKey> {
  let key = keys.get(secret);
  if (!key) {
    key = (async () => {
      const material = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), "HKDF", false, ["deriveKey"]);
      return crypto.subtle.deriveKey(
        { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: new TextEncoder().encode("trace-store judge integration keys v1") },
        material,
        { name: "AES-GCM", length: 256 },
        false,
        ["encrypt", "decrypt"],
      );
    })();
    keys.set(secret, key);
  }
  return key;
}

const secretOf = (env: Env) => env.EVALUATION_SECRET || env.TOKEN_SECRET;

export async function sealKey(env: Env, plain: string): Promise<string> {
  const iv = randomBytes(12);
  const sealed = await crypto.subtle.encrypt({ name: "AES-GCM", iv }, await sealingKey(secretOf(env)), new TextEncoder().encode(plain));
  return `v1.${toBase64(iv)}.${toBase64(new Uint8Array(sealed))}`;
}

export async function unsealKey(env: Env, sealed: string): Promise<string> {
  const [version, iv, body] = sealed.split(".");
  if (version !== "v1" || !iv || !body) throw new Error("cannot unseal the integration's key (unknown format)");
  try {
    const plain = await crypto.subtle.decrypt({ name: "AES-GCM", iv: fromBase64(iv) }, await sealingKey(secretOf(env)), fromBase64(body));
    return new TextDecoder().decode(plain);
  } catch {
    throw new Error("cannot unseal the integration's key (was EVALUATION_SECRET changed?); PUT the integration again");
  }
}
