/**
 * The explorer's text search (docs/ui.md, "Text search"): the typed text as a filter, and where
 * it occurs in a string, both as the service matches it.
 *
 * The filter is an OR of case-insensitive `contains` leaves on input, output and name, ANDed
 * with the filter tree: the service answers that OR from its text index (docs/search.md, "The
 * text index"), so it stays fast on a large run. Text under MIN_SEARCH_TEXT characters is not
 * searched (the index needs three; a shorter needle would scan the run on every keystroke).
 */
import type { FilterJson } from "../api/types";

export const MIN_SEARCH_TEXT = 3;
export const SEARCHED_COLUMNS = ["input", "output", "name"] as const;

/** The text the box would search, or null when it is too short to search. */
export function searchableText(typed: string): string | null {
  const text = typed.trim();
  return Array.from(text).length >= MIN_SEARCH_TEXT ? text : null;
}

/** The filter tree the page sends: the user's tree, and the text in any searched column. */
export function withTextSearch(tree: FilterJson | null, text: string | null): FilterJson | null {
  if (!text) return tree;
  const anyColumn: FilterJson = { or: SEARCHED_COLUMNS.map((column_id) => ({ type: "text", column_id, operator: "contains", value: text, case_sensitive: false })) };
  return tree ? { and: [tree, anyColumn] } : anyColumn;
}

/** ASCII letters folded, as the service folds a case-insensitive match (docs/search.md); the length is kept. */
const fold = (s: string) => s.replace(/[A-Z]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 32));

/** Where the needle occurs in the text: [start, end) ranges, in order, not overlapping. */
export function matchRanges(text: string, needle: string): [number, number][] {
  if (!needle) return [];
  const haystack = fold(text);
  const folded = fold(needle);
  const ranges: [number, number][] = [];
  for (let at = haystack.indexOf(folded); at !== -1; at = haystack.indexOf(folded, at + folded.length)) ranges.push([at, at + folded.length]);
  return ranges;
}
