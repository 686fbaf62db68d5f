/**
 * Marks the text search's matches (text-query.ts) wherever the page shows searched text: the
 * table's input, output and name cells, and the open trace's names, inputs and outputs. The
 * searched text reaches those views through HighlightText, set by the records page.
 */
import { createContext } from "preact";
import { useContext } from "preact/hooks";
import { matchRanges } from "./text-query";

/** The text being searched, or null. */
export const HighlightText = createContext<string | null>(null);

/** The text with each match in a <mark>: a plain call, so the table's cells stay cheap. */
export function highlighted(text: string, needle: string | null) {
  const ranges = needle ? matchRanges(text, needle) : [];
  if (ranges.length === 0) return text;
  const parts = [];
  let from = 0;
  for (const [start, end] of ranges) {
    if (start > from) parts.push(text.slice(from, start));
    parts.push(<mark key={start}>{text.slice(start, end)}</mark>);
    from = end;
  }
  if (from < text.length) parts.push(text.slice(from));
  return parts;
}

/** highlighted() with the page's search text. */
export function Highlighted({ text }: { text: string }) {
  return <>{highlighted(text, useContext(HighlightText))}</>;
}

/** Whether the page's search text occurs in this text (a long text then opens in full, so the match shows). */
export function useHasMatchAfter(text: string, offset: number): boolean {
  const needle = useContext(HighlightText);
  if (!needle) return false;
  return matchRanges(text, needle).some(([, end]) => end > offset);
}
