/**
 * The judges' call counters do not grow for ever (issue 34): the hourly cron removes the
 * pace's 10-second slots older than the pace reads and the budget's days before yesterday,
 * bounded per run, and what the pace and the budget still read stays and still paces.
 */
import { createExecutionContext, createScheduledController, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { PACE_SLOT_MS, PACE_SLOTS, takePace } from "../src/evaluations/judge-calls";
import { purgeJudgeCounters } from "../src/evaluations/judge-counter-purge";
import worker from "../src/index";

const slotsOf = async (org: string) =>
  (await env.DB.prepare("SELECT minute FROM judge_minute_calls WHERE organization_id = ?1 ORDER BY minute").bind(org).all<{ minute: number }>()).results.map((r) => r.minute);

describe("purging the judges' counters", () => {
  it("removes slots older than the pace's window and old budget days, bounded per run, and keeps pacing", async () => {
    const org = `org-${crypto.randomUUID()}`;
    const now = Date.now();
    const slot = Math.floor(now / PACE_SLOT_MS);
    // A day of calls ago, an hour ago, and the last minute (3 calls, the limit below).
    const old = [slot - 8_640, slot - 360, slot - 359, slot - 2 * PACE_SLOTS - 1];
    const recent = [slot - 5, slot - 2, slot];
    const scorer = `scorer-${crypto.randomUUID()}`;
    const day = Math.floor(now / 86_400_000);
    await env.DB.batch([
      ...old.map((m) => env.DB.prepare("INSERT INTO judge_minute_calls (organization_id, integration, minute, calls) VALUES (?1, 'custom', ?2, 5)").bind(org, m)),
      ...recent.map((m) => env.DB.prepare("INSERT INTO judge_minute_calls (organization_id, integration, minute, calls) VALUES (?1, 'custom', ?2, 1)").bind(org, m)),
      ...[day - 30, day - 2, day - 1, day].map((d) => env.DB.prepare("INSERT INTO scorer_daily_calls (scorer_id, day, calls) VALUES (?1, ?2, 7)").bind(scorer, d)),
    ]);
    // At most 2 rows a statement and 2 statements a run: the run stops with slots left.
    const first = await purgeJudgeCounters(env.DB, now, 2, 2);
    expect(first).toEqual({ slots: 4, days: 0, complete: false });
    expect(await slotsOf(org)).toEqual(recent);
    const second = await purgeJudgeCounters(env.DB, now);
    expect(second).toMatchObject({ days: 2, complete: true });
    expect(await slotsOf(org)).toEqual(recent);
    const days = await env.DB.prepare("SELECT day FROM scorer_daily_calls WHERE scorer_id = ?1 ORDER BY day").bind(scorer).all<{ day: number }>();
    expect(days.results.map((r) => r.day)).toEqual([day - 1, day]);
    // The window's calls are still counted: at 3 per minute, no fourth call now.
    expect(await takePace(env.DB, org, "custom", now, 1, 3)).toBe(false);
    expect(await takePace(env.DB, org, "custom", now, 1, 4)).toBe(true);
  });

  it("runs in the hourly cron, not the minutely one", async () => {
    const org = `org-${crypto.randomUUID()}`;
    const slot = Math.floor(Date.now() / PACE_SLOT_MS);
    await env.DB.batch([slot - 1_000, slot].map((m) => env.DB.prepare("INSERT INTO judge_minute_calls (organization_id, integration, minute, calls) VALUES (?1, 'openai', ?2, 1)").bind(org, m)));
    const cron = async (expression: string) => {
      const ctx = createExecutionContext();
      await worker.scheduled(createScheduledController({ scheduledTime: new Date(), cron: expression }), env, ctx);
      await waitOnExecutionContext(ctx);
    };
    await cron("* * * * *");
    expect(await slotsOf(org)).toEqual([slot - 1_000, slot]);
    await cron("17 * * * *");
    expect(await slotsOf(org)).toEqual([slot]);
  });
});
