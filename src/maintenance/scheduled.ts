/**
 * The worker's `scheduled` handler: the cron triggers of wrangler.toml. Every run, on every
 * database that holds records (the data shards and the catalog), purges what expired
 * (purge-expired.ts; in the catalog also the ids of logged-out tokens that expired, and the judges' call counters past their use) and the export files past their time (src/export/export-file-removal.ts), records each shard's size in the catalog (placement reads it), and queues
 * the erasure of records older than their project's retention (src/retention/schedule-expiry.ts).
 * The derived data (text index, metric cells, roll-up and cell backfills) is the upkeep's
 * (src/upkeep), which the writes start and every cron run backs up (src/index.ts).
 * Locally: `npm start` calls it on wrangler.toml's schedule (scripts/start.ts), or `curl "http://127.0.0.1:8787/__scheduled"` while `npm start` runs
 * (docs/operations.md, "Scheduled maintenance").
 */
import { purgeDeletedTemplates } from "../annotations/template-deletion";
import { purgeDeletedQueues } from "../annotation-queues/queue-deletion";
import { pruneExpiredRevocations } from "../auth/logout-route";
import { removeDueExportFiles } from "../export/export-file-removal";
import { nowMicros } from "../db/client";
import type { Env } from "../env";
import { allRecordDatabases, shardDatabase } from "../shards/shard-config";
import { measureShardSizes } from "../shards/shard-sizes";
import { scheduleExpiry } from "../retention/schedule-expiry";
import { purgeExpired } from "./purge-expired";

export async function runScheduledMaintenance(env: Env, scheduledTime: number = Date.now()): Promise<void> {
  const now = Math.min(nowMicros(), scheduledTime * 1000);
  for (const shard of allRecordDatabases(env)) {
    try {
      const db = shardDatabase(env, shard);
      const outcome = await purgeExpired(db, now);
      if (outcome.patches > 0 || outcome.tombstones > 0 || !outcome.complete) {
        console.log(
          `maintenance on ${shard}: purged ${outcome.patches} expired held updates and ${outcome.tombstones} expired tombstones${outcome.complete ? "" : "; more remain for the next run"}`,
        );
      }
      // Deleted annotation templates whose ratings a request could not all remove.
      const templates = await purgeDeletedTemplates(db);
      if (templates.templates > 0 || !templates.complete) {
        console.log(`maintenance on ${shard}: finished deleting ${templates.templates} annotation template(s)${templates.complete ? "" : "; more remain for the next run"}`);
      }
    } catch (error) {
      // One database down must not keep the others from their maintenance.
      console.error(`maintenance on ${shard} failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  await pruneExpiredRevocations(env.DB).catch((error) => console.error(`maintenance: could not prune revoked token ids: ${error instanceof Error ? error.message : String(error)}`));
  // Deleted annotation queues (and queue templates) whose entries and ratings a request could not all remove.
  try {
    const queues = await purgeDeletedQueues(env);
    if (queues.queues > 0 || !queues.complete) console.log(`maintenance: finished deleting ${queues.queues} annotation queue(s)${queues.complete ? "" : "; more remain for the next run"}`);
  } catch (error) {
    console.error(`maintenance: could not finish deleting annotation queues: ${error instanceof Error ? error.message : String(error)}`);
  }
  // Export files past their 24 hours, made unservable by an erasure, or of failed exports.
  try {
    const files = await removeDueExportFiles(env, now);
    if (files.removed > 0) console.log(`maintenance: removed ${files.removed} export file(s)${files.complete ? "" : "; more remain for the next run"}`);
  } catch (error) {
    console.error(`maintenance: could not remove export files: ${error instanceof Error ? error.message : String(error)}`);
  }
  await measureShardSizes(env).catch((error) => console.error(`maintenance: could not measure the shards: ${error instanceof Error ? error.message : String(error)}`));
  // Retention: queue the erasure of what is older than each project's retention (src/retention).
  try {
    const expiry = await scheduleExpiry(env, scheduledTime * 1000);
    for (const job of expiry.jobs) {
      console.log(`retention: organization ${job.organizationId}: ${job.projects} project(s) with expired records, job ${job.jobId} on ${job.shards.join(", ")}`);
    }
  } catch (error) {
    console.error(`retention: the expiry run failed: ${error instanceof Error ? error.message : String(error)}`);
  }
}
