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

/** The scoring messages one write will send (at most 500 record ids each), each with its marker's id. */
export interface IntakeMarker {
  id: string;
  ids: string[];
}

export interface IntakeScope {
  organizationId: string;
  projectId: string;
  runId: string;
}

/**
 * What the intake asks of online evaluations while it writes (issue 34): whether a run may have
 * scorers, and the statement that stores a write's intake markers in its own batch. Set on every
 * request by src/evaluations/scoring-request.ts's middleware, so that ingest, a lower layer, never
 * imports evaluations (docs/architecture.md): without it a write stores no markers.
 */
export interface ScoringIntake {
  mayHaveScorers(runId: string): Promise<boolean>;
  /** `ids` is never empty (src/ingest/scorable-writes.ts asks only for written records). */
  markStatement(db: D1Database, scope: IntakeScope, ids: string[], nowMicros: number): { statement: D1PreparedStatement; markers: IntakeMarker[] };
}

/** Hono's environment for every router of the service. */
export interface AppEnv {
  Bindings: Env;
  Variables: {
    requestId: string;
    principal: Principal;
    /** The databases this request wrote records to: their upkeep is requested once it is answered (src/upkeep). */
    writtenShards?: Set<string>;
    /** The request's `x-d1-bookmark`, by shard (src/shards/project-shard.ts). */
    sentBookmarks?: Map<string, string>;
    /** The answer's `x-d1-bookmark`, by shard: the sent ones, updated by the request's sessions. */
    answerBookmarks?: Map<string, string>;
    /** The records this request wrote, per run: their scoring is queued once it is answered (src/evaluations). */
    writtenRecords?: {
      organizationId: string;
      projectId: string;
      runId: string;
      ids: string[];
      /** The markers the write stored with these records (src/evaluations/scoring-intake.ts): one message each. */
      intake?: { shard: string; markers: IntakeMarker[] };
    }[];
    /** Online evaluations' hooks for the intake's writes (ScoringIntake); absent, nothing is marked. */
    scoringIntake?: ScoringIntake;
  };
}
