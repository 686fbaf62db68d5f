/**
 * Channel credentials at rest: a webhook's signing secret and a Slack incoming-webhook URL (the
 * URL is the credential) must be usable by the delivery (HMAC needs the secret itself, so a hash
 * will not do) yet never readable from a copy of the database. They are sealed with AES-GCM under
 * a key derived from the worker's TOKEN_SECRET (src/auth/sealed-values.ts), and never returned by
 * the API nor logged. A decision (docs/alerts.md): changing TOKEN_SECRET makes existing channels
 * unusable (their deliveries fail with "cannot unseal"); re-create them.
 */
import { sealValue, unsealValue } from "../auth/sealed-values";

const PURPOSE = "trace-store alerts channel credentials v1";

/** `v1.<iv>.<ciphertext>`, both base64. */
export function seal(secret: string, plain: string): Promise<string> {
  return sealValue(secret, PURPOSE, plain);
}

export function unseal(secret: string, sealed: string): Promise<string> {
  return unsealValue(secret, PURPOSE, sealed, {
    unknownFormat: "cannot unseal the channel's credential (unknown format)",
    unopenable: "cannot unseal the channel's credential (was TOKEN_SECRET changed since the channel was created?)",
  });
}
