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
import { advanceParts } from "./advance-parts";
import { messageBudget, retryDelaySeconds } from "./deletion-budgets";
import { deletionJobById, failJob } from "./deletion-jobs";
import { failPart, openParts } from "./job-parts";

/** Must match `queue` of the dead-letter consumer in wrangler.toml. */
export const DELETION_DEAD_LETTER_QUEUE = "trace-store-deletions-dlq";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const SHARD_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

interface Target {
  jobId: string;
  /** One part; undefined: every open part of the job (messages sent before sharding, and fallbacks). */
  shard: string | undefined;
}

function targetOf(body: unknown): Target | undefined {
  const { jobId, shard } = (body ?? {}) as Partial<DeletionMessage>;
  if (typeof jobId !== "string" || !UUID.test(jobId)) return undefined;
  if (shard !== undefined && (typeof shard !== "string" || !SHARD_NAME.test(shard))) return undefined;
  return { jobId: jobId.toLowerCase(), shard };
}

function errorText(error: unknown): string {
  return error instanceof Error ? `${error.message}${error.cause ? ` (${String(error.cause)})` : ""}` : String(error);
}

const describe = (target: Target) => `deletion job ${target.jobId}${target.shard ? ` on ${target.shard}` : ""}`;

async function consumeDeletionMessages(batch: MessageBatch<DeletionMessage>, env: Env): Promise<void> {
  const seen = new Set<string>();
  for (const message of batch.messages) {
    const target = targetOf(message.body);
    if (!target) {
      // Retrying cannot make a malformed message valid.
      console.error(`deletion queue: dropping malformed message ${message.id}`);
      message.ack();
      continue;
    }
    const key = `${target.jobId}/${target.shard ?? "*"}`;
    if (seen.has(key)) {
      // The same work twice in one batch: the first delivery has just done this message's work.
      message.ack();
      continue;
    }
    seen.add(key);
    try {
      const job = await deletionJobById(env.DB, target.jobId);
      if (!job) {
        console.error(`deletion queue: no deletion job ${target.jobId}; message ${message.id} dropped`);
        message.ack();
        continue;
      }
      const parts = target.shard ? [target.shard] : await openParts(env, target.jobId);
      const outcome = await advanceParts(env, job, parts, messageBudget());
      // Continuations before the ack: a crash between the two only duplicates a message.
      if (outcome.unfinished.length > 0) await env.DELETION_QUEUE.sendBatch(outcome.unfinished.map((shard) => ({ body: { jobId: job.id, shard } })));
      for (const [shard, result] of outcome.results) {
        if (result.stats.chunks === 0) continue;
        const { sessions, traces, spans } = result.progress;
        console.log(
          `deletion job ${job.id} on ${shard}: ${result.state} after ${result.stats.chunks} chunk${result.stats.chunks === 1 ? "" : "s"} (longest ${result.stats.longestChunkMs} ms, last one up to ${result.stats.lastSpanLimit} spans); deleted there so far: ${sessions} sessions, ${traces} traces, ${spans} spans`,
        );
      }
      message.ack();
    } catch (error) {
      const delaySeconds = retryDelaySeconds(message.attempts);
      console.error(`${describe(target)}: attempt ${message.attempts} failed, retrying in ${delaySeconds}s: ${errorText(error)}`);
      message.retry({ delaySeconds });
    }
  }
}

const GAVE_UP = "repeated failures stopped it. What was deleted is counted in progress; nothing else was changed. Submit the request again to delete the rest.";

async function consumeDeadLetters(batch: MessageBatch<DeletionMessage>, env: Env): Promise<void> {
  for (const message of batch.messages) {
    const target = targetOf(message.body);
    if (!target) {
      message.ack();
      continue;
    }
    try {
      if (target.shard) {
        await failPart(env, target.jobId, target.shard, GAVE_UP);
      } else {
        await failJob(env, target.jobId, `The deletion stopped: ${GAVE_UP}`);
      }
      console.error(`${describe(target)}: marked failed (message ${message.id} exhausted its retries)`);
      message.ack();
    } catch (error) {
      console.error(`${describe(target)}: could not mark it failed: ${errorText(error)}`);
      message.retry({ delaySeconds: retryDelaySeconds(message.attempts) });
    }
  }
}

/** The worker's `queue` handler: one entry point for both queues. */
export async function handleDeletionQueue(batch: MessageBatch<DeletionMessage>, env: Env): Promise<void> {
  if (batch.queue === DELETION_DEAD_LETTER_QUEUE) return consumeDeadLetters(batch, env);
  return consumeDeletionMessages(batch, env);
}
