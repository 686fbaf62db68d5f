/**
 * Substring search by the text index (docs/search.md, "The text index"): which searches the
 * trigram index `records_text` (migration 0016) drives, and the candidates it yields.
 *
 * A top-level `contains` or `eq` leaf on `name`, `input` or `output` whose value has at least
 * three characters drives the page, case-sensitive or not: the index returns the run's records
 * that hold the value's trigrams (folded), and the statement then applies the whole filter to
 * each of them, the driving leaf included: the index narrows, the filter's own expression (the
 * scan's) decides, so the answers are the scan's. So does a top-level `or` whose every child is
 * such a leaf (the explorer's search box: the typed text in input, output or name, ANDed with
 * the filter tree): its candidates are the union of its children's.
 *
 * The index covers the records with pending_through < rid <= indexed_through (migration 0016,
 * src/text-index/backfill.ts); the others are candidates too, so answers stay exact before the
 * index reaches them: the records the backfill has not reached yet, read from the run's index,
 * and the tail written since the last catch-up (inserts do not index; the upkeep the writes start
 * indexes them within seconds), read by rid range.
 *
 * Candidates are bounded (the TEXT_INDEX_MAX_CANDIDATES limit): a search whose value is so
 * common that the run holds more is answered by the scan instead, as a scan-class search
 * (search-cost.ts). Every record of the database's tail counts as one (other runs' as a NULL
 * rid, which matches nothing), so the tail read is bounded too: a tail longer than the bound
 * (a catch-up that fell behind) makes the search scan-class as a too-common needle does, but
 * only while that scan is small: past TEXT_INDEX_LAG_SCAN_MAX_RECORDS records of the run, a 503
 * with Retry-After says the index is catching up (textCandidateCount, throwOnCandidateOverflow).
 */
import { type SQL, sql } from "drizzle-orm";
import { ApiError } from "../http/errors";
import { familyTokenSql } from "../text-index/family-token";
import { needleTrigrams, quotedTrigram, RARE_TRIGRAM_DOCS, RAREST_TRIGRAMS } from "../text-index/needle-trigrams";
import { balancedJoin, conjunctsOf } from "./compile-filter-tree";
import type { FilterLeaf, FilterNode, SearchQuery } from "./search-query";
import type { SqlParamPack } from "./sql-param-pack";

/** The columns `records_text` indexes. */
const INDEXED_COLUMNS = new Set(["name", "input", "output"]);

export interface TextDriver {
  /** The top-level conjunct the index narrows: an indexed leaf, or an `or` of them. */
  conjunct: FilterNode;
  /** Its candidates hold every trigram of at least one of these sets. */
  alternatives: string[][];
}

/** The needle of a leaf the index can narrow, if it is one. */
function indexedNeedle(leaf: FilterLeaf): string | undefined {
  if (leaf.kind !== "contains" && !(leaf.kind === "compare" && leaf.operator === "eq")) return undefined;
  if (leaf.column.kind !== "standard" || !INDEXED_COLUMNS.has(leaf.column.id)) return undefined;
  return typeof leaf.value === "string" ? leaf.value : undefined;
}

/** A conjunct's trigram sets and its shortest needle's length, when the index can narrow it. */
function narrowing(conjunct: FilterNode): { alternatives: string[][]; length: number } | undefined {
  const leaves = conjunct.kind === "leaf" ? [conjunct.leaf] : conjunct.kind === "or" && conjunct.children.every((c) => c.kind === "leaf") ? conjunct.children.map((c) => (c as Extract<FilterNode, { kind: "leaf" }>).leaf) : [];
  if (leaves.length === 0) return undefined;
  const alternatives = new Map<string, string[]>();
  let length = Infinity;
  for (const leaf of leaves) {
    const needle = indexedNeedle(leaf);
    const trigrams = needle === undefined ? undefined : needleTrigrams(needle);
    if (!trigrams) return undefined;
    alternatives.set(JSON.stringify(trigrams), trigrams);
    length = Math.min(length, Array.from(needle!).length);
  }
  return { alternatives: [...alternatives.values()], length };
}

