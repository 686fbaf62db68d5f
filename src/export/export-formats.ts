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
