/**
 * The worker's `scheduled` handler: the cron triggers of wrangler.toml. Every run purges what
 * expired (purge-expired.ts). Locally: `curl "http://127.0.0.1:8787/cdn-cgi/handler/scheduled"`
 * while `npm start` runs (README, "Scheduled maintenance").
 */
import { nowMicros } from "../db/client";
import type { Env } from "../env";
import { purgeExpired } from "./purge-expired";

export async function runScheduledMaintenance(env: Env, scheduledTime: number = Date.now()): Promise<void> {
  const outcome = await purgeExpired(env.DB, Math.min(nowMicros(), scheduledTime * 1000));
  if (outcome.patches > 0 || outcome.tombstones > 0 || !outcome.complete) {
    console.log(
      `maintenance: purged ${outcome.patches} expired held updates and ${outcome.tombstones} expired tombstones${outcome.complete ? "" : "; more remain for the next run"}`,
    );
  }
}