/**
 * The top-level conjunct the index drives, if any: the one whose shortest needle is the longest
 * (the most selective), a single leaf before an `or` of the same length.
 */
export function textDriverOf(query: SearchQuery): TextDriver | undefined {
  let best: (TextDriver & { length: number }) | undefined;
  for (const conjunct of conjunctsOf(query.filter)) {
    const found = narrowing(conjunct);
    if (!found) continue;
    const better = !best || found.length > best.length || (found.length === best.length && found.alternatives.length < best.alternatives.length);
    if (better) best = { conjunct, ...found };
  }
  return best && { conjunct: best.conjunct, alternatives: best.alternatives };
}

/**
 * Up to this many candidates a page reads each of them; beyond, it walks the run's order index
 * and reads only the entries among them (compile-search-query.ts, textPlan). Measured: reading
 * 14,000 candidates of ~3 KB to return 100 cost ~0.3 s, the walk a few ms.
 */
export const TEXT_CANDIDATES_READ_ALL = 2_000;

/** Thrown by a search the index drove when the run holds more candidates than the bound. */
export class TextCandidatesOverflow extends Error {
  constructor() {
    super("more text index candidates than the bound");
  }
}

/**
 * SQL: `value` when `condition` holds, else NULL; as the key of an index seek (`col = onlyWhen(..)`),
 * an arm that reads nothing unless the condition holds. A plain `condition AND col = value` does
 * not do it when the condition holds a subquery: SQLite (3.40 and D1's) tests such a constant term
 * on every entry of the loop instead of once before it, so an arm meant to be off walked the
 * run's whole index: 120 ms of the 150 ms of the bench's text search at 1,000,000 records
 * (bench/results/text-index-history.md, "Text index"). A NULL key makes the seek end at once.
 */
export function onlyWhen(condition: SQL, value: SQL): SQL {
  return sql`CASE WHEN ${condition} THEN ${value} END`;
}

const PENDING_THROUGH = sql.raw(`(SELECT "pending_through" FROM "records_text_backfill" WHERE "id" = 1)`);
const INDEXED_THROUGH = sql.raw(`(SELECT "indexed_through" FROM "records_text_backfill" WHERE "id" = 1)`);

/**
 * SQL (text): the FTS5 query of one trigram set, ANDed. A set of more than RAREST_TRIGRAMS is
 * narrowed in the statement: each trigram is probed (how many records of the database hold it,
 * counted up to RARE_TRIGRAM_DOCS: a LIMIT, so a common trigram costs its first entries, not its
 * doclist; an `fts5vocab` table would count by reading every doclist whole: 77 ms for the bench
 * needle's eight at 1,000,000 records, more than the search), then the rarest one is kept with
 * up to RAREST_TRIGRAMS - 1 more that are rare too, or every trigram when none is rare (on common
 * trigrams it is their overlap that narrows). The probes read the index only, never a row.
 */
export function trigramMatchQuery(set: readonly string[], pack: SqlParamPack): SQL {
  const terms = set.map(quotedTrigram);
  if (terms.length <= RAREST_TRIGRAMS) return pack.value(terms.join(" AND "));
  const cap = pack.value(RARE_TRIGRAM_DOCS);
  const docs = sql`(SELECT count(*) FROM (SELECT 1 FROM "records_text" AS "tp" WHERE "tp"."records_text" MATCH "tj"."value" LIMIT ${cap}))`;
  const probed = sql`SELECT "tj"."key" AS "key", "tj"."value" AS "term", ${docs} AS "docs" FROM json_each(${pack.list(terms)}) AS "tj"`;
  const ranked = sql`SELECT "term", "docs", row_number() OVER (ORDER BY "docs", "key") AS "rank", min("docs") OVER () AS "rarest" FROM (${probed})`;
  return sql`(SELECT group_concat("term", ' AND ') FROM (${ranked}) WHERE "rarest" >= ${cap} OR "rank" = 1 OR ("rank" <= ${pack.value(RAREST_TRIGRAMS)} AND "docs" < ${cap}))`;
}

