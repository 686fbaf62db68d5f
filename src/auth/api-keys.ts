import { randomBytes, sha256Hex, toBase64Url } from "./crypto";

/** Keys carry a recognisable prefix (so secret scanners can find leaked ones) and 256 random bits. */
export const API_KEY_PREFIX = "tsk_";

export function generateApiKey(): string {
  return API_KEY_PREFIX + toBase64Url(randomBytes(32));
}

/** Keys have 256 bits of entropy, so one SHA-256 (no salt, no stretching) is a safe stored form. */
export function hashApiKey(key: string): Promise<string> {
  return sha256Hex(key);
}
