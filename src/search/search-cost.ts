/**
 * Whether a normalized search is **indexed** or **scan-class** (docs/search.md, "Cost classes";
 * docs/limits.md). The classification is of the request's shape, not a cost estimate: a
 * scan-class search is one whose cost grows with the size of the run whatever it finds, because
 * no index can serve it (see "How a search runs" in docs/search.md):
 *
 * - a substring match (`contains` on a text, id or metadata value): every row's text is read;
 * - a case-insensitive comparison (`case_sensitive: false`): every row's value is lowered;
 * - a sort on a column no index orders (anything but `created_at`, `id` and `metrics/<name>`):
 *   every matching record is read and sorted before the first one is returned;
 * - an offset of DEEP_OFFSET or more: the index is walked past every skipped entry.
 *
 * Everything else is indexed: its first page costs about the same at 100,000 and 1,000,000
 * records. So is a search the text index drives (text-driver.ts: a top-level `contains` or `eq`
 * on name, input or output with at least three characters), whatever else it asks: its every
 * leaf, sort and offset works on at most TEXT_INDEX_MAX_CANDIDATES candidates. When the run holds
 * more candidates than that, the search is run again without the index, classified as if the
 * index did not exist (withinSearchAdmission). (A selective equality on a column without an index, `name` say, also walks the run
 * when it matches little; it is left indexed because it is cheap when it matches much, which
 * its shape cannot tell.)
 *
 * The per-organization limit on concurrent scans (src/limits) reads this.
 */
import type { Env } from "../env";
import { limitSetting } from "../limits/limit-settings";
import { whileHoldingScanSlot } from "../limits/scan-admission";
import { type CompileOptions, usableTextDriver } from "./compile-search-query";
import type { FilterLeaf, FilterNode, SearchQuery } from "./search-query";
import { TextCandidatesOverflow } from "./text-driver";

/** Offsets from here on are scan-class: about 5 ms of index walk at 1M records, growing linearly. */
export const DEEP_OFFSET = 50_000;

export type SearchCost = { class: "indexed" } | { class: "scan"; reasons: string[] };

/** Sorts an index serves: the native order's columns, and every metric (record_metrics, keyed in metric order). */
function sortIsIndexed(sort: SearchQuery["sort"]): boolean {
  if (sort === null) return true;
  if (sort.column.kind === "metric") return true;
  return sort.column.kind === "standard" && (sort.column.id === "created_at" || sort.column.id === "id");
}

function leafReason(leaf: FilterLeaf): string | undefined {
  if (leaf.kind === "never" || leaf.kind === "between") return undefined;
  const isTags = leaf.column.kind === "standard" && leaf.column.id === "tags";
  if (leaf.kind === "contains" && !isTags) return `substring match on ${leaf.column.id}`;
  if (!leaf.caseSensitive) return `case-insensitive match on ${leaf.column.id}`;
  return undefined;
}

/** The tree's leaves in the order the request wrote them (without recursion). */
function leaves(node: FilterNode): FilterLeaf[] {
  const out: FilterLeaf[] = [];
  const stack: FilterNode[] = [node];
  while (stack.length > 0) {
    const current = stack.pop()!;
    if (current.kind === "leaf") out.push(current.leaf);
    else if (current.kind === "not") stack.push(current.child);
    else for (let i = current.children.length - 1; i >= 0; i--) stack.push(current.children[i]!);
  }
  return out;
}

/** `textIndex: false`: as the search is run when the index yields too many candidates. */
export function classifySearchCost(query: SearchQuery, { textIndex = true }: { textIndex?: boolean } = {}): SearchCost {
  if (textIndex && usableTextDriver(query, { textIndexBound: 1 })) return { class: "indexed" };
  const reasons = new Set<string>();
  for (const leaf of leaves(query.filter)) {
    const reason = leafReason(leaf);
    if (reason) reasons.add(reason);
  }
  if (!sortIsIndexed(query.sort)) reasons.add(`sort on ${query.sort!.column.id}`);
  if (query.offset >= DEEP_OFFSET) reasons.add(`offset ${query.offset}`);
  return reasons.size === 0 ? { class: "indexed" } : { class: "scan", reasons: [...reasons] };
}

/**
 * Runs `work` for a search-shaped query (a search, a count), compiled with the options it is
 * given: a scan-class one holds one of its organization's scan slots while it runs
 * (docs/limits.md), an indexed one runs at once. A search the text index drives runs at once
 * with the index; if the index yields more candidates than the bound (`work` throws
 * TextCandidatesOverflow), it runs again without the index, admitted as that search is.
 */
export async function withinSearchAdmission<T>(env: Env, organizationId: string, query: SearchQuery, work: (options: CompileOptions) => Promise<T>): Promise<T> {
  const bound = limitSetting(env, "TEXT_INDEX_MAX_CANDIDATES");
  if (usableTextDriver(query, { textIndexBound: bound })) {
    try {
      return await work({ textIndexBound: bound });
    } catch (error) {
      if (!(error instanceof TextCandidatesOverflow)) throw error;
    }
  }
  const withoutIndex = () => work({ textIndexBound: null });
  return classifySearchCost(query, { textIndex: false }).class === "scan" ? whileHoldingScanSlot(env, organizationId, withoutIndex) : withoutIndex();
}
