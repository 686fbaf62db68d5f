/**
 * Moves run through their own queue (wrangler.toml: `trace-store-moves`, dead letters in
 * `trace-store-moves-dlq`). A message says "advance move X" and carries the move's
 * `message_seq`: the move's row is the whole state, and a message whose seq is not the row's is a
 * stale duplicate and does nothing. A message runs steps within its budget (advance-move.ts),
 * then bumps the seq (conditionally) and sends the continuation: a crash between the two leaves
 * no message for the move, which the watchdog below notices.
 *
 * The watchdog (the minutely cron, and the admin command's poke of a local worker) sends a
 * message to every running move that has not advanced for STALLED_AFTER_MICROS, and at once to
 * a new or resumed one (their `updated_at` is 0). A move whose messages keep failing ends in the
 * dead-letter queue, whose consumer pauses it (the source takes writes again); running the admin
 * command again resumes it.
 */
import { nowMicros } from "../db/client";
import type { Env, MoveMessage } from "../env";
import { retryDelaySeconds } from "../deletion/deletion-budgets";
import { VerificationFailed, advanceMove, pauseMove } from "./advance-move";
import { type MoveRow, TERMINAL_PHASES, loadMove } from "./move-rows";

/** Must match the queue names in wrangler.toml. */
export const MOVE_QUEUE = "trace-store-moves";
export const MOVE_DEAD_LETTER_QUEUE = "trace-store-moves-dlq";

/** Longer than a message's whole retry schedule (2 + 4 + ... + 256 s), so a retrying move is not doubled. */
export const STALLED_AFTER_MICROS = 10 * 60 * 1_000_000;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function messageOf(body: unknown): MoveMessage | undefined {
  const { moveId, seq } = (body ?? {}) as Partial<MoveMessage>;
  if (typeof moveId !== "string" || !UUID.test(moveId) || !Number.isSafeInteger(seq)) return undefined;
  return { moveId: moveId.toLowerCase(), seq: seq! };
}

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * Takes the next seq (if `seq` is still current) and sends its message; false if another delivery
 * took it. The seq is taken first, so that the message is never delivered before the row names it;
 * the watchdog restarts the move's stall clock (`stallClockAt`) in the same statement, so a failure
 * of that write changes nothing. A send that fails gives the seq back and marks the move due
 * (`updated_at` 0), then throws: the message being handled is retried with its seq still current,
 * and the watchdog's next run (the next poke of a local worker, or the minutely cron) sends again
 * at once, instead of the move waiting out STALLED_AFTER_MICROS with no message at all. Whichever
 * of the two comes first takes the seq; the other is then stale and does nothing.
 */
export async function sendMoveMessage(env: Env, moveId: string, seq: number, delaySeconds = 0, stallClockAt?: number): Promise<boolean> {
  const bumped = await env.DB.prepare("UPDATE project_moves SET message_seq = ?2 + 1, updated_at = coalesce(?3, updated_at) WHERE id = ?1 AND message_seq = ?2")
    .bind(moveId, seq, stallClockAt ?? null)
    .run();
  if (bumped.meta.changes === 0) return false;
  try {
    await env.MOVE_QUEUE.send({ moveId, seq: seq + 1 }, delaySeconds > 0 ? { delaySeconds } : undefined);
  } catch (error) {
    await env.DB.prepare("UPDATE project_moves SET message_seq = ?2, updated_at = 0 WHERE id = ?1 AND message_seq = ?2 + 1").bind(moveId, seq).run();
    throw error;
  }
  return true;
}

