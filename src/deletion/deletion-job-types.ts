/**
 * The shapes of a deletion job, apart from the code that stores and advances it: the job rows
 * (deletion-jobs.ts) and the per-database parts (job-parts.ts) both speak them, and neither
 * should import the other for a type.
 */
import type { JobStatus } from "../db/schema";
import type { QueryCost } from "../limits/scan-admission";

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

/**
 * Deletion by filter (src/delete-by-filter): the records of one kind of one run that a search
 * filter matches, with their descendants. `selection` is the search statement compiled once by
 * the route (src/search's compiler: only our compiler's text, every request value bound in
 * `parameter`), re-run before every chunk so that each chunk matches live records; `cost` is its
 * scan classification, under which every chunk's selection is admitted.
 */
export interface FilterRequestData {
  project_id: string;
  run_id: string;
  root_type: "session" | "trace" | "span";
  filters: unknown[];
  filter_tree: unknown;
  immediate: boolean;
  selection: { sql: string; parameter: string };
  cost: QueryCost;
}

interface JobBase {
  id: string;
  organizationId: string;
  status: JobStatus;
  progress: DeletionCounts;
}

/** What a worker needs to advance a job: a deletion by metadata or by filter, or a retention expiry. */
export type DeletionJob =
  | (JobBase & { kind: "metadata"; key: string; value: string })
  | (JobBase & { kind: "expiry"; projects: ExpiringProject[] })
  | (JobBase & { kind: "filter"; request: FilterRequestData });

export interface DeletionCounts {
  sessions: number;
  traces: number;
  spans: number;
}
