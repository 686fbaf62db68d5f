/**
 * Starting a deletion: as a queued job, or inside the request up to IMMEDIATE_BUDGET with the
 * rest handed to the queue. A job row always exists before any record is deleted, so every
 * deletion is counted on a job and can be resumed by any message naming it.
 */
import type { Env } from "../env";
import { shardDatabase } from "../shards/shard-config";
import { advanceParts } from "./advance-parts";
import { immediateBudget } from "./deletion-budgets";
import type { DeletionCounts, DeletionRequestData } from "./deletion-job-types";
import {
  deletionJobById,
  failJob,
  insertDeletionJob,
  organizationJob,
} from "./deletion-jobs";
import type { MetadataSelector } from "./count-deletion-set";
import { ANY_MATCH } from "./deletion-sql";
import { openParts, shardsOfOrganization } from "./job-parts";

export interface Submitter {
  organizationId: string;
  userId: string;
}

/** Is there anything to delete at all, on any database holding the organization's projects? */
export async function anyMatch(env: Env, selector: MetadataSelector): Promise<boolean> {
  const shards = await shardsOfOrganization(env, selector.organizationId);
  const answers = await Promise.all(
    shards.map((shard) =>
      shardDatabase(env, shard).prepare(ANY_MATCH).bind(selector.organizationId, selector.key, selector.value).first<{ matched: number }>(),
    ),
  );
  return answers.some((row) => row?.matched === 1);
}

/**
 * How long the fallback message of an immediate deletion waits: far beyond the request's budget
 * (IMMEDIATE_BUDGET, 5 s) plus the 30 s a Worker may run on after answering (`waitUntil`).
 */
export const IMMEDIATE_FALLBACK_DELAY_SECONDS = 60;

const NOT_QUEUED = "The job could not be queued; nothing more will be deleted. Submit the request again.";

/**
 * Sends the job's messages, one per part (undefined: every open part); if that fails the job can
 * never run, so it is marked failed with `failureMessage`.
 */
export async function enqueueJob(env: Env, jobId: string, shards: readonly (string | undefined)[], delaySeconds = 0, failureMessage = NOT_QUEUED): Promise<void> {
  const messages = shards.map((shard) => ({ body: shard === undefined ? { jobId } : { jobId, shard }, ...(delaySeconds > 0 ? { delaySeconds } : {}) }));
  try {
    if (messages.length === 1) await env.DELETION_QUEUE.send(messages[0]!.body, delaySeconds > 0 ? { delaySeconds } : undefined);
    else if (messages.length > 1) await env.DELETION_QUEUE.sendBatch(messages);
  } catch (error) {
    await failJob(env, jobId, failureMessage);
    throw error;
  }
}

/** Stores the job and sends one message per part: the parts run in parallel, one per shard. */
export async function startQueuedDeletion(env: Env, submitter: Submitter, request: DeletionRequestData): Promise<string> {
  const jobId = await insertDeletionJob(env, {
    organizationId: submitter.organizationId,
    createdBy: submitter.userId,
    request,
    status: "queued",
  });
  await enqueueJob(env, jobId, await openParts(env, jobId));
  return jobId;
}

export interface ImmediateOutcome {
  jobId: string;
  /** True when nothing matching is left: the job is completed and its id need not be shown. */
  finished: boolean;
  deleted: DeletionCounts;
}

/**
 * Deletes within the request's budget, one part after the other, the budget shared by all of
 * them. The work is also handed to `waitUntil`, so a client that disconnects mid-way does not
 * cut it short: it still ends within the budget and hands what is left to the queue. A failure
 * inside the request does the same (the queue retries it).
 *
 * Before any chunk, a delayed fallback message naming the job (all its parts) is queued: if the
 * isolate dies outright mid-request (nothing in the request can then hand the rest over), that
 * message resumes the job a minute later. When the request finishes the job, the message finds
 * it completed and does nothing; messages are idempotent, so an extra one never double-deletes.
 */
export async function deleteWithinRequest(
  env: Env,
  submitter: Submitter,
  request: DeletionRequestData,
  waitUntil: (work: Promise<unknown>) => void,
): Promise<ImmediateOutcome> {
  const jobId = await insertDeletionJob(env, {
    organizationId: submitter.organizationId,
    createdBy: submitter.userId,
    request,
    status: "running",
  });
  return continueWithinRequest(env, submitter.organizationId, jobId, waitUntil);
}

/**
 * The immediate part of any deletion job already stored as `running` (by metadata, or by filter:
 * src/delete-by-filter): the fallback message, then chunks within the request's budget, the rest
 * handed to the queue.
 */
export async function continueWithinRequest(
  env: Env,
  organizationId: string,
  jobId: string,
  waitUntil: (work: Promise<unknown>) => void,
): Promise<ImmediateOutcome> {
  await enqueueJob(env, jobId, [undefined], IMMEDIATE_FALLBACK_DELAY_SECONDS);
  const work = (async (): Promise<ImmediateOutcome> => {
    let unfinished: string[] = [];
    try {
      const job = await deletionJobById(env.DB, jobId);
      if (job) unfinished = (await advanceParts(env, job, await openParts(env, jobId), immediateBudget())).unfinished;
    } catch (error) {
      console.error(`deletion job ${jobId}: immediate deletion failed, continuing on the queue:`, error instanceof Error ? error.message : String(error));
      unfinished = await openParts(env, jobId);
    }
    const row = await organizationJob(env.DB, organizationId, jobId);
    const deleted = {
      sessions: row?.sessionsDeleted ?? 0,
      traces: row?.tracesDeleted ?? 0,
      spans: row?.spansDeleted ?? 0,
    };
    const finished = row?.status === "completed";
    if (!finished && unfinished.length > 0) await enqueueJob(env, jobId, unfinished);
    return { jobId, finished, deleted };
  })();
  waitUntil(work.catch(() => undefined));
  return work;
}
