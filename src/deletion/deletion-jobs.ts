/**
 * The `org_jobs` rows of deletion by metadata: creating them, reading them for their organization
 * or for a worker, failing them, and their answer shape. The job row is the whole state of a
 * deletion (selector, status, progress): queue messages carry only its id.
 */
import { and, desc, eq, inArray } from "drizzle-orm";
import { database, microsToIso, nowMicros } from "../db/client";
import type { BatchItem } from "drizzle-orm/batch";
import { type JobStatus, orgJobShards, orgJobs } from "../db/schema";
import type { Env } from "../env";
import type { DeletionCounts, DeletionJob, DeletionRequestData, ExpiryRequestData, FilterRequestData } from "./deletion-job-types";
import { failShardPart, shardsOfOrganization } from "./job-parts";

export const DELETE_BY_METADATA = "delete_by_metadata";
/** Retention expiry (src/retention): created by the hourly cron, run by the same engine. */
export const EXPIRE_RETENTION = "expire_retention";
/** Deletion by filter (src/delete-by-filter): one run's records matching a search filter. */
export const DELETE_BY_FILTER = "delete_by_filter";
export const JOB_NAMES = [DELETE_BY_METADATA, EXPIRE_RETENTION, DELETE_BY_FILTER] as const;
/**
 * A queued export (src/export): an org-job too, listed and read here with the others, advanced by
 * its own queue; its creator may read it, not only admins.
 */
export const EXPORT_RECORDS = "export_records";
export const ORG_JOB_NAMES = [...JOB_NAMES, EXPORT_RECORDS] as const;

/** Statuses in which a job still deletes; a completed or failed job never deletes again. */
export const ACTIVE_STATUSES = ["queued", "running"] as const satisfies readonly JobStatus[];

export type OrgJobRow = typeof orgJobs.$inferSelect;

/**
 * Stores a job and its parts: one per database holding projects of the organization
 * (job-parts.ts). Answers the job's id and the shards of its parts.
 */
export async function insertDeletionJob(
  env: Env,
  input: { organizationId: string; createdBy: string; request: DeletionRequestData; status: "queued" | "running" },
): Promise<string> {
  const shards = await shardsOfOrganization(env, input.organizationId);
  return insertOrgJob(env, { ...input, jobName: DELETE_BY_METADATA, shards });
}

