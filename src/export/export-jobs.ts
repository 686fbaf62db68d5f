/**
 * The catalog's rows of a queued export: its `org_jobs` row (`job_name: "export_records"`, the
 * request, status and progress, as every organization job) and its `export_files` row (where the
 * file is in R2 and how far its upload stands). Queue messages carry only the job's id.
 *
 * Each message's state is saved with one compare-and-set on `step` (the messages that advanced
 * it so far): a redelivered message that finds the step moved on does nothing, so the job is
 * safe under at-least-once delivery.
 */
import { nowMicros } from "../db/client";
import type { RunKind } from "../db/schema";
import { EXPORT_RECORDS } from "../deletion/deletion-jobs";
import type { Env } from "../env";
import type { ExportFormat } from "./export-formats";
import type { KeysetCursor } from "./export-reader";
import type { ExportBody } from "./export-request";

/** How long the download URL, and the file, live (contract section 10). */
export const EXPORT_LIFETIME_MICROS = 24 * 3600 * 1_000_000;

/** What the job re-reads in each message: the request as validated, and the run it names. */
export interface ExportRequestData {
  project_id: string;
  run_id: string;
  run_kind: RunKind;
  body: ExportBody;
}

export interface UploadedPart {
  partNumber: number;
  etag: string;
}

export interface ExportFileState {
  jobId: string;
  organizationId: string;
  projectId: string;
  createdBy: string;
  status: string;
  request: ExportRequestData;
  objectKey: string;
  fileName: string;
  contentType: string;
  uploadId: string | null;
  parts: UploadedPart[];
  cursor: KeysetCursor | null;
  step: number;
  partialBytes: number;
  oldestCreatedAt: number | null;
  recordsExported: number;
  bytesWritten: number;
  createdAt: number;
  expiresAt: number;
  completedAt: number | null;
  erasedAt: number | null;
  removedAt: number | null;
}

/** The object of a job's file: under its organization, so that one listing shows all of theirs. */
export const objectKeyOf = (organizationId: string, jobId: string, format: ExportFormat) =>
  `exports/${organizationId}/${jobId}.${format === "csv" ? "csv" : "jsonl"}`;

/** The object holding the partial part written up to `step` (kept between queue messages). */
export const partialKeyOf = (objectKey: string, step: number) => `${objectKey}.partial-${step}`;

