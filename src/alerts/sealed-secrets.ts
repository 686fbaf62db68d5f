/**
 * Channel credentials at rest: a webhook's signing secret and a Slack incoming-webhook URL (the
 * URL is the credential) must be usable by the delivery (HMAC needs the secret itself, so a hash
 * will not do) yet never readable from a copy of the database. They are sealed with AES-GCM under
 * a key derived (HKDF-SHA256) from the worker's TOKEN_SECRET, and never returned by the API nor
 * logged. A decision (docs/alerts.md): changing TOKEN_SECRET makes existing channels unusable
 * (their deliveries fail with "cannot unseal"); re-create them.
 */
import { fromBase64, randomBytes, toBase64 } from "../auth/crypto";

const keys = new Map<string, Promise<CryptoKey>>();

function sealingKey(secret: string): Promise<CryptoKey> {
  let key = keys.get(secret);
  if (!key) {
    key = (async () => {
      const material = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), "HKDF", false, ["deriveKey"]);
      return crypto.subtle.deriveKey(
        { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: new TextEncoder().encode("trace-store alerts channel credentials v1") },
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

/** `v1.<iv>.<ciphertext>`, both base64. */
export async function seal(secret: string, plain: string): Promise<string> {
  const iv = randomBytes(12);
  const sealed = await crypto.subtle.encrypt({ name: "AES-GCM", iv }, await sealingKey(secret), new TextEncoder().encode(plain));
  return `v1.${toBase64(iv)}.${toBase64(new Uint8Array(sealed))}`;
}

export async function unseal(secret: string, sealed: string): Promise<string> {
  const [version, iv, body] = sealed.split(".");
  if (version !== "v1" || !iv || !body) throw new Error("cannot unseal the channel's credential (unknown format)");
  try {
    const plain = await crypto.subtle.decrypt({ name: "AES-GCM", iv: fromBase64(iv) }, await sealingKey(secret), fromBase64(body));
    return new TextDecoder().decode(plain);
  } catch {
    throw new Error("cannot unseal the channel's credential (was TOKEN_SECRET changed since the channel was created?)");
  }
}
