/**
 * The consumer of the export queue (wrangler.toml): each message names a queued export, which
 * advances by one message's budget (export-upload.ts); an unfinished export enqueues its
 * continuation before the ack, so a crash between the two only duplicates a message, and a
 * duplicate does nothing (the saved step has moved on). A failing message is retried with
 * growing delays; after MAX_ATTEMPTS the export is marked failed (its partial file removed by the
 * next clean-up) instead of waiting for a dead-letter queue.
 */
import { refusalRetryAfter } from "./slot-wait";
import { retryDelaySeconds } from "../deletion/deletion-budgets";
import type { Env, ExportMessage } from "../env";
import { RequestValidationError } from "../http/errors";
import { nowMicros } from "../db/client";
import { exportFileState, failExport } from "./export-jobs";
import { advanceExport } from "./export-upload";

/** Must match the queue of the consumer in wrangler.toml. */
export const EXPORT_QUEUE_NAME = "trace-store-exports";
/** Attempts of one message before its export is marked failed (wrangler.toml's max_retries is higher). */
const MAX_ATTEMPTS = 8;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const errorText = (error: unknown) => (error instanceof Error ? `${error.message}${error.cause ? ` (${String(error.cause)})` : ""}` : String(error));

export async function handleExportQueue(batch: MessageBatch<ExportMessage>, env: Env): Promise<void> {
  for (const message of batch.messages) {
    const jobId = (message.body as Partial<ExportMessage> | undefined)?.jobId;
    if (typeof jobId !== "string" || !UUID.test(jobId)) {
      console.error(`export queue: dropping malformed message ${message.id}`);
      message.ack();
      continue;
    }
    try {
      const state = await exportFileState(env, jobId.toLowerCase());
      if (!state || (state.status !== "queued" && state.status !== "running")) {
        message.ack();
        continue;
      }
      if (state.erasedAt !== null || state.removedAt !== null || state.expiresAt <= nowMicros()) {
        await failExport(env, state.jobId, "The export was stopped: records of the organization were erased while it ran (or its 24 hours passed). Export again.");
        message.ack();
        continue;
      }
      const outcome = await advanceExport(env, state);
      if (outcome === "continues") await env.EXPORT_QUEUE.send({ jobId: state.jobId });
      message.ack();
    } catch (error) {
      // A scan slot refused (the organization's scans are busy, or its scan time spent) is not a
      // failure: the job continues from its saved state once the refusal ends, in a new message,
      // so that refusals never use up the attempts that stop a failing export.
      const refusedFor = refusalRetryAfter(error);
      if (refusedFor !== undefined) {
        await env.EXPORT_QUEUE.send({ jobId: jobId.toLowerCase() }, { delaySeconds: Math.ceil(refusedFor) });
        message.ack();
        continue;
      }
      // A request that no longer compiles (an annotation template deleted since) never will.
      if (error instanceof RequestValidationError || message.attempts >= MAX_ATTEMPTS) {
        console.error(`export job ${jobId}: giving up after attempt ${message.attempts}: ${errorText(error)}`);
        await failExport(env, jobId, `The export failed: ${error instanceof RequestValidationError ? "its filter no longer applies to the project (an annotation template was deleted?)" : "repeated failures stopped it"}. Export again.`).catch(
          () => undefined,
        );
        message.ack();
        continue;
      }
      const delaySeconds = retryDelaySeconds(message.attempts);
      console.error(`export job ${jobId}: attempt ${message.attempts} failed, retrying in ${delaySeconds}s: ${errorText(error)}`);
      message.retry({ delaySeconds });
    }
  }
}
