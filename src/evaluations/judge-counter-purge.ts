/**
 * The judges' call counters are kept only as long as they are read (issue 34): the pace
 * (judge_minute_calls, one row per integration and 10-second slot) reads the last PACE_SLOTS
 * slots, the daily budget (scorer_daily_calls) the current UTC day. Without a purge both grow
 * for ever: an integration judging all day adds 8,640 slot rows a day. The hourly cron (src/index.ts,
 * beside the maintenance) removes slots older than twice the pace's window (a call's
 * clock a little behind another's still finds its slots) and days before yesterday, at most
 * COUNTER_PURGE_BATCH rows a statement and COUNTER_PURGE_STATEMENTS statements a run; what is
 * left goes at the next run. The statements scan the table (no index by time: each pace take
 * would pay for one); after a purge it holds about an hour of slots per integration in use.
 */
import type { Env } from "../env";
import { PACE_SLOT_MS, PACE_SLOTS } from "./judge-calls";

export const COUNTER_PURGE_BATCH = 5_000;
export const COUNTER_PURGE_STATEMENTS = 20;

const PURGE_SLOTS = `DELETE FROM judge_minute_calls WHERE (organization_id, integration, minute) IN
  (SELECT organization_id, integration, minute FROM judge_minute_calls WHERE minute < ?1 LIMIT ?2)`;
const PURGE_DAYS = `DELETE FROM scorer_daily_calls WHERE (scorer_id, day) IN
  (SELECT scorer_id, day FROM scorer_daily_calls WHERE day < ?1 LIMIT ?2)`;

export interface CounterPurge {
  slots: number;
  days: number;
  /** False when the run stopped at its statement budget with more left. */
  complete: boolean;
}

export async function purgeJudgeCounters(db: D1Database, nowMs: number = Date.now(), batch = COUNTER_PURGE_BATCH, statements = COUNTER_PURGE_STATEMENTS): Promise<CounterPurge> {
  const outcome: CounterPurge = { slots: 0, days: 0, complete: true };
  const oldestSlot = Math.floor(nowMs / PACE_SLOT_MS) - 2 * PACE_SLOTS;
  const oldestDay = Math.floor(nowMs / 86_400_000) - 1;
  let used = 0;
  for (const [sql, cutoff, field] of [
    [PURGE_SLOTS, oldestSlot, "slots"],
    [PURGE_DAYS, oldestDay, "days"],
  ] as const) {
    for (;;) {
      if (used >= statements) return { ...outcome, complete: false };
      used += 1;
      const removed = (await db.prepare(sql).bind(cutoff, batch).run()).meta.changes;
      outcome[field] += removed;
      if (removed < batch) break;
    }
  }
  return outcome;
}

/** The hourly cron's call (src/index.ts): a purge that stops short or fails is logged, never thrown. */
export async function purgeJudgeCountersLogged(env: Env, nowMs: number): Promise<void> {
  try {
    const counters = await purgeJudgeCounters(env.DB, nowMs);
    if (!counters.complete) console.log(`evaluations: purged ${counters.slots} judge pace slots and ${counters.days} budget days; more remain for the next run`);
  } catch (error) {
    console.error(`evaluations: could not purge the judges' counters: ${error instanceof Error ? error.message : String(error)}`);
  }
}
