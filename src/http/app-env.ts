import type { Env } from "../env";

/** Who is calling: a user of exactly one organization. */
export interface Principal {
  userId: string;
  organizationId: string;
  role: "admin" | "member";
  email: string;
  /** Set when the caller presented a bearer token: the token's id and expiry (seconds), for logout. */
  token?: { id: string; expiresAt: number };
}

/** Hono's environment for every router of the service. */
export interface AppEnv {
  Bindings: Env;
  Variables: {
    requestId: string;
    principal: Principal;
    /** The databases this request wrote records to: their upkeep is requested once it is answered (src/upkeep). */
    writtenShards?: Set<string>;
    /** The records this request wrote, per run: their scoring is queued once it is answered (src/evaluations). */
    writtenRecords?: {
      organizationId: string;
      projectId: string;
      runId: string;
      ids: string[];
      /** The markers the write stored with these records (src/evaluations/scoring-intake.ts): one message each. */
      intake?: { shard: string; markers: { id: string; ids: string[] }[] };
    }[];
  };
}