export async function insertExportJob(
  env: Env,
  input: { organizationId: string; createdBy: string; request: ExportRequestData; fileName: string; contentType: string; format: ExportFormat },
): Promise<{ jobId: string; expiresAt: number; objectKey: string }> {
  const jobId = crypto.randomUUID();
  const now = nowMicros();
  const expiresAt = now + EXPORT_LIFETIME_MICROS;
  const objectKey = objectKeyOf(input.organizationId, jobId, input.format);
  await env.DB.batch([
    env.DB.prepare(
      "INSERT INTO org_jobs (id, organization_id, job_name, status, request_data, created_by, created_at, updated_at) VALUES (?1, ?2, ?3, 'queued', ?4, ?5, ?6, ?6)",
    ).bind(jobId, input.organizationId, EXPORT_RECORDS, JSON.stringify(input.request), input.createdBy, now),
    env.DB.prepare(
      "INSERT INTO export_files (job_id, organization_id, project_id, object_key, file_name, content_type, created_at, expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    ).bind(jobId, input.organizationId, input.request.project_id, objectKey, input.fileName, input.contentType, now, expiresAt),
  ]);
  return { jobId, expiresAt, objectKey };
}

interface FileRow {
  job_id: string;
  organization_id: string;
  project_id: string;
  created_by: string;
  status: string;
  request_data: string;
  records_exported: number;
  bytes_written: number;
  object_key: string;
  file_name: string;
  content_type: string;
  upload_id: string | null;
  parts: string;
  cursor: string | null;
  step: number;
  partial_bytes: number;
  oldest_created_at: number | null;
  created_at: number;
  expires_at: number;
  completed_at: number | null;
  erased_at: number | null;
  removed_at: number | null;
}

const FILE_QUERY = `
SELECT f.*, j.created_by, j.status, j.request_data, j.records_exported, j.bytes_written
FROM export_files AS f JOIN org_jobs AS j ON j.id = f.job_id
WHERE f.job_id = ?1`;

/** The export's state, or undefined when there is no such export job. */
export async function exportFileState(env: Env, jobId: string): Promise<ExportFileState | undefined> {
  const row = await env.DB.prepare(FILE_QUERY).bind(jobId).first<FileRow>();
  if (!row) return undefined;
  return {
    jobId: row.job_id,
    organizationId: row.organization_id,
    projectId: row.project_id,
    createdBy: row.created_by,
    status: row.status,
    request: JSON.parse(row.request_data) as ExportRequestData,
    objectKey: row.object_key,
    fileName: row.file_name,
    contentType: row.content_type,
    uploadId: row.upload_id,
    parts: JSON.parse(row.parts) as UploadedPart[],
    cursor: row.cursor === null ? null : (JSON.parse(row.cursor) as KeysetCursor),
    step: row.step,
    partialBytes: row.partial_bytes,
    oldestCreatedAt: row.oldest_created_at,
    recordsExported: row.records_exported,
    bytesWritten: row.bytes_written,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    completedAt: row.completed_at,
    erasedAt: row.erased_at,
    removedAt: row.removed_at,
  };
}

/** What one message wrote: the upload after it, and whether the file is complete. */
export interface ExportAdvance {
  uploadId: string | null;
  parts: UploadedPart[];
  cursor: KeysetCursor | null;
  partialBytes: number;
  oldestCreatedAt: number | null;
  recordsExported: number;
  bytesWritten: number;
  completed: boolean;
}

/**
 * Saves a message's work if the file is still at `fromStep` and was not erased meanwhile;
 * false when another delivery got there first or an erasure made the file unservable (the
 * caller then leaves the job as it is, or removes what it wrote).
 */
export async function saveAdvance(env: Env, state: ExportFileState, advance: ExportAdvance): Promise<boolean> {
  const now = nowMicros();
  const [saved] = await env.DB.batch([
    env.DB.prepare(
      `UPDATE export_files SET upload_id = ?3, parts = ?4, cursor = ?5, partial_bytes = ?6, oldest_created_at = ?7, step = step + 1,
         completed_at = CASE WHEN ?8 THEN ?9 ELSE NULL END
       WHERE job_id = ?1 AND step = ?2 AND erased_at IS NULL AND removed_at IS NULL`,
    ).bind(
      state.jobId,
      state.step,
      advance.uploadId,
      JSON.stringify(advance.parts),
      advance.cursor === null ? null : JSON.stringify(advance.cursor),
      advance.partialBytes,
      advance.oldestCreatedAt,
      advance.completed ? 1 : 0,
      now,
    ),
    // changes(): the file's row was saved by the statement before (platform.md, "D1").
    env.DB.prepare(
      `UPDATE org_jobs SET records_exported = ?2, bytes_written = ?3, status = CASE WHEN ?4 THEN 'completed' ELSE 'running' END, updated_at = ?5
       WHERE id = ?1 AND status IN ('queued', 'running') AND changes() = 1`,
    ).bind(state.jobId, advance.recordsExported, advance.bytesWritten, advance.completed ? 1 : 0, now),
  ]);
  return (saved?.meta.changes ?? 0) === 1;
}

/** Marks an active export failed; its file is due for removal at once. */
export async function failExport(env: Env, jobId: string, errorMessage: string): Promise<void> {
  const now = nowMicros();
  await env.DB.batch([
    env.DB.prepare("UPDATE org_jobs SET status = 'failed', error_message = ?2, updated_at = ?3 WHERE id = ?1 AND status IN ('queued', 'running')").bind(jobId, errorMessage, now),
    env.DB.prepare("UPDATE export_files SET expires_at = min(expires_at, ?2) WHERE job_id = ?1 AND completed_at IS NULL").bind(jobId, now),
  ]);
}
