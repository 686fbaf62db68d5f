/**
 * Consumers of the deletion queue and of its dead-letter queue (names in wrangler.toml).
 *
 * Deletion queue: each message names a job; the job advances within MESSAGE_BUDGET, then either
 * it is over (ack) or a continuation message is enqueued before the ack, so a crash between the
 * two only duplicates a message. A failing message is retried on its own with exponential
 * backoff; after max_retries the queue moves it to the dead-letter queue, whose consumer marks the
 * job failed. Delivery is at least once and every step is idempotent: a message of a finished job
 * is acked and does nothing, and duplicates never double-count (see delete-chunk.ts).
 */
import type { DeletionMessage, Env } from "../env";
import { advanceJob } from "./advance-job";
import { messageBudget, retryDelaySeconds } from "./deletion-budgets";
import { failJob } from "./deletion-jobs";

/** Must match `queue` of the dead-letter consumer in wrangler.toml. */
export const DELETION_DEAD_LETTER_QUEUE = "trace-store-deletions-dlq";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function jobIdOf(body: unknown): string | undefined {
  const jobId = (body as Partial<DeletionMessage> | null)?.jobId;
  return typeof jobId === "string" && UUID.test(jobId) ? jobId.toLowerCase() : undefined;
}

function errorText(error: unknown): string {
  return error instanceof Error ? `${error.message}${error.cause ? ` (${String(error.cause)})` : ""}` : String(error);
}

async function consumeDeletionMessages(batch: MessageBatch<DeletionMessage>, env: Env): Promise<void> {
  const seen = new Set<string>();
  for (const message of batch.messages) {
    const jobId = jobIdOf(message.body);
    if (!jobId) {
      // Retrying cannot make a malformed message valid.
      console.error(`deletion queue: dropping malformed message ${message.id}`);
      message.ack();
      continue;
    }
    if (seen.has(jobId)) {
      // The same job twice in one batch: the first delivery has just done this message's work.
      message.ack();
      continue;
    }
    seen.add(jobId);
    try {
      const result = await advanceJob(env.DB, jobId, messageBudget());
      if (result.state === "unfinished") await env.DELETION_QUEUE.send({ jobId });
      if (result.state === "missing") {
        console.error(`deletion queue: no deletion job ${jobId}; message ${message.id} dropped`);
      } else if (result.stats.chunks > 0) {
        const { sessions, traces, spans } = result.progress;
        console.log(
          `deletion job ${jobId}: ${result.state} after ${result.stats.chunks} chunk${result.stats.chunks === 1 ? "" : "s"} (longest ${result.stats.longestChunkMs} ms, last one up to ${result.stats.lastSpanLimit} spans); deleted so far: ${sessions} sessions, ${traces} traces, ${spans} spans`,
        );
      }
      message.ack();
    } catch (error) {
      const delaySeconds = retryDelaySeconds(message.attempts);
      console.error(`deletion job ${jobId}: attempt ${message.attempts} failed, retrying in ${delaySeconds}s: ${errorText(error)}`);
      message.retry({ delaySeconds });
    }
  }
}

async function consumeDeadLetters(batch: MessageBatch<DeletionMessage>, env: Env): Promise<void> {
  for (const message of batch.messages) {
    const jobId = jobIdOf(message.body);
    if (!jobId) {
      message.ack();
      continue;
    }
    try {
      await failJob(
        env.DB,
        jobId,
        "The deletion stopped after repeated failures. What was deleted is counted in progress; nothing else was changed. Submit the request again to delete the rest.",
      );
      console.error(`deletion job ${jobId}: marked failed (message ${message.id} exhausted its retries)`);
      message.ack();
    } catch (error) {
      console.error(`deletion job ${jobId}: could not mark it failed: ${errorText(error)}`);
      message.retry({ delaySeconds: retryDelaySeconds(message.attempts) });
    }
  }
}

/** The worker's `queue` handler: one entry point for both queues. */
export async function handleDeletionQueue(batch: MessageBatch<DeletionMessage>, env: Env): Promise<void> {
  if (batch.queue === DELETION_DEAD_LETTER_QUEUE) return consumeDeadLetters(batch, env);
  return consumeDeletionMessages(batch, env);
}
