/**
 * An independent evaluator of search requests, in plain TypeScript over the records as the test
 * sent them. It shares no code with src/search: it reads the request JSON as a client writes it
 * and implements the contract's rules (docs/search.md) directly, so the service's answers can be
 * checked against it.
 */

export type Family = "session" | "trace" | "span";

/** A record as the service should store it (timestamps in microseconds, text as stored). */
export interface RefRecord {
  id: string;
  family: Family;
  type: string;
  name: string;
  created_at: number;
  updated_at: number | null;
  /** The stored text: the string sent, or the JSON of the structure sent. */
  input: string | null;
  output: string | null;
  status_code: number | null;
  external_id: string | null;
  dataset_input: string | null;
  dataset_output: string | null;
  dataset_metadata: Record<string, string> | null;
  session_id: string | null;
  trace_id: string | null;
  parent_id: string | null;
  project_id: string;
  run_id: string;
  has_children: boolean;
  is_complete: boolean;
  step_number: number | null;
  error_message: string | null;
  progress_message: string | null;
  user_metadata: Record<string, string>;
  tags: string[];
  metrics: Record<string, number>;
  model: string | null;
  temperature: number | null;
  finish_reason: string | null;
  tool_call_id: string | null;
  agent_type: string | null;
  control_id: number | null;
  agent_name: string | null;
  /** Ratings of the record (contract section 8), by every annotator. */
  ratings?: { template: string; annotator: string; value: unknown }[];
}

/** A template of the searched project: what annotation leaves, sorts and fully_annotated read. */
export interface RefTemplate {
  id: string;
  type: "like_dislike" | "score";
}

const ANNOTATION_PREFIX = "annotations/";

function ratingsOf(record: RefRecord, templateId: string): unknown[] {
  return (record.ratings ?? []).filter((r) => r.template === templateId).map((r) => r.value);
}

/** The aggregate an annotation sort orders by: like share or average; null when unrated. */
function annotationAggregate(record: RefRecord, templateId: string): number | null {
  const values = ratingsOf(record, templateId).map((v) => (v === true ? 1 : v === false ? 0 : (v as number)));
  return values.length === 0 ? null : values.reduce((a, b) => a + b, 0) / values.length;
}

type Json = unknown;
type Value = string | number | boolean | null;

const SPAN_ONLY = new Set(["type", "trace_id", "parent_id", "step_number"]);
const NOT_SESSION = new Set(["tags", "status_code", "dataset_input", "dataset_output", "session_id", "project_id", "run_id", "updated_at", "has_children", "is_complete"]);

/** Filter type of every standard column the evaluator knows (the seed's table, typed out again). */
export const COLUMN_TYPES: Record<string, string> = {
  input: "text", output: "text", name: "text", created_at: "date", external_id: "text", id: "id",
  progress_message: "text", error_message: "text", tags: "collection", status_code: "number",
  dataset_input: "text", dataset_output: "text", session_id: "id", project_id: "id", run_id: "id",
  updated_at: "date", has_children: "boolean", is_complete: "boolean", type: "text", trace_id: "id",
  parent_id: "id", step_number: "number", model: "text", temperature: "number", finish_reason: "text",
  tool_call_id: "text", agent_type: "text", control_id: "number", agent_name: "text",
};

export function columnType(column: string): string {
  if (column.startsWith("metrics/")) return "number";
  if (column.startsWith("user_metadata.") || column.startsWith("dataset_metadata.")) return "text";
  return COLUMN_TYPES[column]!;
}

/** ASCII-only case folding, as SQLite's lower(). */
export function fold(text: string): string {
  return text.replace(/[A-Z]/g, (c) => c.toLowerCase());
}

/** ISO 8601 -> microseconds, keeping the sub-millisecond digits. */
export function isoMicros(iso: string): number {
  const match = /\.(\d+)/.exec(iso);
  const fraction = (match?.[1] ?? "").padEnd(6, "0");
  const whole = Date.parse(iso.replace(/\.\d+/, ""));
  return whole * 1000 + Number(fraction.slice(0, 6));
}

/** The record's value for a column, or null when it has none. */
export function valueOf(record: RefRecord, column: string): Value | string[] {
  if (column.startsWith(ANNOTATION_PREFIX)) return annotationAggregate(record, column.slice(ANNOTATION_PREFIX.length));
  if (column.startsWith("metrics/")) return record.metrics[column.slice(8)] ?? null;
  if (column.startsWith("user_metadata.")) return record.user_metadata[column.slice(14)] ?? null;
  if (column.startsWith("dataset_metadata.")) return record.dataset_metadata?.[column.slice(17)] ?? null;
  if (column === "tags") return record.tags;
  return ((record as unknown as Record<string, Value>)[column] ?? null) as Value;
}

function textEq(a: string, b: string, caseSensitive: boolean): boolean {
  return caseSensitive ? a === b : fold(a) === fold(b);
}

function asList(value: Json): string[] {
  return Array.isArray(value) ? (value as string[]) : [value as string];
}

interface Leaf {
  type?: string;
  column_id?: string;
  name?: string;
  operator?: string;
  value?: Json;
  case_sensitive?: boolean;
}

let searchedTemplates: readonly RefTemplate[] = [];

