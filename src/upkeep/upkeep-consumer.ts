/**
 * The consumer of the upkeep queue (wrangler.toml `trace-store-upkeep`): each message runs the
 * upkeep of the database it names (upkeep-runner.ts). A failed run is retried with a growing
 * delay (2, 4, 8, ... up to 300 s, then every 300 s) until the queue's max_retries; after the last
 * one the message is dropped with a log line, the database's row keeps the failure count and the
 * error, and the cron keeps trying every minute (so a database that comes back catches up).
 */
import type { Env, UpkeepMessage } from "../env";
import { describe, runUpkeep } from "./upkeep-runner";

export const UPKEEP_QUEUE_NAME = "trace-store-upkeep";

/** Seconds before the retry that follows `attempts` failed deliveries. */
export function retryDelaySeconds(attempts: number): number {
  return Math.min(300, 2 ** Math.max(1, attempts));
}

/** wrangler.toml's max_retries of the upkeep queue: the last delivery's failure is logged as final. */
const MAX_RETRIES = 10;

export async function handleUpkeepQueue(batch: MessageBatch<UpkeepMessage>, env: Env): Promise<void> {
  for (const message of batch.messages) {
    const shard = message.body?.shard;
    if (typeof shard !== "string") {
      console.error(`upkeep: dropped a message that names no database: ${JSON.stringify(message.body)}`);
      message.ack();
      continue;
    }
    try {
      const outcome = await runUpkeep(env, shard);
      if (outcome.state === "continued") console.log(`upkeep of ${shard}: ${describe(outcome.progress)}; continues`);
      message.ack();
    } catch (error) {
      const text = error instanceof Error ? error.message : String(error);
      if (message.attempts > MAX_RETRIES) {
        console.error(`${text}; attempt ${message.attempts}, the last: the cron retries every minute`);
        message.ack();
      } else {
        const delaySeconds = retryDelaySeconds(message.attempts);
        console.error(`${text}; attempt ${message.attempts}, retried in ${delaySeconds} s`);
        message.retry({ delaySeconds });
      }
    }
  }
}
