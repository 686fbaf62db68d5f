import { fromBase64, randomBytes, timingSafeEqual, toBase64 } from "./crypto";

/** The Workers runtime refuses PBKDF2 above 100,000 iterations. */
export const PBKDF2_ITERATIONS = 100_000;

export interface PasswordHash {
  hash: string;
  salt: string;
  iterations: number;
}

async function derive(password: string, salt: Uint8Array, iterations: number): Promise<string> {
  const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(password), "PBKDF2", false, ["deriveBits"]);
  const bits = await crypto.subtle.deriveBits({ name: "PBKDF2", hash: "SHA-256", salt, iterations }, key, 256);
  return toBase64(new Uint8Array(bits));
}

export async function hashPassword(password: string): Promise<PasswordHash> {
  const salt = randomBytes(16);
  return { hash: await derive(password, salt, PBKDF2_ITERATIONS), salt: toBase64(salt), iterations: PBKDF2_ITERATIONS };
}

export async function verifyPassword(password: string, stored: PasswordHash): Promise<boolean> {
  return timingSafeEqual(await derive(password, fromBase64(stored.salt), stored.iterations), stored.hash);
}
