/**
 * The `org_jobs` rows of deletion by metadata: creating them, reading them for their organization
 * or for a worker, failing them, and their answer shape. The job row is the whole state of a
 * deletion (selector, status, progress): queue messages carry only its id.
 */
import { and, eq, inArray } from "drizzle-orm";
import { database, microsToIso, nowMicros } from "../db/client";
import type { BatchItem } from "drizzle-orm/batch";
import { type JobStatus, orgJobShards, orgJobs } from "../db/schema";
import type { Env } from "../env";
import { failShardPart, shardsOfOrganization } from "./job-parts";

export const DELETE_BY_METADATA = "delete_by_metadata";

/** Statuses in which a job still deletes; a completed or failed job never deletes again. */
export const ACTIVE_STATUSES = ["queued", "running"] as const satisfies readonly JobStatus[];

export interface DeletionRequestData {
  metadata_key: string;
  metadata_value: string;
  immediate: boolean;
}

/** What a worker needs to advance a job. */
export interface DeletionJob {
  id: string;
  organizationId: string;
  key: string;
  value: string;
  status: JobStatus;
  progress: DeletionCounts;
}

export interface DeletionCounts {
  sessions: number;
  traces: number;
  spans: number;
}

export type OrgJobRow = typeof orgJobs.$inferSelect;

/**
 * Stores a job and its parts: one per database holding projects of the organization
 * (job-parts.ts). Answers the job's id and the shards of its parts.
 */
export async function insertDeletionJob(
  env: Env,
  input: { organizationId: string; createdBy: string; request: DeletionRequestData; status: "queued" | "running" },
): Promise<string> {
  const id = crypto.randomUUID();
  const now = nowMicros();
  const shards = await shardsOfOrganization(env, input.organizationId);
  const db = database(env.DB);
  await db.batch([
    db.insert(orgJobs).values({
      id,
      organizationId: input.organizationId,
      jobName: DELETE_BY_METADATA,
      status: input.status,
      requestData: JSON.stringify(input.request),
      createdBy: input.createdBy,
      createdAt: now,
      updatedAt: now,
    }),
    ...shards.map((shard) => db.insert(orgJobShards).values({ jobId: id, shard, status: "queued", updatedAt: now })),
  ] as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
  return id;
}

/** The job if it belongs to the organization (any other organization's job does not exist). */
export async function organizationJob(d1: D1Database, organizationId: string, jobId: string): Promise<OrgJobRow | undefined> {
  const [row] = await database(d1)
    .select()
    .from(orgJobs)
    .where(and(eq(orgJobs.id, jobId), eq(orgJobs.organizationId, organizationId)))
    .limit(1);
  return row;
}

function parseRequestData(text: string): DeletionRequestData | undefined {
  try {
    const data = JSON.parse(text) as Partial<DeletionRequestData>;
    if (typeof data.metadata_key !== "string" || typeof data.metadata_value !== "string") return undefined;
    return { metadata_key: data.metadata_key, metadata_value: data.metadata_value, immediate: data.immediate === true };
  } catch {
    return undefined;
  }
}

/** The job a queue message names, or undefined when there is no such deletion job. */
export async function deletionJobById(d1: D1Database, jobId: string): Promise<DeletionJob | undefined> {
  const [row] = await database(d1)
    .select()
    .from(orgJobs)
    .where(and(eq(orgJobs.id, jobId), eq(orgJobs.jobName, DELETE_BY_METADATA)))
    .limit(1);
  if (!row) return undefined;
  const progress = { sessions: row.sessionsDeleted, traces: row.tracesDeleted, spans: row.spansDeleted };
  const request = parseRequestData(row.requestData);
  if (!request) {
    await database(d1)
      .update(orgJobs)
      .set({ status: "failed", errorMessage: "The job's request data is unreadable; nothing more will be deleted.", updatedAt: nowMicros() })
      .where(and(eq(orgJobs.id, row.id), inArray(orgJobs.status, [...ACTIVE_STATUSES])));
    return { id: row.id, organizationId: row.organizationId, key: "", value: "", status: "failed", progress };
  }
  const { metadata_key: key, metadata_value: value } = request;
  return { id: row.id, organizationId: row.organizationId, key, value, status: row.status, progress };
}

/**
 * Marks an active job, and its open parts, failed; a completed or already failed job keeps its
 * state. Each part's own database is told too (best effort: the catalog's status already keeps
 * new deliveries from starting chunks).
 */
export async function failJob(env: Env, jobId: string, errorMessage: string): Promise<void> {
  const db = database(env.DB);
  const job = await db.select({ organizationId: orgJobs.organizationId }).from(orgJobs).where(eq(orgJobs.id, jobId)).limit(1);
  const parts = await db.select({ shard: orgJobShards.shard }).from(orgJobShards).where(eq(orgJobShards.jobId, jobId));
  const now = nowMicros();
  await db.batch([
    db
      .update(orgJobs)
      .set({ status: "failed", errorMessage, updatedAt: now })
      .where(and(eq(orgJobs.id, jobId), inArray(orgJobs.status, [...ACTIVE_STATUSES]))),
    db
      .update(orgJobShards)
      .set({ status: "failed", updatedAt: now })
      .where(and(eq(orgJobShards.jobId, jobId), inArray(orgJobShards.status, [...ACTIVE_STATUSES]))),
  ]);
  const organizationId = job[0]?.organizationId;
  if (organizationId === undefined) return;
  await Promise.all(parts.map((part) => failShardPart(env, part.shard, { id: jobId, organizationId }).catch(() => undefined)));
}

export function jobAnswer(row: OrgJobRow) {
  const request = parseRequestData(row.requestData);
  return {
    id: row.id,
    organization_id: row.organizationId,
    job_name: row.jobName,
    status: row.status,
    request_data: {
      metadata_key: request?.metadata_key ?? "",
      metadata_value: request?.metadata_value ?? "",
      immediate: request?.immediate ?? false,
    },
    error_message: row.errorMessage,
    created_by: row.createdBy,
    created_at: microsToIso(row.createdAt),
    updated_at: microsToIso(row.updatedAt),
    progress: {
      sessions_deleted: row.sessionsDeleted,
      traces_deleted: row.tracesDeleted,
      spans_deleted: row.spansDeleted,
    },
  };
}

export function describeCounts(counts: DeletionCounts): string {
  const n = (count: number, word: string) => `${count} ${word}${count === 1 ? "" : "s"}`;
  return `${n(counts.sessions, "session")}, ${n(counts.traces, "trace")} and ${n(counts.spans, "span")}`;
}
