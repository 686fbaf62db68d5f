/**
 * Advances a job's parts, one database after the other, within ONE budget (a queue message's, or
 * an immediate request's: "immediate mode keeps its budget across all shards together"), and
 * copies each part's state to the catalog as it goes (job-parts.ts). Answers the parts still
 * open, for which the caller enqueues continuations.
 */
import type { Env } from "../env";
import { withinScanAdmission } from "../limits/scan-admission";
import { shardDatabase } from "../shards/shard-config";
import { type AdvanceResult, advanceJobPart } from "./advance-job";
import type { WorkBudget } from "./deletion-budgets";
import type { DeletionJob } from "./deletion-job-types";
import { shardPartState, syncPart } from "./job-parts";

export interface PartsOutcome {
  /** Parts still open after this call. */
  unfinished: string[];
  /** What each advanced part did (for the logs). */
  results: [shard: string, result: AdvanceResult][];
}

export async function advanceParts(env: Env, job: DeletionJob, shards: readonly string[], budget: WorkBudget): Promise<PartsOutcome> {
  const started = Date.now();
  let records = 0;
  let queries = 0;
  const outcome: PartsOutcome = { unfinished: [], results: [] };
  for (const [index, shard] of shards.entries()) {
    const remaining: WorkBudget = {
      maxMillis: budget.maxMillis - (Date.now() - started),
      maxRecords: budget.maxRecords - records,
      maxQueries: budget.maxQueries - queries,
    };
    if (remaining.maxMillis <= 0 || remaining.maxRecords <= 0 || remaining.maxQueries <= 2) {
      outcome.unfinished.push(...shards.slice(index));
      break;
    }
    const db = shardDatabase(env, shard);
    let result: AdvanceResult;
    try {
      const advance = () => advanceJobPart(db, job, remaining, env.DB);
      // A filter's chunks each run its search statement: admitted by its scan class, as the search is.
      result = await (job.kind === "filter" ? withinScanAdmission(env, job.organizationId, job.request.cost, advance) : advance());
    } catch (error) {
      // What committed before the failure is counted on the job before the retry.
      await syncPart(env, job.id, shard, await shardPartState(db, job.id)).catch(() => undefined);
      throw error;
    }
    // The part's reads, its chunks (with an expiry's catalog reads) and the catalog copy below.
    queries += 1 + result.stats.queries;
    records += result.stats.deleted;
    await syncPart(env, job.id, shard, { status: result.state === "unfinished" ? "running" : result.state, progress: result.progress });
    outcome.results.push([shard, result]);
    if (result.state === "unfinished") outcome.unfinished.push(shard);
  }
  return outcome;
}