function leafMatches(record: RefRecord, leaf: Leaf): boolean {
  if (leaf.type === "fully_annotated") {
    // Rated with every template of the project, by each of user_ids (none: by anyone).
    const users = ((leaf as { user_ids?: string[] }).user_ids ?? []).filter(Boolean);
    const rated = (template: string, user?: string) => (record.ratings ?? []).some((r) => r.template === template && (user === undefined || r.annotator === user));
    return searchedTemplates.length > 0 && searchedTemplates.every((t) => (users.length === 0 ? rated(t.id) : users.every((u) => rated(t.id, u))));
  }
  const column = (leaf.column_id ?? leaf.name)!;
  if (column.startsWith(ANNOTATION_PREFIX)) {
    // At least one rating satisfies the leaf; no rating: no match.
    return ratingsOf(record, column.slice(ANNOTATION_PREFIX.length)).some((value) =>
      leafMatches({ ...record, ratings: [], metrics: { rating: value === true ? 1 : value === false ? 0 : (value as number) } }, { ...leaf, column_id: "metrics/rating", name: undefined, type: "number", value: typeof leaf.value === "boolean" ? Number(leaf.value) : leaf.value }),
    );
  }
  const type = leaf.type ?? columnType(column);
  const operator = leaf.operator ?? "eq";
  const cs = leaf.case_sensitive ?? true;
  const value = valueOf(record, column);
  if (type === "collection") {
    const tags = value as string[];
    const wanted = asList(leaf.value);
    switch (operator) {
      case "contains":
        return tags.some((t) => textEq(t, leaf.value as string, cs));
      case "one_of":
        return tags.some((t) => wanted.some((w) => textEq(t, w, cs)));
      case "not_in":
        return !tags.some((t) => wanted.some((w) => textEq(t, w, cs)));
      case "eq": {
        const norm = (xs: string[]) => new Set(xs.map((x) => (cs ? x : fold(x))));
        const a = norm(tags);
        const b = norm(wanted);
        return a.size === b.size && [...a].every((x) => b.has(x));
      }
    }
    throw new Error(`collection operator ${operator}`);
  }
  if (value === null) return false;
  switch (type) {
    case "id": {
      const v = value as string;
      if (operator === "contains") return v.includes((leaf.value as string).toLowerCase());
      const list = asList(leaf.value).map((x) => x.toLowerCase());
      if (operator === "eq") return v === list[0];
      if (operator === "ne") return v !== list[0];
      if (operator === "one_of") return list.includes(v);
      return !list.includes(v);
    }
    case "text": {
      const v = value as string;
      if (operator === "contains") return (cs ? v : fold(v)).includes(cs ? (leaf.value as string) : fold(leaf.value as string));
      const list = asList(leaf.value);
      if (operator === "eq") return textEq(v, list[0]!, cs);
      if (operator === "ne") return !textEq(v, list[0]!, cs);
      if (operator === "one_of") return list.some((x) => textEq(v, x, cs));
      return !list.some((x) => textEq(v, x, cs));
    }
    case "boolean":
      return operator === "eq" ? value === leaf.value : value !== leaf.value;
    case "date":
    case "number": {
      const v = value as number;
      if (operator === "between") {
        const [low, high] = leaf.value as [number, number];
        return v >= low && v <= high;
      }
      const x = type === "date" ? isoMicros(leaf.value as string) : (leaf.value as number);
      switch (operator) {
        case "eq": return v === x;
        case "ne": return v !== x;
        case "gt": return v > x;
        case "gte": return v >= x;
        case "lt": return v < x;
        case "lte": return v <= x;
      }
    }
  }
  throw new Error(`unhandled leaf ${JSON.stringify(leaf)}`);
}

export function matches(record: RefRecord, node: Json): boolean {
  const n = node as Record<string, Json>;
  if ("and" in n) return (n.and as Json[]).every((c) => matches(record, c));
  if ("or" in n) return (n.or as Json[]).some((c) => matches(record, c));
  if ("not" in n) return !matches(record, n.not);
  if ("filter" in n) return leafMatches(record, n.filter as Leaf);
  return leafMatches(record, n as Leaf);
}

/** SQLite compares text by its UTF-8 bytes. */
function compareText(a: string, b: string): number {
  const x = new TextEncoder().encode(a);
  const y = new TextEncoder().encode(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return x.length - y.length;
}

function compareValues(a: Value, b: Value): number {
  if (typeof a === "string" && typeof b === "string") return compareText(a, b);
  return Number(a) - Number(b);
}

export interface SearchBody {
  filters?: Json[];
  filter_tree?: Json;
  sort?: { column_id?: string; name?: string; ascending?: boolean } | null;
}

/** Records of `family` that match, in the order the contract prescribes. */
export function evaluate(records: readonly RefRecord[], family: Family, body: SearchBody, templates: readonly RefTemplate[] = []): RefRecord[] {
  searchedTemplates = templates;
  const tree = { and: [...(body.filters ?? []), ...(body.filter_tree ? [body.filter_tree] : [])] };
  const found = records.filter((r) => r.family === family && matches(r, tree));
  const sortColumn = body.sort ? (body.sort.column_id ?? body.sort.name)! : "created_at";
  const ascending = body.sort ? (body.sort.ascending ?? true) : false;
  const sign = ascending ? 1 : -1;
  return found.sort((a, b) => {
    const va = valueOf(a, sortColumn) as Value;
    const vb = valueOf(b, sortColumn) as Value;
    if (va === null && vb !== null) return 1;
    if (vb === null && va !== null) return -1;
    const byValue = va === null || vb === null ? 0 : compareValues(va, vb);
    return byValue !== 0 ? sign * byValue : sign * compareText(a.id, b.id);
  });
}

/** Whether a standard column applies to a family (for generating valid requests). */
export function columnAppliesTo(column: string, family: Family): boolean {
  if (column.startsWith("metrics/") || column.startsWith("user_metadata.") || column.startsWith(ANNOTATION_PREFIX)) return true;
  if (column.startsWith("dataset_metadata.")) return family !== "session";
  if (SPAN_ONLY.has(column) || ["model", "temperature", "finish_reason", "tool_call_id", "agent_type", "control_id", "agent_name"].includes(column)) {
    return family === "span";
  }
  if (NOT_SESSION.has(column)) return family !== "session";
  return true;
}
