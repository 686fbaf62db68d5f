/**
 * Credentials the service must use yet never store readable (alert channels' signing secrets and
 * Slack URLs, judge integrations' API keys): AES-GCM under a key derived (HKDF-SHA256) from a
 * Worker secret, one derived key per purpose (`info`), so a value sealed for one purpose never
 * opens as another. Sealed values read `v1.<iv>.<ciphertext>`, both base64. Changing the secret
 * makes existing values unusable: each caller says what its user must do then.
 */
import { fromBase64, randomBytes, toBase64 } from "./crypto";

const keys = new Map<string, Promise<CryptoKey>>();

function sealingKey(secret: string, info: string): Promise<CryptoKey> {
  const cacheKey = `${info}\u0000${secret}`;
  let key = keys.get(cacheKey);
  if (!key) {
    key = (async () => {
      const material = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), "HKDF", false, ["deriveKey"]);
      return crypto.subtle.deriveKey(
        { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: new TextEncoder().encode(info) },
        material,
        { name: "AES-GCM", length: 256 },
        false,
        ["encrypt", "decrypt"],
      );
    })();
    keys.set(cacheKey, key);
  }
  return key;
}

export async function sealValue(secret: string, info: string, plain: string): Promise<string> {
  const iv = randomBytes(12);
  const sealed = await crypto.subtle.encrypt({ name: "AES-GCM", iv }, await sealingKey(secret, info), new TextEncoder().encode(plain));
  return `v1.${toBase64(iv)}.${toBase64(new Uint8Array(sealed))}`;
}

/** The plain value; throws `unknownFormat` or `unopenable` (a changed secret, or tampering) as the error's message. */
export async function unsealValue(secret: string, info: string, sealed: string, errors: { unknownFormat: string; unopenable: string }): Promise<string> {
  const [version, iv, body] = sealed.split(".");
  if (version !== "v1" || !iv || !body) throw new Error(errors.unknownFormat);
  try {
    const plain = await crypto.subtle.decrypt({ name: "AES-GCM", iv: fromBase64(iv) }, await sealingKey(secret, info), fromBase64(body));
    return new TextDecoder().decode(plain);
  } catch {
    throw new Error(errors.unopenable);
  }
}
