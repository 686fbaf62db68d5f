/**
 * The token that confines a record's trigrams to its run and kind in `records_text` (migration
 * 0016_records_text_index.sql): the record's family key (run_families) spelled as three
 * characters of the private-use area, one trigram, in the index's fourth column. A search ANDs
 * it with the needle's trigrams, so the index itself returns only the run's candidates: the
 * index holds every tenant's text of the database, and no other row is ever read.
 *
 * The migration's triggers spell the same expression over NEW/OLD.family_key.
 */
import { type SQL, sql } from "drizzle-orm";

/** First code point of the private-use area, and how many of it a digit uses (U+E000..U+F8FF). */
const BASE = 57344;
const RADIX = 6400;

/** SQL: the family token of a family key (an SQL expression). */
export function familyTokenSql(familyKey: SQL): SQL {
  return sql`char(${sql.raw(String(BASE))} + (${familyKey} / ${sql.raw(String(RADIX * RADIX))}) % ${sql.raw(String(RADIX))}, ${sql.raw(String(BASE))} + (${familyKey} / ${sql.raw(String(RADIX))}) % ${sql.raw(String(RADIX))}, ${sql.raw(String(BASE))} + ${familyKey} % ${sql.raw(String(RADIX))})`;
}
