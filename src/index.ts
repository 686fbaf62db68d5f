import { createApp } from "./app";
import { ALERT_QUEUE_NAME, handleAlertQueue } from "./alerts/delivery-consumer";
import { runAlertCron } from "./alerts/alert-cron";
import { ALERT_EVALUATION_QUEUE_NAME, handleAlertEvaluationQueue } from "./alerts/evaluation-fanout";
import { handleDeletionQueue } from "./deletion/deletion-queue-consumer";
import type { AlertDeliveryMessage, AlertEvaluationMessage, DeletionMessage, Env, EvaluationMessage, ExportMessage, MoveMessage, UpkeepMessage } from "./env";
import { EVALUATION_QUEUE_NAME, handleEvaluationQueue } from "./evaluations/evaluation-consumer";
import { drainUnreadBody } from "./http/drain-request-body";
import { countInvocation, METER_PATH, meteredEnv, meterEnabled, meterResponse } from "./http/d1-meter";
import { removeDueExportFiles } from "./export/export-file-removal";
import { EXPORT_QUEUE_NAME, handleExportQueue } from "./export/export-queue-consumer";
import { handleRedactionMessage, isRedactionMessage } from "./redaction/apply-job";
import { runScheduledMaintenance } from "./maintenance/scheduled";
import { sweepDueResults } from "./evaluations/due-results";
import { purgeJudgeCountersLogged } from "./evaluations/judge-counter-purge";
import { allRecordDatabases } from "./shards/shard-config";
import { handleUpkeepQueue, UPKEEP_QUEUE_NAME } from "./upkeep/upkeep-consumer";
import { requestUpkeep } from "./upkeep/upkeep-request";
import { upkeepEverywhere } from "./upkeep/upkeep-runner";
import { MOVE_WATCHDOG_CRON } from "./moves/move-requests";
import { handleMoveQueue, isMoveQueue, kickMoves } from "./moves/move-queue";

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

/**
 * The bindings a handler gets: as given, or with every D1 binding metered when the bill's meter
 * is on (src/http/d1-meter.ts; the benches only), the invocation counted.
 */
function bindingsFor(env: Env, invocation: Parameters<typeof countInvocation>[0]): Env {
  if (!meterEnabled(env)) return env;
  countInvocation(invocation);
  return meteredEnv(env);
}

export default {
  fetch: async (request, given, ctx) => {
    if (meterEnabled(given) && new URL(request.url).pathname === METER_PATH) return meterResponse();
    const env = bindingsFor(given, "request");
    const received = withDefaultContentType(request);
    const response = await app.fetch(received, env, ctx);
    // An answer given without reading the body (a refusal) takes the rest of it first.
    await drainUnreadBody(received);
    return response;
  },
  queue: async (batch, given) => {
    const env = bindingsFor(given, { queueMessages: batch.messages.length });
    if (batch.queue === UPKEEP_QUEUE_NAME) return handleUpkeepQueue(batch as MessageBatch<UpkeepMessage>, env);
    if (batch.queue === ALERT_QUEUE_NAME) return handleAlertQueue(batch as MessageBatch<AlertDeliveryMessage>, env);
    if (batch.queue === EVALUATION_QUEUE_NAME) return handleEvaluationQueue(batch as MessageBatch<EvaluationMessage>, env);
    if (batch.queue === ALERT_EVALUATION_QUEUE_NAME) return handleAlertEvaluationQueue(batch as MessageBatch<AlertEvaluationMessage>, env);
    if (isMoveQueue(batch.queue)) {
      await handleMoveQueue(batch as MessageBatch<MoveMessage>, env);
      // A move's copy writes records on its target and its cleanup deletes them on its source:
      // derived work on both, and the message does not say which databases (a request is one
      // small UPDATE per database; only a database without a pending message gets one).
      await requestUpkeepOf(env, allRecordDatabases(env));
      return;
    }
    if (batch.queue === EXPORT_QUEUE_NAME) {
      // The organization jobs' queue carries redaction jobs too (src/redaction/apply-job.ts): each
      // message goes to its own handler, whatever else shares its batch.
      const redactions = batch.messages.filter((m) => isRedactionMessage(m.body));
      for (const message of redactions) await handleRedactionMessage(env, message);
      if (redactions.length === batch.messages.length) return;
      const exports = batch.messages.filter((m) => !isRedactionMessage(m.body)) as Message<ExportMessage>[];
      return handleExportQueue({ ...batch, messages: exports } as MessageBatch<ExportMessage>, env);
    }
    await handleDeletionQueue(batch as MessageBatch<DeletionMessage>, env);
    // Deletion chunks (deletion jobs, expiry) remove records: indexes to update, hours to recompute.
    // A malformed message (no body, no shard, a name no binding has) asks for nothing.
    const databases = new Set(allRecordDatabases(env));
    const shardOf = (body: unknown) => ((body as Partial<DeletionMessage> | null)?.shard ?? "DB") as unknown;
    await requestUpkeepOf(env, new Set(batch.messages.map((m) => shardOf(m.body)).filter((shard): shard is string => typeof shard === "string" && databases.has(shard))));
    // A deletion that just completed made the organization's older export files unservable
    // (src/deletion/job-parts.ts): remove their bytes now rather than at the next hourly cron.
    await removeDueExportFiles(env).catch((error) => console.error(`export files: removal failed: ${error instanceof Error ? error.message : String(error)}`));
  },
  scheduled: (controller, given, ctx) => {
    const env = bindingsFor(given, "scheduled");
    // Every cron run gives new, resumed and stalled project moves their message and runs the
    // upkeep of every database (src/upkeep): the safety net of the upkeep the writes start
    // through the upkeep queue (text index, metric cells, backfills; a database whose upkeep is
    // running is left to it); the minutely cron exists for these alone, the others run the
    // maintenance too.
    ctx.waitUntil(kickMoves(env).catch((error) => console.error(`moves watchdog: ${error instanceof Error ? error.message : String(error)}`)));
    ctx.waitUntil(upkeepEverywhere(env));
    // Alert rules due in this minute (src/alerts): on the minutely schedule only, once a minute.
    if (controller.cron === MOVE_WATCHDOG_CRON) ctx.waitUntil(runAlertCron(env, controller.scheduledTime));
    // Pending scorer results past due whose delayed message never came (src/evaluations/due-results.ts): minutely, bounded per database.
    if (controller.cron === MOVE_WATCHDOG_CRON) ctx.waitUntil(sweepDueResults(env).catch((error) => console.error(`evaluations sweep: ${error instanceof Error ? error.message : String(error)}`)));
    if (controller.cron !== MOVE_WATCHDOG_CRON) ctx.waitUntil(runScheduledMaintenance(env, controller.scheduledTime));
    // The judges' pace and budget counters past what they are read for, hourly beside the
    // maintenance (evaluations sit above maintenance in the import layers, so it is called here).
    if (controller.cron !== MOVE_WATCHDOG_CRON) ctx.waitUntil(purgeJudgeCountersLogged(env, controller.scheduledTime));
  },
} satisfies ExportedHandler<Env, DeletionMessage | MoveMessage | ExportMessage | UpkeepMessage | AlertDeliveryMessage | AlertEvaluationMessage | EvaluationMessage>;

/** requestUpkeep for each database; a failure is logged (the cron is the safety net), never the message's. */
async function requestUpkeepOf(env: Env, shards: Iterable<string>): Promise<void> {
  for (const shard of shards) {
    await requestUpkeep(env, shard).catch((error) => console.error(`upkeep: could not request the upkeep of ${shard}: ${error instanceof Error ? error.message : String(error)}`));
  }
}
