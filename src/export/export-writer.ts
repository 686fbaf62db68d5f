/**
 * The text of an export, page by page: what the streamed route enqueues and what a queued export
 * uploads to R2 are the same bytes. A page of roots (with their descendants in `jsonl` and
 * `jsonl_flat`) is written as one chunk or several, the last of which carries the keyset cursor
 * after the page, from which a queued export continues in its next queue message.
 */
import { type ExportFormat, columnValue, csvLine, redacted } from "./export-formats";
import { DESCENDANT_ROWS_PER_READ, type ExportSource, type KeysetCursor, type Outline, type OutlineNode, ROOT_PAGE_SIZE, keysetPages, outlineOf, readRows, rowKeyOf, shardOf } from "./export-reader";
import { recordJson } from "./record-json";
import { SEARCH_LIMITS } from "../search/search-limits";
import type { SearchQuery } from "../search/search-query";
import { type StoredRow, shapeRecord } from "../search/shape-record";

export interface ExportPlan {
  source: ExportSource;
  /** The search query of the roots (filter, direction, retention window). */
  query: SearchQuery;
  format: ExportFormat;
  /** CSV's columns, in order (empty for the JSON formats). */
  columns: readonly string[];
  redact: boolean;
  /** Roots per page and descendant rows per read (default ROOT_PAGE_SIZE, DESCENDANT_ROWS_PER_READ). */
  sizes?: { roots: number; descendantRows: number };
}

export interface ExportChunk {
  text: string;
  /** Records written in this chunk: roots, and their descendants in the JSON formats. */
  records: number;
  /** The oldest created_at (microseconds, rounded down) of those records; undefined if none. */
  oldestCreatedAt: number | undefined;
  /**
   * Where the next chunk starts, on a page's last chunk; undefined within a page (a queued export
   * stops only where a cursor is) and for the header of an empty CSV.
   */
  cursor: KeysetCursor | undefined;
}

/** A root's children key in `jsonl`: a session's traces, a trace's and a span's spans. */
const childrenKey = (type: unknown) => (type === "session" ? "traces" : "spans");

/** How deep descendants are written below a root (a guard against a cycle of parent ids). */
const MAX_DEPTH = 256;

/**
 * What a page writes, in order: text, or a record (a root's row at hand, a descendant's outline
 * whose row is read in batches), written as a line (`line`), as it is (`whole`) or open for its
 * children's list (`open`).
 */
type Step = string | { node: OutlineNode | StoredRow; root: boolean; as: "line" | "whole" | "open" };

/** `jsonl_flat`: each root, then each record below it depth first, except the matching ones (their own root lines). */
function flatSteps(roots: readonly StoredRow[], outline: Outline): Step[] {
  const steps: Step[] = [];
  const below = (id: string, depth: number) => {
    if (depth > MAX_DEPTH) return;
    for (const node of outline.children.get(id) ?? []) {
      if (outline.matching.has(node.id)) continue;
      steps.push({ node, root: false, as: "line" });
      below(node.id, depth + 1);
    }
  };
  for (const root of roots) {
    steps.push({ node: root, root: true, as: "line" });
    below(String(root.id), 0);
  }
  return steps;
}

/** `jsonl`: each root a line, its descendants nested in its children's list, each list oldest first. */
function nestedSteps(roots: readonly StoredRow[], outline: Outline): Step[] {
  const steps: Step[] = [];
  const nest = (node: OutlineNode | StoredRow, root: boolean, type: unknown, depth: number) => {
    if (depth > MAX_DEPTH) {
      steps.push({ node, root, as: "whole" });
      return;
    }
    steps.push({ node, root, as: "open" }, `,"${childrenKey(type)}":[`);
    (outline.children.get(String(node.id)) ?? []).forEach((child, i) => {
      if (i > 0) steps.push(",");
      nest(child, false, child.family, depth + 1);
    });
    steps.push("]}");
  };
  for (const root of roots) {
    nest(root, true, root.type, 0);
    steps.push("\n");
  }
  return steps;
}

