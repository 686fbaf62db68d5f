/**
 * The signature of an export's download URL (contract section 10): HMAC-SHA256, under the
 * worker's TOKEN_SECRET, of the organization, the job, the file's object and the expiry. The URL
 * is then the only credential its holder needs, for that one file, until it expires; changing any
 * of them (another job, a later expiry) breaks the signature.
 */
import { signingSecret } from "../auth/token-secret";
import { timingSafeEqual, toBase64Url } from "../auth/crypto";
import type { Env } from "../env";

export interface SignedFile {
  organizationId: string;
  jobId: string;
  objectKey: string;
  /** Unix seconds. */
  expires: number;
}

async function hmac(secret: string, text: string): Promise<string> {
  const encoder = new TextEncoder();
  const key = await crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return toBase64Url(new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(text))));
}

const signedText = (file: SignedFile) => ["export-download", file.organizationId, file.jobId, file.objectKey, String(file.expires)].join("\n");

export function signDownload(env: Env, file: SignedFile): Promise<string> {
  return hmac(signingSecret(env.TOKEN_SECRET), signedText(file));
}

export async function downloadSignatureValid(env: Env, file: SignedFile, signature: string): Promise<boolean> {
  return timingSafeEqual(await signDownload(env, file), signature);
}

/** The download route of a job's file, signed (`origin`: the service's, as the request reached it). */
export async function downloadUrl(env: Env, origin: string, file: SignedFile): Promise<string> {
  const signature = await signDownload(env, file);
  return `${origin}/v2/exports/${file.jobId}/file?expires=${file.expires}&signature=${signature}`;
}
