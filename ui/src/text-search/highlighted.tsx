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

/** A placeholder left by redaction at ingest (docs/redaction.md): `[REDACTED:<detector or pattern>]`. */
const PLACEHOLDER = /\[REDACTED:[A-Za-z0-9_.-]{1,64}\]/g;

/**
 * The text with each redaction placeholder shown as such (a badge naming what was masked), so a
 * reader never takes it for what the user typed.
 */
function withPlaceholders(text: string, key: number) {
  if (!text.includes("[REDACTED:")) return text;
  const parts = [];
  let from = 0;
  for (const m of text.matchAll(PLACEHOLDER)) {
    if (m.index > from) parts.push(text.slice(from, m.index));
    parts.push(
      <span key={`${key}-${m.index}`} class="redacted" data-testid="redacted" title={`Masked at ingest by the project's redaction policy (${m[0].slice(10, -1)})`}>
        {m[0]}
      </span>,
    );
    from = m.index + m[0].length;
  }
  if (from < text.length) parts.push(text.slice(from));
  return parts;
}

/** The text with each match in a <mark>: a plain call, so the table's cells stay cheap. */
export function highlighted(text: string, needle: string | null) {
  const ranges = needle ? matchRanges(text, needle) : [];
  if (ranges.length === 0) return withPlaceholders(text, 0);
  const parts = [];
  let from = 0;
  for (const [start, end] of ranges) {
    if (start > from) parts.push(withPlaceholders(text.slice(from, start), from));
    parts.push(<mark key={start}>{text.slice(start, end)}</mark>);
    from = end;
  }
  if (from < text.length) parts.push(withPlaceholders(text.slice(from), from));
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
