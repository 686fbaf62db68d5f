/**
 * How closely the upkeep follows the writes (issue 29; docs/search.md "Upkeep: what lags, by how
 * much, and why"). A run of a database's upkeep has a fixed part that does not shrink with the
 * writes it serves: the metric cells of a marked hour are recomputed from every trace of that
 * hour (and the day's cells from its hours), and each run reads the backfills' state. Started
 * after every write, that fixed part was paid once per write: under one client's steady ingest
 * the hour being written was re-aggregated after each request, a cost growing with the hour's
 * traces (0.05 s to over 1 s per request within the bench's first hour), and each write waited
 * behind it on D1's one writer (ingest 0.5x of a service with no upkeep behind its writes).
 *
 * So the upkeep takes the writes of a few seconds together: the message a write sends (when none
 * is pending) is delivered UPKEEP_COALESCE_SECONDS later, and a run that finds writes arrived
 * while it worked hands over to a continuation delivered that much later instead of going round
 * again at once. Writes meanwhile find the message pending and send nothing. The bound: records
 * are indexed and their hours recomputed within UPKEEP_COALESCE_SECONDS + the queue's delivery +
 * one run after their write, under any rate of writes; a backlog (a run whose budget ran out with
 * work left) still continues at once. The cron stays the safety net for a lost message.
 */
import type { Env } from "../env";

/** The default: 5 s, well within issue 29's bound of one minute of ingest for the unindexed tail. */
export const DEFAULT_COALESCE_SECONDS = 5;

/** Longest delay a queue message may carry (Cloudflare Queues: 12 hours); far above any sensible setting. */
const MAX_COALESCE_SECONDS = 60;

/** UPKEEP_COALESCE_SECONDS, or the default: "0" starts the upkeep at once after each write (the behaviour before). */
export function coalesceSeconds(env: Pick<Env, "UPKEEP_COALESCE_SECONDS">): number {
  const raw = env.UPKEEP_COALESCE_SECONDS;
  if (raw === undefined || raw.trim() === "") return DEFAULT_COALESCE_SECONDS;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) return DEFAULT_COALESCE_SECONDS;
  return Math.min(MAX_COALESCE_SECONDS, Math.floor(value));
}

/** The message that asks for a database's upkeep, delayed by the coalescing time. */
export async function sendUpkeepMessage(env: Pick<Env, "UPKEEP_QUEUE" | "UPKEEP_COALESCE_SECONDS">, shard: string, delaySeconds: number = coalesceSeconds(env)): Promise<void> {
  await env.UPKEEP_QUEUE.send({ shard }, delaySeconds > 0 ? { delaySeconds } : undefined);
}
