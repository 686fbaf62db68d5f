/**
 * The secret that signs bearer tokens, refused when it could be guessed. A missing secret, one
 * shorter than 32 bytes, or the placeholder of `.dev.vars.example` (public in the repository, so
 * anyone could forge tokens with it) turns bearer tokens off: /login and /login/api_key answer
 * 503 before checking any credential, presented tokens are a 503 too, and the worker logs once
 * per isolate what is wrong and how to fix it. API keys and HTTP Basic keep working.
 */
import { ApiError } from "../http/errors";

/** The placeholder in `.dev.vars.example` (test/token-secret.test.ts keeps the two equal). */
export const EXAMPLE_TOKEN_SECRET = "change-me-to-a-long-random-string";

/** HS256 wants a key at least as long as its 256-bit output. */
export const MIN_TOKEN_SECRET_BYTES = 32;

/** What is wrong with a configured secret, or undefined when it may sign tokens. */
export function tokenSecretProblem(secret: string | undefined): string | undefined {
  if (secret === undefined || secret === "") return "TOKEN_SECRET is not set";
  if (secret.trim() === EXAMPLE_TOKEN_SECRET) return "TOKEN_SECRET is still the placeholder of .dev.vars.example";
  const bytes = new TextEncoder().encode(secret).byteLength;
  if (bytes < MIN_TOKEN_SECRET_BYTES) return `TOKEN_SECRET is ${bytes} bytes long; it needs at least ${MIN_TOKEN_SECRET_BYTES}`;
  return undefined;
}

const logged = new Set<string>();

/** The secret, or a 503 (logged once per isolate and problem) when bearer tokens must stay off. */
export function signingSecret(secret: string | undefined): string {
  const problem = tokenSecretProblem(secret);
  if (problem === undefined) return secret!;
  if (!logged.has(problem)) {
    logged.add(problem);
    console.error(
      `Bearer tokens are disabled: ${problem}. Set a random secret of at least ${MIN_TOKEN_SECRET_BYTES} bytes: ` +
        "`openssl rand -base64 48 | npx wrangler secret put TOKEN_SECRET` (locally: TOKEN_SECRET in .dev.vars).",
    );
  }
  return unavailable();
}

function unavailable(): never {
  throw new ApiError(503, "Bearer tokens are unavailable: the server's token secret is not configured. Use an API key, or ask the operator to set TOKEN_SECRET.");
}
