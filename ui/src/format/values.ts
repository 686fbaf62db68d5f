/** How values of the API are shown: dates, durations, metric units, and one-line summaries. */
import type { Column } from "../api/types";

const pad = (n: number, width = 2) => String(n).padStart(width, "0");

// One formatter for every cell: toLocaleString would build one per call.
const INTEGER = new Intl.NumberFormat("en-US");

export function formatInteger(n: number): string {
  return Number.isInteger(n) ? INTEGER.format(n) : String(n);
}

/** Local date and time to the millisecond: records of one trace are often milliseconds apart. */
export function formatDateTime(iso: unknown): string {
  if (typeof iso !== "string") return "";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${pad(date.getMilliseconds(), 3)}`;
}

export function formatDurationMs(ms: number): string {
  if (!Number.isFinite(ms)) return "";
  if (ms === 0) return "0";
  if (ms < 1) return `${(ms * 1000).toFixed(0)} µs`;
  if (ms < 1000) return `${ms < 10 ? ms.toFixed(1) : ms.toFixed(0)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(2)} s`;
  return `${Math.floor(ms / 60_000)} min ${((ms % 60_000) / 1000).toFixed(0)} s`;
}

/** The unit shown next to a column's label. */
export function unitLabel(unit: string | null | undefined): string | null {
  switch (unit) {
    case "percentage":
      return "%";
    case "nano_seconds":
      // Shown as ms, s or min in each cell.
      return null;
    case "dollars":
      return "$";
    case null:
    case undefined:
      return null;
    default:
      return unit.replace(/_/g, " ");
  }
}

export function formatMetric(value: unknown, unit: string | null | undefined): string {
  if (typeof value !== "number") return value === null || value === undefined ? "" : String(value);
  switch (unit) {
    case "percentage":
      // Stored as a fraction (0.02 is 2 %).
      return `${(value * 100).toFixed(value * 100 < 10 ? 1 : 0)} %`;
    case "nano_seconds":
      return formatDurationMs(value / 1e6);
    case "dollars":
      return `$${value < 0.01 ? value.toPrecision(2) : value.toFixed(2)}`;
    default:
      return Number.isInteger(value) ? INTEGER.format(value) : value.toPrecision(4).replace(/\.?0+$/, "");
  }
}

interface Message {
  role?: unknown;
  content?: unknown;
}

function isMessage(value: unknown): value is Message {
  return !!value && typeof value === "object" && "content" in value && "role" in value;
}

/** Chat messages ({role, content}) as a list, or null when the value is not a conversation. */
export function asMessages(value: unknown): { role: string; content: string }[] | null {
  const list = Array.isArray(value) ? value : isMessage(value) ? [value] : null;
  if (!list || list.length === 0 || !list.every(isMessage)) return null;
  return list.map((m) => ({ role: String(m.role), content: typeof m.content === "string" ? m.content : JSON.stringify(m.content) }));
}

/** One line for a table cell: the last user message of a conversation, a document's text, or JSON. */
export function summarize(value: unknown): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "string") return value;
  const messages = asMessages(value);
  if (messages) {
    const user = [...messages].reverse().find((m) => m.role === "user");
    return (user ?? messages[messages.length - 1]!).content;
  }
  if (Array.isArray(value) && value.every((d) => d && typeof d === "object" && "content" in d)) {
    return value.map((d) => String((d as { content: unknown }).content)).join(" | ");
  }
  return JSON.stringify(value);
}

export function metricName(columnId: string): string | null {
  return columnId.startsWith("metrics/") ? columnId.slice("metrics/".length) : null;
}

/** A record's value for a column id (metrics and metadata live in nested objects). */
export function valueOf(record: Record<string, unknown>, columnId: string): unknown {
  const metric = metricName(columnId);
  if (metric !== null) return (record.metrics as Record<string, unknown> | undefined)?.[metric];
  for (const map of ["user_metadata", "dataset_metadata"]) {
    if (columnId.startsWith(`${map}.`)) return (record[map] as Record<string, unknown> | undefined)?.[columnId.slice(map.length + 1)];
  }
  return record[columnId];
}

export function columnTitle(column: Pick<Column, "label" | "data_unit">): string {
  const unit = unitLabel(column.data_unit);
  return unit ? `${column.label} (${unit})` : column.label;
}
