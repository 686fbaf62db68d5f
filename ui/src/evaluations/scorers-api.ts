/** The evaluations' API (contract section 15; docs/evaluations.md): scorers, versions, run settings, backfill. */
import { api } from "../api/client";

export const PRESETS = ["regex", "contains", "is_json", "json_schema", "length", "similarity", "latency_under", "cost_under", "pii", "refusal"] as const;

/** A starting point for each preset's params (the form's JSON). */
export const PRESET_EXAMPLES: Record<(typeof PRESETS)[number], unknown> = {
  regex: { pattern: "\\d+", field: "output", flags: "" },
  contains: { values: ["thank you"], mode: "any", case_sensitive: false, field: "output" },
  is_json: { field: "output" },
  json_schema: { schema: { type: "object" }, field: "output" },
  length: { unit: "words", max: 200, field: "output" },
  similarity: { reference: "dataset_output", method: "levenshtein", field: "output" },
  latency_under: { ms: 2000 },
  cost_under: { usd: 0.01 },
  pii: { field: "output" },
  refusal: { field: "output" },
};

export interface ScorerVersion {
  id: string;
  version: number;
  created_at: string;
  preset?: { name: string; params: unknown };
  llm?: { user_prompt: string; model_name: string; num_judges: number; output_type: string };
}

export interface Scorer {
  id: string;
  name: string;
  scorer_type: "llm" | "preset";
  description: string | null;
  output_type: string;
  scoreable_node_types: string[];
  daily_budget: number;
  latest_version: ScorerVersion | null;
  counts?: { pending: number; success: number; error: number };
  last_error?: { message: string; record_id: string; at: string } | null;
}

export interface RunSettings {
  scorers: { id: string; name: string; filters: unknown[]; scoreable_node_types: string[] | null }[];
  segment_filters: { filter: unknown; sample_rate: number; llm_scorers: boolean }[];
}

const enc = encodeURIComponent;
const settingsPath = (projectId: string, runId: string) => `/v2/projects/${enc(projectId)}/log_streams/${enc(runId)}/metric_settings`;

export const listScorers = () => api<{ scorers: Scorer[] }>("POST", "/v2/scorers/list", { limit: 100 }).then((page) => page.scorers);
export const getScorer = (id: string) => api<Scorer>("GET", `/v2/scorers/${enc(id)}`);
export const createScorer = (body: { name: string; scorer_type: "llm" | "preset"; output_type: string; scoreable_node_types: string[] }) => api<Scorer>("POST", "/v2/scorers", body);
export const deleteScorer = (id: string) => api<unknown>("DELETE", `/v2/scorers/${enc(id)}`);
export const addPresetVersion = (id: string, preset: string, params: unknown) => api<ScorerVersion>("POST", `/v2/scorers/${enc(id)}/version/preset`, { preset, params });
export const addLlmVersion = (id: string, body: { instructions: string; user_prompt: string; model_name: string; num_judges: number }) => api<ScorerVersion>("POST", `/v2/scorers/${enc(id)}/version/llm`, body);
export const getRunSettings = (projectId: string, runId: string) => api<RunSettings>("GET", settingsPath(projectId, runId));
export const putRunSettings = (
  projectId: string,
  runId: string,
  body: { scorers: { id: string; filters?: unknown[]; scoreable_node_types?: string[] }[]; segment_filters: { filter?: unknown; sample_rate: number; llm_scorers?: boolean }[] },
) =>
  api<RunSettings>("PATCH", settingsPath(projectId, runId), body);
export const backfill = (projectId: string, runId: string, body: { start_time: string; end_time: string; scorer_ids: string[] }) =>
  api<{ job_id: string; message: string }>("POST", `${settingsPath(projectId, runId)}/backfill`, body);

/** What `metric_info.<name>` would hold for the record, stored nowhere (`POST /v2/scorers/{id}/test`). */
export interface ScorerTestAnswer {
  scorer_id: string;
  version: number;
  record_id: string;
  result: { status_type: string; value?: number | string; label?: string; explanation?: string; message?: string; judge?: { model: string; num_input_tokens: number; num_output_tokens: number; cost: number | null } };
}
export const testScorer = (id: string, projectId: string, recordId: string) => api<ScorerTestAnswer>("POST", `/v2/scorers/${enc(id)}/test`, { project_id: projectId, record_id: recordId });
