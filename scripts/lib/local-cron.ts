/**
 * wrangler.toml's cron schedule under `npm start` (issue 29, point 2): `wrangler dev
 * --test-scheduled` only serves `/__scheduled` and fires nothing on its own, so without this the
 * local service would never run its upkeep (text index, metric cells), retention, moves or export
 * removal. The runner calls `/__scheduled?cron=<expression>` at each minute an expression of
 * `[triggers] crons` matches (UTC, as Cloudflare does), and once at start for the most frequent
 * one, so a database with a backlog starts catching up at once (the upkeep then continues through
 * its queue). One call at a time: a call still running when the next minute comes is not doubled
 * (the upkeep's lease would keep two runs of a database apart anyway).
 */
import { triggerCrons } from "./wrangler-config";

/** One field of a cron expression: the values it allows. */
function field(text: string, min: number, max: number): Set<number> {
  const values = new Set<number>();
  for (const part of text.split(",")) {
    const [range, stepText] = part.split("/") as [string, string | undefined];
    const step = stepText === undefined ? 1 : Number(stepText);
    let [low, high] = range === "*" ? [min, max] : range.includes("-") ? range.split("-").map(Number) as [number, number] : [Number(range), stepText === undefined ? Number(range) : max];
    if (![low, high, step].every(Number.isInteger) || step < 1 || low < min || high > max || low > high) throw new Error(`cron field "${text}" is not understood (${min}-${max})`);
    for (let v = low; v <= high; v += step) values.add(v);
  }
  return values;
}

export interface CronSchedule {
  expression: string;
  matches: (at: Date) => boolean;
}

/**
 * A standard five-field cron expression (minute hour day-of-month month day-of-week; `*`, lists,
 * ranges, steps), matched in UTC. Day of month and day of week combine as cron does: when both
 * are restricted, either may match. Names (`MON`, `JAN`) and Cloudflare's `L`/`W`/`#` are not
 * read: wrangler.toml uses none.
 */
export function parseCron(expression: string): CronSchedule {
  const parts = expression.trim().split(/\s+/);
  if (parts.length !== 5) throw new Error(`cron "${expression}" does not have five fields`);
  const [minute, hour, day, month, weekday] = [field(parts[0]!, 0, 59), field(parts[1]!, 0, 23), field(parts[2]!, 1, 31), field(parts[3]!, 1, 12), field(parts[4]!.replace(/\b7\b/g, "0"), 0, 6)];
  const dayRestricted = parts[2] !== "*";
  const weekdayRestricted = parts[4] !== "*";
  return {
    expression,
    matches: (at) => {
      if (!minute.has(at.getUTCMinutes()) || !hour.has(at.getUTCHours()) || !month.has(at.getUTCMonth() + 1)) return false;
      const byDay = day.has(at.getUTCDate());
      const byWeekday = weekday.has(at.getUTCDay());
      return dayRestricted && weekdayRestricted ? byDay || byWeekday : byDay && byWeekday;
    },
  };
}

/** The cron expressions of wrangler.toml's `[triggers] crons` (read without loading wrangler). */
export function configuredCrons(configPath?: string): string[] {
  return triggerCrons(configPath);
}

export interface LocalCron {
  stop: () => void;
}

/**
 * Calls `${baseUrl}/__scheduled?cron=...` on the schedule until stopped. `say` reports failures
 * (the service down, a 500): the runner keeps going, as Cloudflare's would.
 */
export function startLocalCron(baseUrl: string, crons: readonly string[], say: (line: string) => void): LocalCron {
  const schedules = crons.map(parseCron);
  let stopped = false;
  let running: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  const fire = (expression: string, at: Date) => {
    running = running.then(async () => {
      if (stopped) return;
      try {
        const response = await fetch(`${baseUrl}/__scheduled?cron=${encodeURIComponent(expression)}&time=${at.getTime()}`);
        await response.arrayBuffer();
        if (!response.ok) say(`scheduled run "${expression}" answered ${response.status}`);
      } catch (error) {
        say(`scheduled run "${expression}" failed: ${error instanceof Error ? error.message : String(error)}`);
      }
    });
  };
  const tick = () => {
    if (stopped) return;
    const now = new Date();
    const minute = new Date(Math.floor(now.getTime() / 60_000) * 60_000);
    for (const schedule of schedules) if (schedule.matches(minute)) fire(schedule.expression, minute);
    timer = setTimeout(tick, 60_000 - (Date.now() % 60_000) + 50);
    timer.unref();
  };
  // At start: the most frequent schedule once (the upkeep of a database with a backlog, moves).
  const first = crons.find((c) => c.trim().split(/\s+/)[0] === "*") ?? crons[0];
  if (first) fire(first, new Date());
  timer = setTimeout(tick, 60_000 - (Date.now() % 60_000) + 50);
  timer.unref();
  return {
    stop: () => {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}
