/**
 * Starting a deletion: as a queued job, or inside the request up to IMMEDIATE_BUDGET with the
 * rest handed to the queue. A job row always exists before any record is deleted, so every
 * deletion is counted on a job and can be resumed by any message naming it.
 */
import type { Env } from "../env";
import { advanceJob } from "./advance-job";
import { immediateBudget } from "./deletion-budgets";
import {
  type DeletionCounts,
  type DeletionRequestData,
  failJob,
  insertDeletionJob,
  organizationJob,
} from "./deletion-jobs";
import type { MetadataSelector } from "./count-deletion-set";
import { ANY_MATCH } from "./deletion-sql";

export interface Submitter {
  organizationId: string;
  userId: string;
}

export async function anyMatch(d1: D1Database, selector: MetadataSelector): Promise<boolean> {
  const row = await d1.prepare(ANY_MATCH).bind(selector.organizationId, selector.key, selector.value).first<{ matched: number }>();
  return row?.matched === 1;
}

/**
 * How long the fallback message of an immediate deletion waits: far beyond the request's budget
 * (IMMEDIATE_BUDGET, 5 s) plus the 30 s a Worker may run on after answering (`waitUntil`).
 */
export const IMMEDIATE_FALLBACK_DELAY_SECONDS = 60;

/** Sends the job's message; if that fails the job can never run, so it is marked failed. */
async function enqueue(env: Env, jobId: string, delaySeconds = 0): Promise<void> {
  try {
    await env.DELETION_QUEUE.send({ jobId }, delaySeconds > 0 ? { delaySeconds } : undefined);
  } catch (error) {
    await failJob(env.DB, jobId, "The job could not be queued; nothing more will be deleted. Submit the request again.");
    throw error;
  }
}

export async function startQueuedDeletion(env: Env, submitter: Submitter, request: DeletionRequestData): Promise<string> {
  const jobId = await insertDeletionJob(env.DB, {
    organizationId: submitter.organizationId,
    createdBy: submitter.userId,
    request,
    status: "queued",
  });
  await enqueue(env, jobId);
  return jobId;
}

export interface ImmediateOutcome {
  jobId: string;
  /** True when nothing matching is left: the job is completed and its id need not be shown. */
  finished: boolean;
  deleted: DeletionCounts;
}

/**
 * Deletes within the request's budget. The work is also handed to `waitUntil`, so a client that
 * disconnects mid-way does not cut it short: it still ends within the budget and hands what is
 * left to the queue. A failure inside the request does the same (the queue retries it).
 *
 * Before any chunk, a delayed fallback message naming the job is queued: if the isolate dies
 * outright mid-request (nothing in the request can then hand the rest over), that message
 * resumes the job a minute later. When the request finishes the job, the message finds it
 * completed and does nothing; messages are idempotent, so an extra one never double-deletes.
 */
export async function deleteWithinRequest(
  env: Env,
  submitter: Submitter,
  request: DeletionRequestData,
  waitUntil: (work: Promise<unknown>) => void,
): Promise<ImmediateOutcome> {
  const jobId = await insertDeletionJob(env.DB, {
    organizationId: submitter.organizationId,
    createdBy: submitter.userId,
    request,
    status: "running",
  });
  await enqueue(env, jobId, IMMEDIATE_FALLBACK_DELAY_SECONDS);
  const work = (async (): Promise<ImmediateOutcome> => {
    let finished = false;
    try {
      finished = (await advanceJob(env.DB, jobId, immediateBudget())).state === "completed";
    } catch (error) {
      console.error(`deletion job ${jobId}: immediate deletion failed, continuing on the queue:`, error instanceof Error ? error.message : String(error));
    }
    const row = await organizationJob(env.DB, submitter.organizationId, jobId);
    const deleted = {
      sessions: row?.sessionsDeleted ?? 0,
      traces: row?.tracesDeleted ?? 0,
      spans: row?.spansDeleted ?? 0,
    };
    if (!finished) await enqueue(env, jobId);
    return { jobId, finished, deleted };
  })();
  waitUntil(work.catch(() => undefined));
  return work;
}
