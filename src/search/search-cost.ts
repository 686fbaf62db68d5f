/**
 * Whether a query over a run's records is **indexed** or **scan-class**: THE classification that
 * every route which runs a filter over a run uses (search, count, and the routes built on
 * SearchQuery: export, delete-by-filter, add-to-queue by filter, metrics), so that the limits
 * see what the database will really do (docs/search.md, "Cost classes"; docs/limits.md).
 *
 *   classifySearchCost(query)                  -> { class: "indexed" } | { class: "scan", reasons }
 *   withinSearchAdmission(env, org, query, fn) -> fn() at once when indexed, else while holding
 *                                                  one of the organization's scan slots (or a 429)
 *
 * A route that walks every match page by page classifies each page's query (a deep offset is
 * scan-class on its own); one that reads a run some other way states its cost to
 * `withinScanAdmission` (src/limits/scan-admission.ts) itself, as the deletion dry run does.
 *
 * Search and count may also be served by the text index (text-driver.ts: a top-level `contains`
 * or `eq` on name, input or output with at least three characters): such a search is indexed
 * whatever else it asks, since its every leaf, sort and offset works on at most
 * TEXT_INDEX_MAX_CANDIDATES candidates (classifySearchCost with `textIndex`). When the run holds
 * more candidates than that, it runs again without the index, classified as below
 * (withinTextIndexedAdmission). Export, delete-by-filter and the metrics routes compile without
 * the text index (their statements re-run page after page or chunk after chunk, and a bound on
 * candidates would have to hold for every one of them), so they classify without `textIndex`:
 * a substring filter stays scan-class there, as the statement they run really scans.
 *
 * The class follows the access path compileSearchQuery gives the statement (accessPathOf): a
 * search is indexed when every leaf of its filter narrows the index that drives the statement,
 * so the rows read are the rows returned (plus any skipped by the offset). A leaf the driving
 * index does not narrow is checked on each row the index yields until the page fills: when it
 * matches little, that is the whole run, and the shape cannot tell how much it matches. Hence:
 *
 * - leaves that narrow the driver (never scan-class): in native order, `created_at` comparisons
 *   and one `eq` on `type` or `model` (records_family_{order,type_order,model_order}); a top-level
 *   `eq` / `one_of` on `id`, `trace_id`, `session_id` or `parent_id`, which bounds the statement
 *   by that key's records whatever else it holds; the `user_metadata` `eq`, tag `contains` or
 *   rating-number comparison (`annotations/<tid>` on a like_dislike, star or score template) that
 *   drives a side-table plan, with `created_at` comparisons beside it; comparisons on the metric
 *   the search is sorted by;
 * - scan-class whatever the plan: a substring match (`contains` on anything but tags), a
 *   case-insensitive comparison, a sort no index orders, an offset of DEEP_OFFSET or more;
 * - scan-class because nothing narrows them: any other leaf, named by why: a
 *   `dataset_metadata.<key>` leaf (each row's JSON is parsed), a leaf under `or` / `not`, a metric
 *   comparison without a sort on that metric, and an unindexed column (`name`, `status_code`, a
 *   second metadata key, ...).
 *
 * test/scan-classification.test.ts checks each shape against its real query plan.
 */
import type { Env } from "../env";
import { limitSetting } from "../limits/limit-settings";
import { type QueryCost, withinScanAdmission } from "../limits/scan-admission";
import { accessPathOf, type AccessPath, type CompileOptions, usableTextDriver } from "./compile-search-query";
import { conjunctsOf } from "./compile-filter-tree";
import type { ColumnRef } from "./search-columns";
import type { FilterLeaf, FilterNode, SearchQuery } from "./search-query";
import { TextCandidatesOverflow } from "./text-driver";

/** Offsets from here on are scan-class: about 5 ms of index walk at 1M records, growing linearly. */
export const DEEP_OFFSET = 50_000;

export type SearchCost = QueryCost;

/** Sorts an index serves: the native order's columns, and every metric (record_metrics, keyed in metric order). */
function sortIsIndexed(sort: SearchQuery["sort"]): boolean {
  if (sort === null) return true;
  if (sort.column.kind === "metric") return true;
  return sort.column.kind === "standard" && (sort.column.id === "created_at" || sort.column.id === "id");
}

function isStandard(column: ColumnRef, ...ids: string[]): boolean {
  return column.kind === "standard" && ids.includes(column.id);
}

/** Columns whose own index finds a key's records directly (records_family_id_order, records_trace, records_session, records_parent). */
const KEY_COLUMNS = ["id", "trace_id", "session_id", "parent_id"];

/** A comparison an index can serve as a range (or a point): not `ne`. */
function isRange(leaf: FilterLeaf): boolean {
  return (leaf.kind === "compare" && leaf.operator !== "ne") || leaf.kind === "between";
}

function isKeyLookup(leaf: FilterLeaf): boolean {
  const lookup = (leaf.kind === "compare" && leaf.operator === "eq") || (leaf.kind === "in" && !leaf.negated);
  return lookup && leaf.caseSensitive && isStandard(leaf.column, ...KEY_COLUMNS);
}

const isCreatedAtRange = (leaf: FilterLeaf) => leaf.kind !== "fully_annotated" && isRange(leaf) && isStandard(leaf.column, "created_at");