/** Stores any organization job (a deletion, an expiry) with one queued part per shard, in one batch. */
export async function insertOrgJob(
  env: Env,
  input: {
    organizationId: string;
    createdBy: string;
    jobName: (typeof JOB_NAMES)[number];
    request: DeletionRequestData | ExpiryRequestData | FilterRequestData;
    status: "queued" | "running";
    shards: readonly string[];
  },
): Promise<string> {
  const id = crypto.randomUUID();
  const now = nowMicros();
  const db = database(env.DB);
  await db.batch([
    db.insert(orgJobs).values({
      id,
      organizationId: input.organizationId,
      jobName: input.jobName,
      status: input.status,
      requestData: JSON.stringify(input.request),
      createdBy: input.createdBy,
      createdAt: now,
      updatedAt: now,
    }),
    ...input.shards.map((shard) => db.insert(orgJobShards).values({ jobId: id, shard, status: "queued", updatedAt: now })),
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

/**
 * A page of the organization's jobs, newest first (`org_jobs_organization`: organization_id,
 * created_at; the filters are checked on the rows it yields).
 */
export async function organizationJobs(
  d1: D1Database,
  organizationId: string,
  page: { jobName?: string; status?: JobStatus; offset: number; limit: number },
): Promise<OrgJobRow[]> {
  return database(d1)
    .select()
    .from(orgJobs)
    .where(
      and(
        eq(orgJobs.organizationId, organizationId),
        page.jobName !== undefined ? eq(orgJobs.jobName, page.jobName) : undefined,
        page.status !== undefined ? eq(orgJobs.status, page.status) : undefined,
      ),
    )
    .orderBy(desc(orgJobs.createdAt), desc(orgJobs.id))
    .limit(page.limit)
    .offset(page.offset);
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

function parseExpiryData(text: string): ExpiryRequestData | undefined {
  try {
    const data = JSON.parse(text) as Partial<ExpiryRequestData>;
    if (!Array.isArray(data.projects)) return undefined;
    const valid = data.projects.every(
      (p) => typeof p?.project_id === "string" && Number.isSafeInteger(p.cutoff) && Number.isSafeInteger(p.retention_days),
    );
    return valid ? { projects: data.projects } : undefined;
  } catch {
    return undefined;
  }
}

const ROOT_TYPES = ["session", "trace", "span"];

function parseFilterData(text: string): FilterRequestData | undefined {
  try {
    const data = JSON.parse(text) as Partial<FilterRequestData>;
    const valid =
      typeof data.project_id === "string" &&
      typeof data.run_id === "string" &&
      ROOT_TYPES.includes(data.root_type ?? "") &&
      typeof data.selection?.sql === "string" &&
      typeof data.selection.parameter === "string" &&
      (data.cost?.class === "indexed" || data.cost?.class === "scan");
    return valid ? (data as FilterRequestData) : undefined;
  } catch {
    return undefined;
  }
}

function parseJobRequest(jobName: string, text: string) {
  if (jobName === EXPIRE_RETENTION) return parseExpiryData(text);
  if (jobName === DELETE_BY_FILTER) return parseFilterData(text);
  return parseRequestData(text);
}

/** The job a queue message names, or undefined when there is no such deletion job. */
export async function deletionJobById(d1: D1Database, jobId: string): Promise<DeletionJob | undefined> {
  const [row] = await database(d1)
    .select()
    .from(orgJobs)
    .where(and(eq(orgJobs.id, jobId), inArray(orgJobs.jobName, [...JOB_NAMES])))
    .limit(1);
  if (!row) return undefined;
  const progress = { sessions: row.sessionsDeleted, traces: row.tracesDeleted, spans: row.spansDeleted };
  const base = { id: row.id, organizationId: row.organizationId, progress };
  const request = parseJobRequest(row.jobName, row.requestData);
  if (!request) {
    await database(d1)
      .update(orgJobs)
      .set({ status: "failed", errorMessage: "The job's request data is unreadable; nothing more will be deleted.", updatedAt: nowMicros() })
      .where(and(eq(orgJobs.id, row.id), inArray(orgJobs.status, [...ACTIVE_STATUSES])));
    return { ...base, kind: "metadata", key: "", value: "", status: "failed" };
  }
  if ("projects" in request) return { ...base, kind: "expiry", projects: request.projects, status: row.status };
  if ("selection" in request) return { ...base, kind: "filter", request, status: row.status };
  const { metadata_key: key, metadata_value: value } = request;
  return { ...base, kind: "metadata", key, value, status: row.status };
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

function exportRequestAnswer(text: string) {
  try {
    const data = JSON.parse(text) as { project_id?: string; run_id?: string; body?: Record<string, unknown> };
    const body = data.body ?? {};
    return {
      project_id: String(data.project_id ?? ""),
      run_id: String(data.run_id ?? ""),
      root_type: (body.root_type ?? "trace") as "session" | "trace" | "span",
      export_format: (body.export_format ?? "jsonl") as "jsonl" | "jsonl_flat" | "csv",
      filters: Array.isArray(body.filters) ? body.filters : [],
      filter_tree: body.filter_tree ?? null,
    };
  } catch {
    return { project_id: "", run_id: "", root_type: "trace" as const, export_format: "jsonl" as const, filters: [], filter_tree: null };
  }
}

/** A redaction job (src/redaction/apply-job.ts): the job name, here to keep this module below that one. */
const REDACT = "redact";
/** A backfill of scorers over a run (src/evaluations/backfill-job.ts). */
const SCORE = "score";

function requestDataAnswer(row: OrgJobRow) {
  if (row.jobName === EXPORT_RECORDS) return exportRequestAnswer(row.requestData);
  if (row.jobName === SCORE) {
    const data = JSON.parse(row.requestData) as { project_id?: string; run_id?: string; start_time?: string; end_time?: string; scorer_ids?: string[] | null };
    return { project_id: data.project_id ?? "", run_id: data.run_id ?? "", start_time: data.start_time ?? "", end_time: data.end_time ?? "", scorer_ids: data.scorer_ids ?? null };
  }
  if (row.jobName === REDACT) {
    const data = JSON.parse(row.requestData) as { project_id?: string; start_time?: string | null; end_time?: string | null };
    return { project_id: data.project_id ?? "", start_time: data.start_time ?? null, end_time: data.end_time ?? null };
  }
  if (row.jobName === EXPIRE_RETENTION) {
    const request = parseExpiryData(row.requestData);
    return {
      projects: (request?.projects ?? []).map((p) => ({ project_id: p.project_id, retention_days: p.retention_days, cutoff: microsToIso(p.cutoff) })),
    };
  }
  if (row.jobName === DELETE_BY_FILTER) {
    // The compiled selection is the engine's business, not the client's.
    const request = parseFilterData(row.requestData);
    return {
      project_id: request?.project_id ?? "",
      run_id: request?.run_id ?? "",
      root_type: request?.root_type ?? "trace",
      filters: request?.filters ?? [],
      filter_tree: request?.filter_tree ?? null,
      immediate: request?.immediate ?? false,
    };
  }
  const request = parseRequestData(row.requestData);
  return {
    metadata_key: request?.metadata_key ?? "",
    metadata_value: request?.metadata_value ?? "",
    immediate: request?.immediate ?? false,
  };
}

export function jobAnswer(row: OrgJobRow) {
  return {
    id: row.id,
    organization_id: row.organizationId,
    job_name: row.jobName,
    status: row.status,
    request_data: requestDataAnswer(row),
    error_message: row.errorMessage,
    created_by: row.createdBy,
    created_at: microsToIso(row.createdAt),
    updated_at: microsToIso(row.updatedAt),
    progress:
      row.jobName === EXPORT_RECORDS
        ? { records_exported: row.recordsExported, bytes_written: row.bytesWritten }
        : row.jobName === REDACT
          ? { records_scanned: row.recordsScanned, records_changed: row.recordsChanged }
          : row.jobName === SCORE
            ? { records_scored: row.recordsScored, records_skipped: row.recordsSkipped, errors: row.scoreErrors }
          : { sessions_deleted: row.sessionsDeleted, traces_deleted: row.tracesDeleted, spans_deleted: row.spansDeleted },
  };
}

export function describeCounts(counts: DeletionCounts): string {
  const n = (count: number, word: string) => `${count} ${word}${count === 1 ? "" : "s"}`;
  return `${n(counts.sessions, "session")}, ${n(counts.traces, "trace")} and ${n(counts.spans, "span")}`;
}
