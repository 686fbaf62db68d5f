/** Shapes of the public API's answers, as the page reads them (docs/api.md, docs/search.md). */

export type Family = "traces" | "spans" | "sessions";
export type RunKind = "log_streams" | "experiments";
export type FilterType = "text" | "date" | "collection" | "number" | "id" | "boolean";

export interface CurrentUser {
  id: string;
  email: string;
  organization_id: string;
  role: "admin" | "user";
}

export interface Project {
  id: string;
  name: string;
  type?: string | null;
  created_at?: string;
}

export interface Run {
  id: string;
  name: string;
  created_at?: string;
}

export interface Column {
  id: string;
  label: string;
  description: string;
  category: string;
  group_label: string;
  data_type: string;
  filter_type: FilterType;
  filterable: boolean;
  sortable: boolean;
  multi_valued: boolean;
  is_empty: boolean;
  applicable_types: string[];
  allowed_values?: string[] | null;
  data_unit?: string | null;
}

export type ApiRecord = Record<string, unknown> & { id: string; type: string };

export interface SearchAnswer {
  records: ApiRecord[];
  num_rows: number;
  starting_token: number;
  limit: number;
  paginated: boolean;
  next_starting_token: number | null;
}

export interface CountAnswer {
  total_count: number;
  capped: boolean;
}

export interface DeletionCounts {
  sessions: number;
  traces: number;
  spans: number;
}

export interface DeletionAnswer {
  job_id: string | null;
  message: string;
  deleted?: DeletionCounts;
  would_delete?: DeletionCounts;
}

export interface OrgJob {
  id: string;
  status: "queued" | "running" | "completed" | "failed";
  error_message: string | null;
  progress: { sessions_deleted: number; traces_deleted: number; spans_deleted: number };
}

/** A filter element of the API: a leaf or an and/or/not node. */
export type FilterJson =
  | { and: FilterJson[] }
  | { or: FilterJson[] }
  | { not: FilterJson }
  | { filter: FilterLeafJson }
  | FilterLeafJson
  | { type: "fully_annotated"; user_ids?: string[] };

export interface FilterLeafJson {
  type?: FilterType;
  column_id: string;
  operator?: string;
  value?: unknown;
  case_sensitive?: boolean;
}