/** The top-level leaves the statement's driving index narrows (see the module comment). */
function narrowingLeaves(query: SearchQuery, path: AccessPath): Set<FilterLeaf> {
  const top = conjunctsOf(query.filter).flatMap((node) => (node.kind === "leaf" ? [node.leaf] : []));
  switch (path.kind) {
    case "metric":
      return new Set(top.filter((leaf) => leaf.kind !== "fully_annotated" && leaf.column.kind === "metric" && leaf.column.name === path.name && isRange(leaf)));
    case "side":
      return new Set([path.driver.leaf, ...top.filter(isCreatedAtRange)]);
    case "records": {
      const key = top.find(isKeyLookup) as Exclude<FilterLeaf, { kind: "fully_annotated" }> | undefined;
      // A key lookup bounds the statement by that key's records: every other leaf, wherever it
      // sits, is checked on those rows only. (Under a sort by id only the id index serves.)
      if (key && (path.nativeOrder || isStandard(key.column, "id"))) return new Set(leavesWithContext(query.filter).map(({ leaf }) => leaf));
      if (!path.nativeOrder) return new Set();
      // In native order one of records_family_{order, model_order, type_order} drives: created_at
      // ranges, and at most one equality (SQLite picks one index; the other equality is then
      // checked per row).
      const equality = ["model", "type"]
        .map((id) => top.find((leaf) => leaf.kind === "compare" && leaf.operator === "eq" && leaf.caseSensitive && isStandard(leaf.column, id)))
        .find((leaf) => leaf !== undefined);
      return new Set([...top.filter(isCreatedAtRange), ...(equality ? [equality] : [])]);
    }
  }
}

function leafReason(leaf: FilterLeaf, underOrNot: boolean, narrowing: Set<FilterLeaf>): string | undefined {
  // Every record's ratings are read to decide it (docs/annotations.md): a scan unless a key lookup bounds the rows.
  if (leaf.kind === "fully_annotated") return narrowing.has(leaf) ? undefined : "fully_annotated reads every record's ratings";
  const { id } = leaf.column;
  if (leaf.kind === "contains" && !isStandard(leaf.column, "tags")) return `substring match on ${id}`;
  if (leaf.kind !== "between" && !leaf.caseSensitive) return `case-insensitive match on ${id}`;
  if (narrowing.has(leaf)) return undefined;
  if (leaf.column.kind === "dataset_metadata") return `${id} read from every record's JSON`;
  if (underOrNot) return `filter on ${id} under or/not`;
  if (leaf.column.kind === "metric") return `filter on ${id} without a sort on it`;
  return `filter on ${id} that no index serves`;
}

/** Each leaf with whether it sits under an `or` or a `not`, in the order the request wrote them (without recursion). */
function leavesWithContext(root: FilterNode): { leaf: FilterLeaf; underOrNot: boolean }[] {
  const out: { leaf: FilterLeaf; underOrNot: boolean }[] = [];
  const stack: { node: FilterNode; underOrNot: boolean }[] = [{ node: root, underOrNot: false }];
  while (stack.length > 0) {
    const { node, underOrNot } = stack.pop()!;
    if (node.kind === "leaf") out.push({ leaf: node.leaf, underOrNot });
    else if (node.kind === "not") stack.push({ node: node.child, underOrNot: true });
    else {
      const below = underOrNot || node.kind === "or";
      for (let i = node.children.length - 1; i >= 0; i--) stack.push({ node: node.children[i]!, underOrNot: below });
    }
  }
  return out;
}

/** `textIndex`: as search and count run it, served by the text index when it can be. */
export function classifySearchCost(query: SearchQuery, { textIndex = false }: { textIndex?: boolean } = {}): SearchCost {
  if (textIndex && usableTextDriver(query, { textIndexBound: 1 })) return { class: "indexed" };
  const narrowing = narrowingLeaves(query, accessPathOf(query));
  const reasons = new Set<string>();
  for (const { leaf, underOrNot } of leavesWithContext(query.filter)) {
    const reason = leafReason(leaf, underOrNot, narrowing);
    if (reason) reasons.add(reason);
  }
  if (!sortIsIndexed(query.sort)) reasons.add(`sort on ${query.sort!.column.id}`);
  if (query.offset >= DEEP_OFFSET) reasons.add(`offset ${query.offset}`);
  return reasons.size === 0 ? { class: "indexed" } : { class: "scan", reasons: [...reasons] };
}

/**
 * Runs `work` for a query over a run's records (a search page, a count, a page of an export...):
 * a scan-class one holds one of its organization's scan slots while it runs (docs/limits.md),
 * an indexed one runs at once, without a call to the slots.
 */
export function withinSearchAdmission<T>(env: Env, organizationId: string, query: SearchQuery, work: () => Promise<T>): Promise<T> {
  return withinScanAdmission(env, organizationId, classifySearchCost(query), work);
}

/**
 * withinSearchAdmission for search and count, which the text index may serve: `work` compiles
 * with the options it is given. A search the index can drive runs at once with it; if the index
 * yields more candidates than the bound (`work` throws TextCandidatesOverflow), it runs again
 * without the index, admitted as that search is; unless the overflow is the index's lag and that
 * scan would read more than TEXT_INDEX_LAG_SCAN_MAX_RECORDS records: then `work` answers 503.
 */
export async function withinTextIndexedAdmission<T>(env: Env, organizationId: string, query: SearchQuery, work: (options: CompileOptions) => Promise<T>): Promise<T> {
  const bound = limitSetting(env, "TEXT_INDEX_MAX_CANDIDATES");
  if (usableTextDriver(query, { textIndexBound: bound })) {
    try {
      // Past the bound because the index lags and the scan would be long: a 503 (text-driver.ts).
      return await work({ textIndexBound: bound, lagScanMax: limitSetting(env, "TEXT_INDEX_LAG_SCAN_MAX_RECORDS") });
    } catch (error) {
      if (!(error instanceof TextCandidatesOverflow)) throw error;
    }
  }
  return withinSearchAdmission(env, organizationId, query, () => work({ textIndexBound: null }));
}
