/**
 * The upkeep of databases, from the queue and from the cron (issue 29, point 1): a run takes the
 * database's lease (or leaves the work to the run that holds it), works through chunks
 * (upkeep-run.ts), then releases the lease when caught up or hands over to one continuation
 * message. The queue's messages come from writes (upkeep-request.ts) and continuations; the cron
 * runs every database as a safety net (a lost message, a queue down, records older than the
 * upkeep), and hands what it leaves to the queue as well.
 *
 * A failing chunk: the lease is freed, the failure is counted on the database's row and logged
 * with the database and its watermarks, and the message is retried with a growing delay
 * (upkeep-consumer.ts). Each database has its own messages and lease, so one that keeps failing
 * holds up none of the others.
 */
import type { Env } from "../env";
import { allRecordDatabases, shardDatabase } from "../shards/shard-config";
import { handOver, releaseCaughtUp, releaseFailed, takeLease } from "./upkeep-lease";
import { coalesceSeconds, sendUpkeepMessage } from "./upkeep-pace";
import { CRON_BUDGET_MS, MESSAGE_BUDGET_MS, type UpkeepProgress, upkeepChunks, upkeepWatermarks } from "./upkeep-run";

export type UpkeepOutcome =
  /** Another run holds the database's lease: the work is its. */
  | { state: "busy" }
  | { state: "caught-up"; progress: UpkeepProgress }
  /** The budget was spent with work left: a continuation message was sent. */
  | { state: "continued"; progress: UpkeepProgress }
  /**
   * Caught up with what it saw, but writes asked for upkeep meanwhile: a continuation message was
   * sent, delivered UPKEEP_COALESCE_SECONDS later so that it takes the writes of those seconds
   * together (upkeep-pace.ts).
   */
  | { state: "deferred"; progress: UpkeepProgress };

export class UpkeepFailure extends Error {
  constructor(
    readonly shard: string,
    readonly watermarks: string,
    cause: unknown,
  ) {
    super(`upkeep of ${shard} failed (${watermarks}): ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = "UpkeepFailure";
  }
}

/** One run of one database within `budgetMs`. Throws UpkeepFailure when a chunk fails. */
export async function runUpkeep(env: Env, shard: string, budgetMs: number = MESSAGE_BUDGET_MS): Promise<UpkeepOutcome> {
  const db = shardDatabase(env, shard);
  const lease = await takeLease(db);
  if (!lease) return { state: "busy" };
  const started = Date.now();
  const coalesce = coalesceSeconds(env);
  try {
    for (;;) {
      const progress = await upkeepChunks(db, { budgetMs: budgetMs - (Date.now() - started) });
      if (progress.caughtUp) {
        if (await releaseCaughtUp(lease)) return { state: "caught-up", progress };
        // A write asked for upkeep since: its records may be past what the chunks saw. Writes are
        // still arriving, so their upkeep is taken together a few seconds on (upkeep-pace.ts);
        // with no coalescing, at once.
        if (coalesce > 0) {
          await handOver(lease);
          await sendUpkeepMessage(env, shard, coalesce);
          return { state: "deferred", progress };
        }
        if (Date.now() - started < budgetMs) continue;
      }
      await handOver(lease);
      await sendUpkeepMessage(env, shard, 0);
      return { state: "continued", progress };
    }
  } catch (error) {
    const watermarks = await upkeepWatermarks(db);
    const failure = new UpkeepFailure(shard, watermarks, error);
    await releaseFailed(lease, failure.message).catch(() => undefined);
    throw failure;
  }
}

/** The cron's safety net: a run of every database that holds records, one after the other. */
export async function upkeepEverywhere(env: Env, budgetMs: number = CRON_BUDGET_MS): Promise<void> {
  for (const shard of allRecordDatabases(env)) {
    try {
      const outcome = await runUpkeep(env, shard, budgetMs);
      if (outcome.state === "continued") console.log(`upkeep of ${shard} (cron): ${describe(outcome.progress)}; continues through the upkeep queue`);
    } catch (error) {
      // One database down must not keep the others from their upkeep.
      console.error(error instanceof Error ? error.message : String(error));
    }
  }
}

export function describe(progress: UpkeepProgress): string {
  return `indexed ${progress.indexedRids} rids (${Number.isFinite(progress.unindexed) ? progress.unindexed : "?"} left), recomputed ${progress.hours} marked hours in ${progress.chunks} chunks`;
}
