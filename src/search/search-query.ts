/**
 * A search request after validation: every column resolved through the catalogue, every value
 * converted to its stored form (ids lower case, dates in microseconds, booleans 0/1), both
 * request shapes (the seed's and the SDK's) folded into one. The compiler and the record shaper
 * read only this.
 */
import type { RecordFamily } from "../columns/standard-columns";
import type { ColumnRef, SelectedColumn } from "./search-columns";

export type CompareOperator = "eq" | "ne" | "gt" | "gte" | "lt" | "lte";

/**
 * One filter leaf. Every leaf is false for a record that has no value for its column (`ne` and
 * `not_in` included); the tag list is the exception: it always has a value, possibly empty.
 */
export type FilterLeaf =
  /** id, date, number, boolean or text column compared with one value. */
  | { kind: "compare"; column: ColumnRef; operator: CompareOperator; value: string | number; caseSensitive: boolean }
  /** Substring of a text or id value; for tags, "has this tag". */
  | { kind: "contains"; column: ColumnRef; value: string; caseSensitive: boolean }
  /** `one_of` (negated false) or `not_in` (negated true); for tags, has any of / has none of. */
  | { kind: "in"; column: ColumnRef; negated: boolean; values: string[]; caseSensitive: boolean }
  /** Number within [low, high], both inclusive. */
  | { kind: "between"; column: ColumnRef; low: number; high: number }
  /** Tag list equal to this set of tags. */
  | { kind: "tags_equal"; column: ColumnRef; values: string[]; caseSensitive: boolean }
  /**
   * `fully_annotated`: rated on every live template of the project, by each of `userIds` (null:
   * by anyone); false when the project has no template.
   */
  | {
      kind: "fully_annotated";
      userIds: string[] | null;
      projectId?: string;
      /**
       * The project's live templates, read on its own shard by bindAnnotationColumns: a record in
       * a partition on another shard is tested against them there (that shard has no templates).
       */
      liveTemplateIds?: string[];
      /**
       * In a queue's search (contract section 8): rated on every one of the queue's templates by
       * each of `userIds`, or by each of the queue's annotators when userIds is null.
       */
      queue?: { templateIds: string[]; annotatorIds: string[] };
    };

export type FilterNode =
  | { kind: "and"; children: FilterNode[] }
  | { kind: "or"; children: FilterNode[] }
  | { kind: "not"; child: FilterNode }
  | { kind: "leaf"; leaf: FilterLeaf };

/** An explicit sort; absent means the native order (created_at descending, then id descending). */
export interface SortSpec {
  column: ColumnRef;
  ascending: boolean;
}

/**
 * Where a page continues (a keyset, for callers that walk every match, as the export does): the
 * page holds only the records after this one in the query's order, the record being given by
 * its sort value (the statement's `sort_value`: null for a record without a value, which sorts
 * last) and its id (the tie-break). Each plan applies it on its own driving order
 * (compile-search-query.ts), so a page costs what an offset-0 page costs.
 */
export interface SortKeyset {
  value: string | number | null;
  id: string;
}

export interface Projection {
  /** The selected columns, or null for every standard field of the record's kind. */
  columns: SelectedColumn[] | null;
  /** Metric names to return in `metrics`, or "all". */
  metrics: ReadonlySet<string> | "all";
  /** Whether `feedback_rating_info` is returned. */
  feedback: boolean;
}

export interface SearchQuery {
  family: RecordFamily;
  filter: FilterNode;
  sort: SortSpec | null;
  limit: number;
  offset: number;
  projection: Projection;
  includeCounts: boolean;
  includeMetricInfo: boolean;
  truncateFields: boolean;
  /** Only the records after this one (absent: from the first). Used with offset 0. */
  after?: SortKeyset | null;
}

/**
 * The query of a request that needs only the ids of its matches, in the native order (an index
 * walk), up to `limit`: no sort, no offset, no columns, no counts. Counting and deletion by
 * filter read a search's matches this way.
 */
export function idsOnlyQuery(searched: SearchQuery, limit: number): SearchQuery {
  return {
    ...searched,
    sort: null,
    limit,
    offset: 0,
    projection: { columns: [], metrics: new Set(), feedback: false },
    includeCounts: false,
    includeMetricInfo: false,
    truncateFields: false,
  };
}
