/**
 * How exported records are written (contract section 10; docs/export.md): one JSON line per root
 * with its descendants nested (`jsonl`), one JSON line per record (`jsonl_flat`), or CSV rows
 * under a header of column ids (`csv`). Pure functions: no I/O here.
 */
export type ExportFormat = "jsonl" | "jsonl_flat" | "csv";

export type ExportRecord = Record<string, unknown>;

export const CONTENT_TYPES: Record<ExportFormat, string> = {
  jsonl: "application/x-ndjson",
  jsonl_flat: "application/x-ndjson",
  csv: "text/csv; charset=utf-8",
};

const EXTENSIONS: Record<ExportFormat, string> = { jsonl: "jsonl", jsonl_flat: "jsonl", csv: "csv" };

/**
 * `redact`: where a record has `redacted_input` / `redacted_output`, they replace `input` /
 * `output` (the redacted fields stay as they are).
 */
export function redacted(record: ExportRecord): ExportRecord {
  const out = { ...record };
  if (record.redacted_input !== undefined && record.redacted_input !== null) out.input = record.redacted_input;
  if (record.redacted_output !== undefined && record.redacted_output !== null) out.output = record.redacted_output;
  return out;
}

/**
 * The file name of Content-Disposition: the client's, reduced to letters, digits, `.`, `-` and
 * `_` (anything else, quotes and path separators included, becomes `_`), at most 100 characters,
 * never starting with a dot; by default `<root_type>s-export.<ext>`.
 */
export function sanitizedFileName(requested: string | null | undefined, rootType: string, format: ExportFormat): string {
  const cleaned = (requested ?? "").replace(/[^A-Za-z0-9._-]/g, "_").replace(/^\.+/, "").slice(0, 100);
  return cleaned.length > 0 ? cleaned : `${rootType}s-export.${EXTENSIONS[format]}`;
}

export const jsonLine = (record: ExportRecord): string => `${JSON.stringify(record)}\n`;

/** One CSV field (RFC 4180): lists and objects as JSON text, missing values empty. */
function csvField(value: unknown): string {
  if (value === undefined || value === null) return "";
  const text = typeof value === "object" ? JSON.stringify(value) : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export const csvLine = (values: readonly unknown[]): string => `${values.map(csvField).join(",")}\n`;

/** A column's value in a record: standard fields by id, `metrics/<name>`, `user_metadata.<key>`, `dataset_metadata.<key>`. */
export function columnValue(record: ExportRecord, columnId: string): unknown {
  if (columnId in record) return record[columnId];
  const [prefix, key] = columnId.startsWith("metrics/")
    ? ["metrics", columnId.slice("metrics/".length)]
    : columnId.startsWith("user_metadata.")
      ? ["user_metadata", columnId.slice("user_metadata.".length)]
      : columnId.startsWith("dataset_metadata.")
        ? ["dataset_metadata", columnId.slice("dataset_metadata.".length)]
        : [undefined, undefined];
  if (prefix === undefined) return undefined;
  const container = record[prefix];
  return container && typeof container === "object" ? (container as Record<string, unknown>)[key!] : undefined;
}

/**
 * Nests a root's descendants under it: a session's traces under `traces`, a trace's and a span's
 * child spans under `spans`, each list in created_at order (then id). `children` maps a parent
 * id to its child records.
 */
export function nest(root: ExportRecord, children: ReadonlyMap<string, ExportRecord[]>, depth = 0): ExportRecord {
  const own = children.get(String(root.id)) ?? [];
  if (depth > 256) return root;
  if (root.type === "session") return { ...root, traces: own.map((t) => nest(t, children, depth + 1)) };
  return { ...root, spans: own.map((s) => nest(s, children, depth + 1)) };
}
