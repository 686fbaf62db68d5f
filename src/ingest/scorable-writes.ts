/**
 * The one hook of online evaluations in the intake (issue 34): a request notes which records of
 * which run it wrote, and src/evaluations/scoring-request.ts queues their scoring once the request
 * is answered. Ingest never waits for a scorer, and knows nothing of them.
 */
import type { Context } from "hono";
import type { AppEnv } from "../http/app-env";

export function noteScorableWrite(c: Context<AppEnv>, scope: { organizationId: string; projectId: string; runId: string }, ids: string[]): void {
  c.set("writtenRecords", [...(c.get("writtenRecords") ?? []), { ...scope, ids }]);
}
