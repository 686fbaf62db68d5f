/**
 * The export and delete-by-filter calls of the records table (contract section 10): the body is
 * the table's own search (run, filter tree, created_at order) so that what is exported or
 * deleted is what the table shows.
 */
import { api, ApiError } from "../api/client";
import { runSelector, type RunRef } from "../api/endpoints";
import { readToken } from "../api/token-store";
import type { Family, FilterJson } from "../api/types";

export type ExportFormat = "jsonl" | "jsonl_flat" | "csv";

export interface ExportChoice {
  run: RunRef;
  family: Family;
  filter: FilterJson | null;
  /** The table's sort: exports follow it when it is created_at (the one order they page by). */
  sort: { column: string; ascending: boolean } | null;
  /** CSV's columns: the table's. */
  columns: string[];
  format: ExportFormat;
  redact: boolean;
}

const ROOT_TYPES: Record<Family, string> = { traces: "trace", spans: "span", sessions: "session" };

function exportBody(choice: ExportChoice): Record<string, unknown> {
  return {
    ...runSelector(choice.run),
    root_type: ROOT_TYPES[choice.family],
    export_format: choice.format,
    redact: choice.redact,
    ...(choice.filter ? { filter_tree: choice.filter } : {}),
    ...(choice.sort?.column === "created_at" ? { sort: { column_id: "created_at", ascending: choice.sort.ascending } } : {}),
    ...(choice.format === "csv" ? { column_ids: choice.columns } : {}),
  };
}

const exportPath = (choice: ExportChoice) => `/v2/projects/${encodeURIComponent(choice.run.projectId)}/export_records`;

/** The streamed export, saved as a file by the browser; resolves once it is whole. */
export async function downloadExport(choice: ExportChoice): Promise<void> {
  const token = readToken();
  const response = await fetch(exportPath(choice), {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(exportBody(choice)),
  }).catch(() => {
    throw new ApiError(0, "The service cannot be reached. Check your connection and try again.");
  });
  if (!response.ok) {
    const detail = ((await response.json().catch(() => ({}))) as { detail?: unknown }).detail;
    throw new ApiError(response.status, typeof detail === "string" ? detail : Array.isArray(detail) ? detail.map((d: { msg?: string }) => d.msg).join("; ") : `HTTP ${response.status}`);
  }
  // A body cut mid-stream rejects here: never a short file saved as if whole.
  const blob = await response.blob();
  const name = /filename="([^"]+)"/.exec(response.headers.get("content-disposition") ?? "")?.[1] ?? "export";
  saveAs(blob, name);
}

function saveAs(blob: Blob, name: string): void {
  const link = document.createElement("a");
  link.href = URL.createObjectURL(blob);
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 60_000);
}

export interface QueuedExport {
  url: string;
  url_expires_at: string;
  file_name: string;
  job_id: string;
}

export const queueExport = (choice: ExportChoice) => api<QueuedExport>("POST", `${exportPath(choice)}/url`, exportBody(choice));

export interface OrgJobState {
  status: "queued" | "running" | "completed" | "failed";
  error_message: string | null;
  progress: { records_exported?: number; bytes_written?: number; sessions_deleted?: number; traces_deleted?: number; spans_deleted?: number };
}

export const orgJob = (jobId: string) => api<OrgJobState>("GET", `/v2/org-jobs/${encodeURIComponent(jobId)}`);

export interface Counts {
  sessions: number;
  traces: number;
  spans: number;
}

export interface FilterDeletionAnswer {
  job_id: string | null;
  message: string;
  deleted?: Counts;
  would_delete?: Counts;
}

export function deleteByFilter(run: RunRef, family: Family, filter: FilterJson | null, dryRun: boolean): Promise<FilterDeletionAnswer> {
  return api<FilterDeletionAnswer>("POST", `/v2/projects/${encodeURIComponent(run.projectId)}/${family}/delete${dryRun ? "?dry_run=true" : ""}`, {
    ...runSelector(run),
    ...(filter ? { filter_tree: filter } : {}),
  });
}