/** SQL (text): the FTS5 query of the driver's trigram sets, ORed, to AND after the family token. */
function trigramsQuery(alternatives: readonly (readonly string[])[], pack: SqlParamPack): SQL {
  if (alternatives.length === 1) return trigramMatchQuery(alternatives[0]!, pack);
  const sets = alternatives.map((set) => sql`'(' || ${trigramMatchQuery(set, pack)} || ')'`);
  // Balanced (balancedJoin): a chain of `||` over 50 alternatives passed SQLite's depth limit.
  const ored = sets.map((set, i) => (i === 0 ? set : sql`' OR ' || ${set}`));
  return sql`'(' || ${balancedJoin(ored, "||")} || ')'`;
}

/**
 * SQL: the rids of the run's candidates, at most `bound + 1` of them (one more than the bound
 * says it overflowed): the index's matches for the family token AND the needle's rarest trigrams
 * (trigramMatchQuery; the token's doclist is as long as the run, but FTS5 only seeks into it, by
 * its doclist index, at the rare trigrams' few rowids: ~0.2 ms at 1,000,000 records), then
 * the family's records the backfill has not reached, from the family's index (the unary `+`
 * keeps SQLite from reading the table's rowid range instead, every tenant's rows); none once it
 * is done: the seek key is NULL then (onlyWhen), so that arm ends before it reads an entry. Then the tail above
 * indexed_through, by rid range (the unary `+` keeps the family's index from driving: it would
 * read all of the run's entries), one row per record, NULL for other families' records.
 */
export function textCandidates(driver: TextDriver, familyKey: SQL, pack: SqlParamPack, bound: number): SQL {
  const arms = candidateArms(driver, familyKey, pack);
  return sql`SELECT "rid" FROM (${arms.indexed} UNION ALL ${arms.pending} UNION ALL ${arms.tail}) LIMIT ${pack.value(bound + 1)}`;
}

/** The three arms of textCandidates: the index's matches, the records the backfill has not reached, the tail. */
function candidateArms(driver: TextDriver, familyKey: SQL, pack: SqlParamPack): { indexed: SQL; pending: SQL; tail: SQL } {
  // A run without a family on this database (key NULL) gets key 0's token, which no record has.
  const match = sql`'"' || ${familyTokenSql(sql`coalesce(${familyKey}, 0)`)} || '" AND ' || ${trigramsQuery(driver.alternatives, pack)}`;
  // The hidden column named after the table, qualified: a bare "tx" would be read as a string.
  const indexed = sql`SELECT "tx"."rowid" AS "rid" FROM "records_text" AS "tx" WHERE "tx"."records_text" MATCH ${match}`;
  const pending = sql`SELECT "tu"."rid" AS "rid" FROM "records" AS "tu" WHERE "tu"."family_key" = ${onlyWhen(sql`${PENDING_THROUGH} > 0`, familyKey)} AND +"tu"."rid" <= ${PENDING_THROUGH}`;
  const tail = sql`SELECT CASE WHEN +"tt"."family_key" = ${familyKey} THEN "tt"."rid" END AS "rid" FROM "records" AS "tt" WHERE "tt"."rid" > ${INDEXED_THROUGH}`;
  return { indexed, pending, tail };
}

/**
 * SQL: the statement run beside a page the index drove (compile-search-query.ts), one row:
 * `candidates`, the candidates counted up to `bound + 1`; and only when they overflow, why:
 * `indexed`, the index's own matches counted up to `bound + 1` (more: the needle is that common
 * in the run, and a scan fills its pages fast), and when they do not (the overflow is the records
 * the index does not cover yet: its upkeep lags), `run_records`, the run's records counted up to
 * `lagScanMax + 1` (what the scan without the index would read), and `tail`, the rids written
 * since the index's watermark (for the message). The later columns are CASE arms, so a search
 * that did not overflow pays for none of them (SQLite runs a constant subquery where it is used).
 */
