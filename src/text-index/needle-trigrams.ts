/**
 * A substring needle -> the FTS5 query that narrows to the records that may hold it
 * (docs/search.md, "The text index").
 *
 * The index is `detail=none`, which refuses phrases: a needle of n characters is matched as an
 * AND of quoted trigrams, each a one-token phrase, and the search confirms every candidate
 * against the record's text. Any subset of the needle's trigrams is a correct narrowing (a
 * record that holds the needle holds every one of them). The query carries every trigram of the
 * needle, overlapping ones included, up to MAX_TRIGRAMS spread over it: with `detail=none` the
 * trigrams may sit anywhere in a record, so the ones that span two common ones are what make a
 * needle selective. Measured on the bench's 20,000 records, "chargeback": its four
 * non-overlapping trigrams ("cha" "rge" "bac" "ack", all common in English) matched 491 records,
 * all eight matched 7 (6 hold the word), for about 1 ms more of doclist seeks; each candidate
 * avoided saves reading a row of ~3 KB, and at 1M the 491 would have been ~25,000, past the
 * bound (a scan).
 *
 * The index folds case (trigram tokenizer, case_sensitive 0), code point by code point, as it
 * folds the query's trigrams: a record whose text holds the needle, with or without SQLite's
 * ASCII case folding, holds every folded trigram of it, so the exact check alone decides.
 */

/** Fewer characters than this have no trigram: the search scans. */
export const MIN_INDEXED_NEEDLE = 3;

/** Trigrams one query ANDs at most (a needle of 14 characters has 12). */
export const MAX_TRIGRAMS = 12;

/** The needle's trigrams the query ANDs, or undefined when the index cannot narrow it. */
export function needleTrigrams(needle: string): string[] | undefined {
  // FTS5 reads a query as C text: a NUL would end it early.
  if (needle.includes("\u0000")) return undefined;
  const chars = Array.from(needle);
  if (chars.length < MIN_INDEXED_NEEDLE) return undefined;
  const starts: number[] = [];
  for (let i = 0; i + MIN_INDEXED_NEEDLE <= chars.length; i++) starts.push(i);
  const chosen =
    starts.length <= MAX_TRIGRAMS
      ? starts
      : Array.from({ length: MAX_TRIGRAMS }, (_, k) => starts[Math.round((k * (starts.length - 1)) / (MAX_TRIGRAMS - 1))]!);
  return [...new Set(chosen.map((start) => chars.slice(start, start + MIN_INDEXED_NEEDLE).join("")))];
}

/**
 * The FTS5 query of trigram sets, ANDed after the family token: each trigram quoted (a `"`
 * doubled), a set's trigrams ANDed, several sets ORed.
 */
export function trigramQuery(alternatives: readonly (readonly string[])[]): string {
  const all = (trigrams: readonly string[]) => trigrams.map((t) => `"${t.replaceAll('"', '""')}"`).join(" AND ");
  return alternatives.length === 1 ? all(alternatives[0]!) : `(${alternatives.map((set) => `(${all(set)})`).join(" OR ")})`;
}
