/** Bindings of the worker (wrangler.toml) and its secrets (.dev.vars / `wrangler secret put`). */
export interface DeletionMessage {
  /** The job to advance; the selector and progress live in the job row, never in the message. */
  jobId: string;
}

declare global {
  namespace Cloudflare {
    interface Env {
      DB: D1Database;
      DELETION_QUEUE: Queue<DeletionMessage>;
      /** HS256 secret for bearer tokens. */
      TOKEN_SECRET: string;
      /** Bearer token lifetime in seconds (default one day). */
      TOKEN_TTL_SECONDS?: string;
    }
  }
}

export type Env = Cloudflare.Env;
