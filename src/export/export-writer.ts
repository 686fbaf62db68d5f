/**
 * The text of an export, page by page: what the streamed route enqueues and what a queued export
 * uploads to R2 are the same bytes. Each chunk is one page of roots (with their descendants in
 * `jsonl` and `jsonl_flat`) and carries the keyset cursor after it, from which a queued export
 * continues in its next queue message.
 */
import { type ExportFormat, type ExportRecord, columnValue, csvLine, jsonLine, nest, redacted } from "./export-formats";
import { type ExportSource, type KeysetCursor, ROOT_PAGE_SIZE, descendantsOf, keysetPages } from "./export-reader";
import type { SearchQuery } from "../search/search-query";

export interface ExportPlan {
  source: ExportSource;
  /** The search query of the roots (filter, direction, retention window). */
  query: SearchQuery;
  format: ExportFormat;
  /** CSV's columns, in order (empty for the JSON formats). */
  columns: readonly string[];
  redact: boolean;
}

export interface ExportChunk {
  text: string;
  /** Records written in this chunk: roots, and their descendants in the JSON formats. */
  records: number;
  /** The oldest created_at (microseconds, rounded down) of those records; undefined if none. */
  oldestCreatedAt: number | undefined;
  /** Where the next chunk starts; undefined for the header of an empty CSV. */
  cursor: KeysetCursor | undefined;
}

const createdAtMicros = (record: ExportRecord): number => {
  const value = record.created_at;
  if (typeof value === "number") return value;
  return Math.floor(Date.parse(String(value))) * 1000;
};

/**
 * The export's chunks from the start, or from `start` (a continuation: no CSV header). A CSV
 * export with no match is its header alone.
 */
export async function* exportChunks(plan: ExportPlan, start?: KeysetCursor): AsyncGenerator<ExportChunk> {
  const { source, query, format, columns } = plan;
  const shape = (record: ExportRecord) => (plan.redact ? redacted(record) : record);
  let headerDue = format === "csv" && start === undefined;
  const pages = keysetPages(source, query, ROOT_PAGE_SIZE, start);
  for await (const page of pages) {
    const roots = page.records;
    let oldest = Math.min(...page.rows.map((row) => Number(row.created_at)));
    const chunk = (text: string, records: number): ExportChunk => ({ text, records, oldestCreatedAt: oldest, cursor: page.cursor });
    if (format === "csv") {
      const header = headerDue ? csvLine(columns) : "";
      headerDue = false;
      yield chunk(header + roots.map((root) => csvLine(columns.map((id) => columnValue(shape(root), id)))).join(""), roots.length);
      continue;
    }
    const { children, matching } = await descendantsOf(source, query, roots);
    let descendants = 0;
    const shapedChildren = new Map<string, ExportRecord[]>();
    for (const [parent, list] of children) {
      shapedChildren.set(parent, list.map(shape));
      for (const record of list) oldest = Math.min(oldest, createdAtMicros(record));
      descendants += list.length;
    }
    if (format === "jsonl") {
      yield chunk(roots.map((root) => jsonLine(nest(shape(root), shapedChildren))).join(""), roots.length + descendants);
      continue;
    }
    // Flat: each root, then every record below it; a descendant span that matches the filter
    // itself is a root line of its own (with its subtree), so every record appears once.
    const lines: string[] = [];
    const below = (id: string, depth: number) => {
      if (depth > 256) return;
      for (const record of shapedChildren.get(id) ?? []) {
        if (matching.has(String(record.id))) continue;
        lines.push(jsonLine(record));
        below(String(record.id), depth + 1);
      }
    };
    for (const root of roots) {
      lines.push(jsonLine(shape(root)));
      below(String(root.id), 0);
    }
    yield chunk(lines.join(""), lines.length);
  }
  if (headerDue) yield { text: csvLine(columns), records: 0, oldestCreatedAt: undefined, cursor: undefined };
}