/** The next batch of descendants to read from `steps[from]` on: rows and bytes bounded. */
function nextBatch(steps: readonly Step[], from: number, most: number): OutlineNode[] {
  const batch: OutlineNode[] = [];
  let bytes = 0;
  for (let i = from; i < steps.length && batch.length < most; i += 1) {
    const step = steps[i]!;
    if (typeof step === "string" || step.root) continue;
    const node = step.node as OutlineNode;
    if (batch.length > 0 && bytes + node._row_bytes > SEARCH_LIMITS.maxPageBytes) break;
    bytes += node._row_bytes;
    batch.push(node);
  }
  return batch;
}

/**
 * The export's chunks from the start, or from `start` (a continuation: no CSV header). A CSV
 * export with no match is its header alone. A page of roots is one chunk or, in the JSON formats,
 * one per batch of descendants read; only a page's last chunk carries the cursor (where the next
 * chunk starts at a page's end).
 */
export async function* exportChunks(plan: ExportPlan, start?: KeysetCursor): AsyncGenerator<ExportChunk> {
  const { source, query, format, columns } = plan;
  let headerDue = format === "csv" && start === undefined;
  const sizes = plan.sizes ?? { roots: ROOT_PAGE_SIZE, descendantRows: DESCENDANT_ROWS_PER_READ };
  const pages = keysetPages(source, query, sizes.roots, start);
  for await (const page of pages) {
    const rootsOldest = Math.min(...page.rows.map((row) => Number(row.created_at)));
    if (format === "csv") {
      const header = headerDue ? csvLine(columns) : "";
      headerDue = false;
      const rows = page.rows.map((row) => {
        const record = shapeRecord(row, query);
        const shaped = plan.redact ? redacted(record) : record;
        return csvLine(columns.map((id) => columnValue(shaped, id)));
      });
      yield { text: header + rows.join(""), records: page.rows.length, oldestCreatedAt: rootsOldest, cursor: page.cursor };
      continue;
    }
    const outline = await outlineOf(source, query, page.rows);
    const steps = format === "jsonl" ? nestedSteps(page.rows, outline) : flatSteps(page.rows, outline);
    const rows = new Map<string, StoredRow>();
    let text = "";
    let records = 0;
    let oldest = rootsOldest;
    for (let i = 0; i < steps.length; i += 1) {
      const step = steps[i]!;
      if (typeof step === "string") {
        text += step;
        continue;
      }
      let row: StoredRow;
      if (step.root) {
        row = step.node as StoredRow;
      } else {
        const node = step.node as OutlineNode;
        if (!rows.has(rowKeyOf(node.shard, node.rid))) {
          // The text so far goes out before the next batch is read, and the batch it was written
          // from is let go first: while the generator waits for the client to read on, it holds
          // the page's outline and that text, not the rows as well (a batch may hold 8 MB of
          // stored text, as much again as the text written from it).
          rows.clear();
          if (text.length > 0) {
            yield { text, records, oldestCreatedAt: oldest, cursor: undefined };
            text = "";
            records = 0;
          }
          for (const read of await readRows(source, query, nextBatch(steps, i, sizes.descendantRows))) rows.set(rowKeyOf(shardOf(read), Number(read.rid)), read);
        }
        const read = rows.get(rowKeyOf(node.shard, node.rid));
        if (!read) {
          // Erased between the outline and its read: a flat export leaves its line out; a nested
          // line has written its place in a list already, so the export fails (visibly).
          if (step.as === "line") continue;
          throw new Error(`export: record ${node.id} was erased while it was being exported`);
        }
        row = read;
        // Rounded down to the millisecond, as the record's created_at is written.
        oldest = Math.min(oldest, Math.floor(node.created_at / 1000) * 1000);
      }
      const json = recordJson(row, query, plan.redact);
      text += step.as === "line" ? `${json}\n` : step.as === "open" ? json.slice(0, -1) : json;
      records += 1;
    }
    rows.clear();
    yield { text, records, oldestCreatedAt: oldest, cursor: page.cursor };
  }
  if (headerDue) yield { text: csvLine(columns), records: 0, oldestCreatedAt: undefined, cursor: undefined };
}
