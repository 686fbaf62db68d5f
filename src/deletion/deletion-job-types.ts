/**
 * The shapes of a deletion job, apart from the code that stores and advances it: the job rows
 * (deletion-jobs.ts) and the per-database parts (job-parts.ts) both speak them, and neither
 * should import the other for a type.
 */
import type { JobStatus } from "../db/schema";

export interface DeletionRequestData {
  metadata_key: string;
  metadata_value: string;
  immediate: boolean;
}

/** A project an expiry job erases the old records of, and from when on it keeps them. */
export interface ExpiringProject {
  project_id: string;
  retention_days: number;
  /** created_at (microseconds) from which records are kept. */
  cutoff: number;
}

export interface ExpiryRequestData {
  projects: ExpiringProject[];
}

interface JobBase {
  id: string;
  organizationId: string;
  status: JobStatus;
  progress: DeletionCounts;
}

/** What a worker needs to advance a job: a deletion by metadata, or a retention expiry. */
export type DeletionJob = (JobBase & { kind: "metadata"; key: string; value: string }) | (JobBase & { kind: "expiry"; projects: ExpiringProject[] });

export interface DeletionCounts {
  sessions: number;
  traces: number;
  spans: number;
}
