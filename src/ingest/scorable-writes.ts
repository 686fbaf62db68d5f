/**
 * The one hook of online evaluations in the intake (issue 34): a request notes which records of
 * which run it wrote, and src/evaluations/scoring-request.ts queues their scoring once the request
 * is answered. Ingest never waits for a scorer.
 *
 * So that a lost message cannot leave records unscored with no trace, a write to a run that has
 * (or may have) scorers also stores, in its own batch, the intake markers of its records
 * (src/evaluations/scoring-intake.ts): one row per message, not per record. Whether the run may
 * have scorers comes from the settings' per-isolate cache, looked up beside the run (usually no
 * round trip); a run without scorers writes nothing more than before. Both come through the
 * request's `scoringIntake` hooks (src/http/app-env.ts), which evaluations' middleware sets: ingest
 * sits below evaluations and never imports it.
 */
import type { Context } from "hono";
import type { AppEnv, IntakeMarker, IntakeScope } from "../http/app-env";

export function noteScorableWrite(c: Context<AppEnv>, scope: IntakeScope, ids: string[], intake?: { shard: string; markers: IntakeMarker[] }): void {
  c.set("writtenRecords", [...(c.get("writtenRecords") ?? []), { ...scope, ids, ...(intake ? { intake } : {}) }]);
}

/** Whether a write to this run stores intake markers (the settings' cache; a failed read answers yes). */
export function scoringMarks(c: Context<AppEnv>, runId: string): Promise<boolean> {
  return c.get("scoringIntake")?.mayHaveScorers(runId) ?? Promise.resolve(false);
}

/** The statement (for the write's batch) storing the markers of these records, and the markers; null without records. */
export function scorableMarkStatement(c: Context<AppEnv>, db: D1Database, scope: IntakeScope, ids: string[], nowMicros: number): { statement: D1PreparedStatement; markers: IntakeMarker[] } | null {
  if (ids.length === 0) return null;
  return c.get("scoringIntake")?.markStatement(db, scope, ids, nowMicros) ?? null;
}
