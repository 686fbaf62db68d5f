/**
 * Starting the upkeep of a database after a write (issue 29, point 1): every write that leaves
 * derived work behind (records not yet in the text index, hours marked for recomputation) asks
 * for the upkeep of THAT database. The request is one tiny UPDATE of the database's
 * `upkeep_state` row (migration shard 0014), run after the answer is sent (waitUntil), so ingest
 * pays no round trip for it: it raises `requested_seq` (a run in progress sees it and runs again
 * before stopping) and, only when no message is pending (`pending_since` NULL, or older than
 * PENDING_STALE_MS: the chain died with its isolate), marks one pending and sends the one
 * message. So however many writes arrive, a database has at most one message on its way: the
 * upkeep is coalesced per database, not one run per write. The message is delivered
 * UPKEEP_COALESCE_SECONDS later (upkeep-pace.ts), so the writes of those seconds share one run.
 */
import type { MiddlewareHandler } from "hono";
import type { Env } from "../env";
import type { AppEnv } from "../http/app-env";
import { shardDatabase } from "../shards/shard-config";
import { sendUpkeepMessage } from "./upkeep-pace";

/**
 * A pending mark older than this is taken for a lost chain (a message that never arrived, a run
 * whose isolate died): the next write sends a message again. Every run refreshes the mark when it
 * hands over to its continuation, so a live chain never looks stale: a run lasts at most
 * MESSAGE_BUDGET_MS (upkeep-run.ts), far under this.
 */
export const PENDING_STALE_MS = 120_000;

/** SET's right-hand sides read the row as it was, so both CASEs decide on the same old mark. */
const REQUEST_SQL = `UPDATE upkeep_state SET requested_seq = requested_seq + 1,
    pending_token = CASE WHEN pending_since IS NULL OR pending_since < ?2 THEN ?3 ELSE pending_token END,
    pending_since = CASE WHEN pending_since IS NULL OR pending_since < ?2 THEN ?1 ELSE pending_since END
  WHERE id = 1 RETURNING pending_token = ?3 AS send`;

/**
 * Asks for the upkeep of one database: records the request and sends the message when none is
 * pending. Whether a message was sent.
 */
export async function requestUpkeep(env: Env, shard: string, now: number = Date.now()): Promise<boolean> {
  const row = await shardDatabase(env, shard).prepare(REQUEST_SQL).bind(now, now - PENDING_STALE_MS, crypto.randomUUID()).first<{ send: number }>();
  if (!row?.send) return false;
  await sendUpkeepMessage(env, shard);
  return true;
}

/**
 * requestUpkeep for each database, after the answer (waitUntil); a failure is logged, never the
 * request's: the cron catches up what a lost request leaves behind.
 */
export function requestUpkeepAfter(env: Env, shards: Iterable<string>, waitUntil: (work: Promise<unknown>) => void): void {
  for (const shard of shards) {
    waitUntil(requestUpkeep(env, shard).catch((error) => console.error(`upkeep: could not request the upkeep of ${shard}: ${error instanceof Error ? error.message : String(error)}`)));
  }
}

/**
 * Middleware: once a request that wrote records is answered, the upkeep of each database it wrote
 * to is requested (src/shards/project-shard.ts notes them in `writtenShards`).
 */
export const upkeepAfterWrites: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  // "false": only the cron runs the upkeep (the behaviour before issue 29; the upkeep bench's baseline).
  if (c.env.UPKEEP_AFTER_WRITES === "false") return;
  const written = c.get("writtenShards");
  if (!written || written.size === 0) return;
  let waitUntil: (work: Promise<unknown>) => void;
  try {
    const ctx = c.executionCtx;
    waitUntil = (work) => ctx.waitUntil(work);
  } catch {
    return; // No execution context (outside a request): the cron catches up.
  }
  requestUpkeepAfter(c.env, written, waitUntil);
};
