/** One function per API route the page uses: the page's whole contract with the service. */
import { api } from "./client";
import type { Column, CountAnswer, CurrentUser, DeletionAnswer, Family, FilterJson, OrgJob, Project, Run, RunKind, SearchAnswer, ApiRecord } from "./types";

export interface RunRef {
  projectId: string;
  kind: RunKind;
  runId: string;
}

/** The body field that names the run of a search. */
export function runSelector(run: RunRef): Record<string, string> {
  return run.kind === "log_streams" ? { log_stream_id: run.runId } : { experiment_id: run.runId };
}

const enc = encodeURIComponent;

export const getCurrentUser = () => api<CurrentUser>("GET", "/v2/current_user");
export const listProjects = () => api<Project[]>("GET", "/v2/projects");
export const getProject = (projectId: string) => api<Project>("GET", `/v2/projects/${enc(projectId)}`);
export const listRuns = (projectId: string, kind: RunKind) => api<Run[]>("GET", `/v2/projects/${enc(projectId)}/${kind}`);

export function availableColumns(run: RunRef, family: Family): Promise<Column[]> {
  return api<{ columns: Column[] }>("POST", `/v2/projects/${enc(run.projectId)}/${family}/available_columns`, runSelector(run)).then((a) => a.columns);
}

export interface SearchOptions {
  filterTree: FilterJson | null;
  sort: { column: string; ascending: boolean } | null;
  offset: number;
  limit: number;
  columns: string[] | null;
  includeCounts?: boolean;
  /** Ratings, aggregates and agreement on each record (the annotation columns' cells). */
  includeFeedback?: boolean;
}

function searchBody(run: RunRef, options: Pick<SearchOptions, "filterTree">): Record<string, unknown> {
  return { ...runSelector(run), ...(options.filterTree ? { filter_tree: options.filterTree } : {}) };
}

export function partialSearch(run: RunRef, family: Family, options: SearchOptions): Promise<SearchAnswer> {
  return api<SearchAnswer>("POST", `/v2/projects/${enc(run.projectId)}/${family}/partial_search`, {
    ...searchBody(run, options),
    pagination: { limit: options.limit, starting_token: options.offset },
    ...(options.sort ? { sort: { column_id: options.sort.column, ascending: options.sort.ascending, sort_type: "column" } } : {}),
    select_columns: {
      ...(options.columns ? { column_ids: options.columns } : { include_all_metrics: true }),
      ...(options.includeFeedback ? { include_all_feedback: true } : {}),
    },
    include_counts: options.includeCounts ?? false,
  });
}

/** Full records (every field, every metric), for the trace and session views. */
export function fullSearch(run: RunRef, family: Family, body: { filters: FilterJson[]; sort?: { column_id: string; ascending: boolean }; limit: number; starting_token: number; include_code_metric_metadata?: boolean }) {
  return api<SearchAnswer>("POST", `/v2/projects/${enc(run.projectId)}/${family}/search`, { ...runSelector(run), ...body });
}

export function countRecords(run: RunRef, family: Family, filterTree: FilterJson | null): Promise<CountAnswer> {
  return api<CountAnswer>("POST", `/v2/projects/${enc(run.projectId)}/${family}/count`, searchBody(run, { filterTree }));
}

export function getRecord(projectId: string, family: Family, id: string): Promise<ApiRecord> {
  return api<ApiRecord>("GET", `/v2/projects/${enc(projectId)}/${family}/${enc(id)}`);
}

export function deleteByMetadata(key: string, value: string, mode: "dry_run" | "queued"): Promise<DeletionAnswer> {
  const query = mode === "dry_run" ? "?dry_run=true" : "";
  return api<DeletionAnswer>("POST", `/v2/org-jobs/delete-by-metadata${query}`, { metadata_key: key, metadata_value: value });
}

export const getOrgJob = (jobId: string) => api<OrgJob>("GET", `/v2/org-jobs/${enc(jobId)}`);