export function textCandidateCount(driver: TextDriver, familyKey: SQL, pack: SqlParamPack, bound: number, lagScanMax: number): SQL {
  const arms = candidateArms(driver, familyKey, pack);
  const cap = pack.value(bound + 1);
  const over = pack.value(bound);
  const candidates = sql`(SELECT count(*) FROM (SELECT "rid" FROM (${arms.indexed} UNION ALL ${arms.pending} UNION ALL ${arms.tail}) LIMIT ${cap}))`;
  const indexed = sql`(SELECT count(*) FROM (${arms.indexed} LIMIT ${cap}))`;
  const runRecords = sql`(SELECT count(*) FROM (SELECT 1 FROM "records" AS "tr" WHERE "tr"."family_key" = ${familyKey} LIMIT ${pack.value(lagScanMax + 1)}))`;
  const tail = sql`(coalesce((SELECT max("rid") FROM "records"), 0) - ${INDEXED_THROUGH})`;
  return sql`SELECT "c"."candidates" AS "candidates", "c"."indexed" AS "indexed",
    CASE WHEN "c"."indexed" <= ${over} THEN ${runRecords} END AS "run_records",
    CASE WHEN "c"."indexed" <= ${over} THEN ${tail} END AS "tail"
    FROM (SELECT "k"."candidates" AS "candidates", CASE WHEN "k"."candidates" > ${over} THEN ${indexed} END AS "indexed" FROM (SELECT ${candidates} AS "candidates") AS "k") AS "c"`;
}

/** Seconds a client waits while the index catches up: about one upkeep message's run. */
export const LAG_RETRY_AFTER_SECONDS = 30;

/**
 * The text index is behind (its upkeep lags the writes) by more records than the candidate bound,
 * and the search the index would have served, run without it, would scan more of the run's
 * records than TEXT_INDEX_LAG_SCAN_MAX_RECORDS: a 503 with Retry-After that says so (issue 29,
 * point 3), rather than a multi-second scan. Waiting helps: the upkeep indexes the tail in the
 * background (docs/search.md, "Upkeep: what lags, by how much, and why").
 */
function textIndexLagging(tail: number, lagScanMax: number): ApiError {
  const behind = tail > 0 ? `about ${tail.toLocaleString("en-US")} records written recently are` : "records written recently are";
  return new ApiError(
    503,
    `The text index of this project's database is catching up after recent writes: ${behind} not indexed yet, and answering this substring search without the index would scan more than ${lagScanMax.toLocaleString("en-US")} records of the run. Try again shortly: the upkeep indexes them in the background. Searches without a substring match are not affected.`,
    { "Retry-After": String(LAG_RETRY_AFTER_SECONDS) },
  );
}

/**
 * After a page the index drove: its candidate count, from the statement beside it
 * (textCandidateCount). Past the bound, a TextCandidatesOverflow (the search is run again by the
 * scan) when the needle is that common or the scan is small; the 503 of textIndexLagging when the
 * overflow is the index's lag and the scan would read more than `lagScanMax` records.
 */
export function throwOnCandidateOverflow(counted: D1Result | undefined, options: { textIndexBound: number | null; lagScanMax?: number }): void {
  if (counted === undefined || options.textIndexBound === null) return;
  const row = counted.results[0] as { candidates?: number; indexed?: number | null; run_records?: number | null; tail?: number | null } | undefined;
  const candidates = Number(row?.candidates ?? 0);
  if (candidates <= options.textIndexBound) return;
  const lagScanMax = options.lagScanMax;
  if (lagScanMax !== undefined && row?.run_records != null && Number(row.run_records) > lagScanMax) throw textIndexLagging(Number(row.tail ?? 0), lagScanMax);
  throw new TextCandidatesOverflow();
}
