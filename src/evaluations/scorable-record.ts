/**
 * What a scorer sees of a record (contract section 15, "Details"): its text fields as text (an
 * llm span's message list as `role: content` lines, a retriever's documents as their contents),
 * its metadata, metrics and the few columns presets and prompt templates name.
 */

/** The columns the consumer reads of each record it scores (src/evaluations/score-records.ts). */
export const SCORABLE_COLUMNS =
  "id, run_id, record_type, type, name, input, input_is_json, output, output_is_json, user_metadata, metrics, model, is_complete, dataset_output, created_at";

export interface ScorableRecord {
  id: string;
  run_id: string;
  record_type: "session" | "trace" | "span";
  type: string;
  name: string;
  input: string | null;
  input_is_json: number;
  output: string | null;
  output_is_json: number;
  user_metadata: string;
  metrics: string;
  model: string | null;
  is_complete: number;
  dataset_output: string | null;
  created_at: number;
}

export type TextField = "input" | "output";

/** The text of a content value: a string, or the text parts of a multimodal content list. */
function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (typeof part === "string" ? part : part && typeof part === "object" && typeof (part as { text?: unknown }).text === "string" ? (part as { text: string }).text : ""))
      .filter((t) => t.length > 0)
      .join("\n");
  }
  if (content === null || content === undefined) return "";
  return JSON.stringify(content);
}

/** A stored structured value as text: messages as `role: content` lines, documents as their contents, anything else as its JSON. */
export function structuredText(json: string): string {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return json;
  }
  const items = Array.isArray(value) ? value : value && typeof value === "object" ? [value] : null;
  if (items && items.length > 0 && items.every((m) => m && typeof m === "object" && typeof (m as { role?: unknown }).role === "string")) {
    return items.map((m) => `${(m as { role: string }).role}: ${contentText((m as { content?: unknown }).content)}`).join("\n");
  }
  if (items && items.length > 0 && items.every((d) => d && typeof d === "object" && "content" in (d as object))) {
    return items.map((d) => contentText((d as { content?: unknown }).content)).join("\n");
  }
  return typeof value === "string" ? value : json;
}

/** The record's field as text, or null when it has none. */
export function fieldText(record: ScorableRecord, field: TextField): string | null {
  const raw = field === "input" ? record.input : record.output;
  if (raw === null) return null;
  const isJson = field === "input" ? record.input_is_json : record.output_is_json;
  return isJson ? structuredText(raw) : raw;
}

export function metadataOf(record: ScorableRecord): Record<string, string> {
  try {
    const parsed = JSON.parse(record.user_metadata) as unknown;
    return parsed && typeof parsed === "object" && !Array.isArray(parsed) ? (parsed as Record<string, string>) : {};
  } catch {
    return {};
  }
}

export function metricsOf(record: ScorableRecord): Record<string, number> {
  try {
    const parsed = JSON.parse(record.metrics) as unknown;
    return parsed && typeof parsed === "object" && !Array.isArray(parsed) ? (parsed as Record<string, number>) : {};
  } catch {
    return {};
  }
}
