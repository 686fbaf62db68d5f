/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com, contract section 16): headers
 * `webhook-id`, `webhook-timestamp` (seconds) and `webhook-signature` = `v1,` + base64 of
 * HMAC-SHA256(`<id>.<timestamp>.<body>`) keyed with the secret's bytes (the base64 after
 * `whsec_`). Any Standard Webhooks library verifies them (test/node/alerts-delivery.test.ts uses
 * the `standardwebhooks` package).
 */
import { fromBase64, randomBytes, toBase64 } from "../auth/crypto";

const PREFIX = "whsec_";

/** A new signing secret: 32 random bytes, as the specification's libraries write them. */
export function newSigningSecret(): string {
  return `${PREFIX}${toBase64(randomBytes(32))}`;
}

export async function signatureOf(secret: string, id: string, timestampSeconds: number, body: string): Promise<string> {
  const keyBytes = fromBase64(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret);
  const key = await crypto.subtle.importKey("raw", keyBytes, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(`${id}.${timestampSeconds}.${body}`));
  return `v1,${toBase64(new Uint8Array(mac))}`;
}

export async function signedHeaders(secret: string, id: string, timestampSeconds: number, body: string): Promise<Record<string, string>> {
  return {
    "webhook-id": id,
    "webhook-timestamp": String(timestampSeconds),
    "webhook-signature": await signatureOf(secret, id, timestampSeconds, body),
  };
}
