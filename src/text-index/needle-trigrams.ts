/**
 * A substring needle -> the FTS5 query that narrows to the records that may hold it
 * (docs/search.md, "The text index").
 *
 * The index is `detail=none`, which refuses phrases: a needle of n characters is matched as an
 * AND of quoted trigrams, each a one-token phrase, and the search confirms every candidate
 * against the record's text. Any subset of the needle's trigrams is a correct narrowing (a
 * record that holds the needle holds every one of them). The query chooses among every trigram
 * of the needle, overlapping ones included, up to MAX_TRIGRAMS spread over it: with `detail=none` the
 * trigrams may sit anywhere in a record, so the ones that span two common ones are what make a
 * needle selective. Measured on the bench's 20,000 records, "chargeback": its four
 * non-overlapping trigrams ("cha" "rge" "bac" "ack", all common in English) matched 491 records,
 * all eight matched 7 (6 hold the word), for about 1 ms more of doclist seeks; each candidate
 * avoided saves reading a row of ~3 KB, and at 1M the 491 would have been ~25,000, past the
 * bound (a scan).
 *
 * Which of them the query ANDs is decided in the statement itself, by how many records hold each
 * (RARE_TRIGRAM_DOCS): the rarest ones of the needle when it has any, so that the common
 * trigrams' long doclists are not read.
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
 * A trigram as an FTS5 query term: quoted (a `"` doubled), a one-token phrase. A query ANDs the
 * family token with a set's terms, and ORs several sets (src/search/text-driver.ts).
 */
export function quotedTrigram(trigram: string): string {
  return `"${trigram.replaceAll('"', '""')}"`;
}

/**
 * A trigram is "rare" when fewer of the database's records than this hold it: probing that costs
 * reading at most this many doclist entries (FTS5 stops at the LIMIT). A set with a rare trigram
 * is matched by its rarest ones only (up to RAREST_TRIGRAMS, the rare ones), so the candidates
 * are under this many before the run's token narrows them; a set without one by all of its
 * trigrams, whose overlap is then what narrows. Measured at 1,000,000 records (docs/benchmarks.md,
 * "Text index"): a probe costs ~60 us whatever the cap between 100 and 250 (opening the term's
 * segments dominates), a common trigram in the AND ~0.2 ms, and each candidate the index lets
 * through one row read (~3 KB of text, ~15 us): the cap bounds what a less selective set can
 * cost in rows against the full AND.
 */
export const RARE_TRIGRAM_DOCS = 100;

/** A set with a rare trigram is matched by at most this many of its rarest trigrams. */
export const RAREST_TRIGRAMS = 3;