/** Sends a message to every running move that is new, resumed or stalled; answers how many. */
export async function kickMoves(env: Env, now: number = nowMicros()): Promise<number> {
  const { results } = await env.DB.prepare(
    "SELECT id, message_seq FROM project_moves WHERE phase NOT IN ('completed', 'failed') AND status = 'running' AND updated_at < ?1",
  )
    .bind(now - STALLED_AFTER_MICROS)
    .all<{ id: string; message_seq: number }>();
  let sent = 0;
  for (const move of results) {
    try {
      // The stall clock restarts now, so the next minute's run does not send another.
      if (await sendMoveMessage(env, move.id, move.message_seq, 0, now)) sent += 1;
    } catch (error) {
      // The move is due again (sendMoveMessage gave its seq back); the other moves still get theirs.
      console.error(`moves watchdog: could not send move ${move.id} its message: ${errorText(error)}`);
    }
  }
  return sent;
}

/** The admin command that resumes a paused move. */
const commandOf = (move: MoveRow) => (move.partition_id ? "move-partition" : "move-project");

const over = (move: MoveRow) => TERMINAL_PHASES.includes(move.phase) || move.status === "paused";

async function consumeMoveMessages(batch: MessageBatch<MoveMessage>, env: Env): Promise<void> {
  for (const message of batch.messages) {
    const body = messageOf(message.body);
    if (!body) {
      console.error(`move queue: dropping malformed message ${message.id}`);
      message.ack();
      continue;
    }
    try {
      const move = await loadMove(env, body.moveId);
      if (!move || over(move) || move.message_seq !== body.seq) {
        message.ack();
        continue;
      }
      const outcome = await advanceMove(env, move);
      const after = outcome.move;
      if (after && !over(after)) {
        await sendMoveMessage(env, after.id, body.seq, outcome.wait ?? 0);
      }
      if (after) {
        console.log(
          `move ${after.id} of project ${after.project_id} (${after.source} -> ${after.target}): ${after.phase}${after.step ? `/${after.step}` : ""} after ${outcome.steps} steps; ${after.records_copied} records copied, ${after.changes_replayed} changes replayed, ${after.old_records_deleted} old records deleted`,
        );
      }
      message.ack();
    } catch (error) {
      if (error instanceof VerificationFailed) {
        // Retrying cannot make the copies agree: stop, say why, let the source take writes.
        const move = await loadMove(env, body.moveId).catch(() => null);
        if (move) {
          await pauseMove(env, move, `Paused: ${error.message}. Run the ${commandOf(move)} command again to resume it.`).catch(() => undefined);
          console.error(`move ${move.id}: paused: ${error.message}`);
          message.ack();
          continue;
        }
      }
      const delaySeconds = retryDelaySeconds(message.attempts);
      console.error(`move ${body.moveId}: attempt ${message.attempts} failed, retrying in ${delaySeconds}s: ${errorText(error)}`);
      message.retry({ delaySeconds });
    }
  }
}

async function consumeDeadLetters(batch: MessageBatch<MoveMessage>, env: Env): Promise<void> {
  for (const message of batch.messages) {
    const body = messageOf(message.body);
    try {
      const move = body ? await loadMove(env, body.moveId) : null;
      if (move && !over(move) && move.message_seq === body!.seq) {
        await pauseMove(env, move, `Paused after repeated failures (see the worker's logs). Run the ${commandOf(move)} command again to resume it.`);
        console.error(`move ${move.id}: paused (message ${message.id} exhausted its retries)`);
      }
      message.ack();
    } catch (error) {
      console.error(`move ${body?.moveId}: could not pause it: ${errorText(error)}`);
      message.retry({ delaySeconds: retryDelaySeconds(message.attempts) });
    }
  }
}

export function isMoveQueue(queue: string): boolean {
  return queue === MOVE_QUEUE || queue === MOVE_DEAD_LETTER_QUEUE;
}

/** The worker's `queue` handler for the move queues. */
export async function handleMoveQueue(batch: MessageBatch<MoveMessage>, env: Env): Promise<void> {
  if (batch.queue === MOVE_DEAD_LETTER_QUEUE) return consumeDeadLetters(batch, env);
  return consumeMoveMessages(batch, env);
}
