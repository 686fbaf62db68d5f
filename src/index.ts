import { createApp } from "./app";
import { handleDeletionQueue } from "./deletion/deletion-queue-consumer";
import type { DeletionMessage, Env, ExportMessage, MoveMessage } from "./env";
import { removeDueExportFiles } from "./export/export-file-removal";
import { EXPORT_QUEUE_NAME, handleExportQueue } from "./export/export-queue-consumer";
import { handleRedactionMessage, isRedactionMessage } from "./redaction/apply-job";
import { refreshMetricCellsEverywhere, runScheduledMaintenance } from "./maintenance/scheduled";
import { backfillTextIndexes } from "./text-index/backfill";
import { MOVE_WATCHDOG_CRON } from "./shards/moves/move-requests";
import { handleMoveQueue, isMoveQueue, kickMoves } from "./shards/moves/move-queue";

// Durable Object classes of the limits (wrangler.toml [[durable_objects.bindings]]).
export { PasswordGuard } from "./limits/password-guard";
export { ScanSlots } from "./limits/scan-slots";

const app = createApp();

const METHODS_WITH_BODY = new Set(["POST", "PUT", "PATCH"]);

/** A body sent without a content type is read as JSON (as FastAPI does), not refused. */
function withDefaultContentType(request: Request): Request {
  if (!METHODS_WITH_BODY.has(request.method) || request.headers.has("content-type") || request.body === null) return request;
  const headers = new Headers(request.headers);
  headers.set("content-type", "application/json");
  return new Request(request, { headers });
}

export default {
  fetch: (request, env, ctx) => app.fetch(withDefaultContentType(request), env, ctx),
  queue: async (batch, env) => {
    if (isMoveQueue(batch.queue)) return handleMoveQueue(batch as MessageBatch<MoveMessage>, env);
    if (batch.queue === EXPORT_QUEUE_NAME) {
      // The organization jobs' queue carries redaction jobs too (src/redaction/apply-job.ts).
      if (batch.messages.every((m) => isRedactionMessage(m.body))) {
        for (const message of batch.messages) await handleRedactionMessage(env, message);
        return;
      }
      return handleExportQueue(batch as MessageBatch<ExportMessage>, env);
    }
    await handleDeletionQueue(batch as MessageBatch<DeletionMessage>, env);
    // A deletion that just completed made the organization's older export files unservable
    // (src/deletion/job-parts.ts): remove their bytes now rather than at the next hourly cron.
    await removeDueExportFiles(env).catch((error) => console.error(`export files: removal failed: ${error instanceof Error ? error.message : String(error)}`));
  },
  scheduled: (controller, env, ctx) => {
    // Every cron run gives new, resumed and stalled project moves their message and advances the
    // text index (its catch-up of the records written since the last run, then any backfill of
    // older ones: docs/search.md, "The text index"); the minutely cron exists for these
    // alone, the others run the maintenance too.
    ctx.waitUntil(kickMoves(env).catch((error) => console.error(`moves watchdog: ${error instanceof Error ? error.message : String(error)}`)));
    ctx.waitUntil(backfillTextIndexes(env));
    // Every cron run, too: the pre-aggregated metric cells of hours that writes marked.
    ctx.waitUntil(refreshMetricCellsEverywhere(env));
    if (controller.cron !== MOVE_WATCHDOG_CRON) ctx.waitUntil(runScheduledMaintenance(env, controller.scheduledTime));
  },
} satisfies ExportedHandler<Env, DeletionMessage | MoveMessage | ExportMessage>;
