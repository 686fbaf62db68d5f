/**
 * A page at `starting_token` N > 0 of a search whose project has partitions on several shards
 * (contract section 13: "`starting_token` pages continue across partitions without re-reading
 * what was sent"; docs/partitions.md, "Search"). The token is the API's offset, so the page
 * starts at the N-th match of the merged order, which no shard knows by itself.
 *
 * **The lead shard.** Partitions are time-ordered and a root's tree stays in one, so the first N
 * matches of a deep page usually all come from one shard: in the native order (created_at
 * descending), the shard of the open partition; in another sort, the shard whose first match
 * comes first. If that shard's own match at local rank N - 1 (SQLite skips N - 1 index entries,
 * as one database's OFFSET does) comes before every other shard's first match, it is the
 * merged order's (N - 1)-th match: every match before it is on the lead, and no other shard has
 * one before it. The page is then the lead's rows after it merged with every other shard's first
 * page, read in the same round trip. So:
 * - native order: one round trip per shard, in parallel (the lead's page at offset N - 1, the
 *   others' first pages), as a first page costs; the open partition's shard is taken as the lead;
 * - other sorts, or a native lead that fails the check: every shard's first page (one round
 *   trip each, in parallel), then the lead's page at N - 1 (one round trip, one shard).
 * Work: the lead skips N index entries (one database skips the same N); no other shard reads
 * more than a page; no row is shipped but the pages.
 *
 * **Otherwise** (the shards' matches interleave before rank N: late children spread over the
 * same hours on two shards, or a sort that does not follow time, such as a metric's): the
 * fallback of runSearch reads each shard's first N matches narrow (sort value and id) and merges
 * them to find the record before the page, then reads the page after it. Exact, at the cost of
 * N narrow rows per shard.
 */
import { type StoredRow } from "./shape-record";
import type { SearchQuery } from "./search-query";
import { mergeShardPages, pageOrder } from "./merge-shard-pages";

/** One shard's answer to a query (runSearch's readShardPage, reduced to what the merge needs). */
export interface LeadShardPage {
  shard: string;
  rows: StoredRow[];
}

/**
 * Reads `query` on some shards in one parallel round trip: `pick` names each shard's query, or
 * null to leave the shard out of this round trip.
 */
export type ReadShards = (pick: (shard: string) => SearchQuery | null) => Promise<LeadShardPage[]>;

/** The merged page, or null when the lead check failed and the caller falls back. */
export async function deepPageByLead(
  query: SearchQuery,
  readShards: ReadShards,
  nativeLead: string | undefined,
): Promise<{ rows: StoredRow[]; more: boolean } | null> {
  const firstPage: SearchQuery = { ...query, offset: 0 };
  // The lead's page from its (N - 1)-th match: that match, then limit + 1 rows after it.
  const fromPivot: SearchQuery = { ...query, offset: query.offset - 1, limit: query.limit + 1 };
  if (nativeLead !== undefined) {
    const answers = await readShards((shard) => (shard === nativeLead ? fromPivot : firstPage));
    const page = mergedAfterPivot(query, answers, nativeLead);
    if (page) return page;
  }
  const firsts = await readShards(() => firstPage);
  const order = pageOrder(query);
  let lead: LeadShardPage | undefined;
  for (const answer of firsts) {
    const first = answer.rows[0];
    if (first && (!lead || order(first, lead.rows[0]!) < 0)) lead = answer;
  }
  // No shard has a match: the page past them is empty.
  if (!lead) return { rows: [], more: false };
  if (lead.shard === nativeLead) return null; // already tried: its (N - 1)-th match is not the merged one
  const pivot = await readShards((shard) => (shard === lead!.shard ? fromPivot : null));
  return mergedAfterPivot(query, [...firsts.filter((a) => a.shard !== lead!.shard), ...pivot], lead.shard);
}

/**
 * The page after the lead's (N - 1)-th match, if that match is the merged order's: the lead has
 * it and it comes before every other shard's first match. The lead's page must be whole (not cut
 * by the byte budget, which counted the pivot's own bytes): else null, and the caller falls back.
 */
function mergedAfterPivot(query: SearchQuery, answers: readonly LeadShardPage[], leadShard: string): { rows: StoredRow[]; more: boolean } | null {
  const lead = answers.find((a) => a.shard === leadShard);
  const pivot = lead?.rows[0];
  if (!lead || !pivot) return null;
  const read = Number((pivot as { _rows_read?: number })._rows_read ?? lead.rows.length);
  if (read > lead.rows.length) return null;
  const order = pageOrder(query);
  for (const other of answers) {
    if (other === lead) continue;
    const first = other.rows[0];
    if (first && order(first, pivot) <= 0) return null;
  }
  // The lead's rows after the pivot: limit + 1 of them at most, none cut by the budget.
  const after = lead.rows.slice(1);
  const leadPage = after.map((row, i) => (i === 0 ? { ...row, _rows_read: after.length } : row));
  return mergeShardPages([leadPage, ...answers.filter((a) => a !== lead).map((a) => a.rows)], query);
}
