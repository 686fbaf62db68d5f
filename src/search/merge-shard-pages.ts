/**
 * Merging the pages that several shards answered for one search (contract section 13, "Reads
 * are exact"; docs/partitions.md, "Search"). Every shard ran the same statement (same filter,
 * sort and limit), so each page is in the statement's order: the arm (a metric sort's records
 * without the metric come after), records without a sort value last, the sort value in the
 * direction, then the id in the direction. This file merges them in that very order, as SQLite
 * compares (numbers before text, text by code point, which is UTF-8's BINARY order), so the
 * merged page is the page one database holding every partition would have answered.
 */
import { SEARCH_LIMITS } from "./search-limits";
import type { SearchQuery, SortKeyset } from "./search-query";
import type { StoredRow } from "./shape-record";

type SortValue = string | number | null;

/** SQLite's order of two non-null values of one column: numbers first, then text by code point. */
function compareValues(a: string | number, b: string | number): number {
  if (typeof a === "number" && typeof b === "number") return a - b;
  if (typeof a === "number") return -1;
  if (typeof b === "number") return 1;
  return compareText(a, b);
}

export function compareText(a: string, b: string): number {
  // JavaScript compares UTF-16 code units; SQLite's BINARY compares UTF-8 bytes (code points):
  // the two differ only past U+FFFF, so walk code points.
  if (a === b) return 0;
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!;
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

function valueOf(row: StoredRow): SortValue {
  const v = row.sort_value;
  return v === null || v === undefined ? null : (v as string | number);
}

/** The statement's order (compile-search-query.ts, the outer ORDER BY), as a comparator. */
export function pageOrder(query: SearchQuery): (a: StoredRow, b: StoredRow) => number {
  const sign = (query.sort?.ascending ?? false) ? 1 : -1;
  return (a, b) => {
    const arm = Number(a.arm ?? 0) - Number(b.arm ?? 0);
    if (arm !== 0) return arm;
    const va = valueOf(a);
    const vb = valueOf(b);
    if (va === null || vb === null) {
      if (va !== vb) return va === null ? 1 : -1;
    } else {
      const d = compareValues(va, vb);
      if (d !== 0) return sign * d;
    }
    return sign * compareText(String(a.id), String(b.id));
  };
}

/** Where a merged record stands, for a page that continues after it (SearchQuery.after). */
export function keysetOf(row: StoredRow): SortKeyset {
  return { value: valueOf(row), id: String(row.id) };
}

/**
 * The shards' pages merged into one: the rows in order, then the page's byte budget applied
 * across them as one statement applies it (the first row always kept). A shard whose page its
 * own budget cut (it read more rows than it returned) says nothing of its records after its last
 * returned row, so the merged page ends there too. `more`: records follow the returned ones.
 */
export function mergeShardPages(pages: readonly StoredRow[][], query: SearchQuery): { rows: StoredRow[]; more: boolean } {
  const order = pageOrder(query);
  let merged = pages.flat().sort(order);
  let cut = false;
  for (const page of pages) {
    const read = Number((page[0] as { _rows_read?: number } | undefined)?._rows_read ?? page.length);
    if (page.length === 0 || read <= page.length) continue;
    cut = true;
    const last = page[page.length - 1]!;
    merged = merged.filter((row) => order(row, last) <= 0);
  }
  const rows: StoredRow[] = [];
  let bytes = 0;
  for (const row of merged) {
    if (rows.length === query.limit) break;
    if (rows.length > 0 && bytes >= SEARCH_LIMITS.maxPageBytes) break;
    rows.push(row);
    bytes += Number(row._row_bytes ?? 0);
  }
  return { rows, more: cut || merged.length > rows.length };
}
