/**
 * The published limits of a search request (docs/search.md, "Limits"). A request beyond any of
 * them is a 422 that points at the offending part; none of them can be reached by the SQL itself:
 * every statement binds exactly one parameter and stays far below D1's 100 KB statement size.
 */
export const SEARCH_LIMITS = {
  /** `limit` when the request gives none. */
  defaultPageSize: 100,
  /** Largest `limit`. */
  maxPageSize: 1000,
  /**
   * Nesting of a filter element: a bare leaf is depth 1, and every `and`, `or`, `not` or
   * `filter` wrapper above it adds one.
   */
  maxTreeDepth: 16,
  /** Leaves across `filters` and `filter_tree` together. */
  maxLeaves: 50,
  /** Leaves and and/or/not/filter nodes across `filters` and `filter_tree` together. */
  maxNodes: 200,
  /** Elements of one list value (`one_of`, `not_in`, collection `eq`). */
  maxListLength: 10_000,
  /** Characters of one string value (and of one list element). */
  maxTextValueLength: 4096,
  /** Bytes of all filter values together, as JSON (they travel as one D1 parameter, capped at 2 MB). */
  maxFilterValuesBytes: 1_000_000,
  /** Characters of a metadata key or metric name in a column id. */
  maxColumnKeyLength: 256,
  /** Entries of `select_columns.column_ids` and of `metric_columns_names`. */
  maxSelectedColumns: 500,
  /** Characters kept of each long string field when `truncate_fields` is true. */
  truncatedFieldLength: 1000,
  /**
   * Bytes of stored record text one page may carry (every selected text and JSON column
   * counted, in UTF-8): a page of 1,000 records with 2 MB inputs would be 2 GB, far past a
   * Worker's 128 MB. The page ends before the record that would cross it (the first record is
   * always returned), with `paginated` true and `next_starting_token` at that record.
   */
  maxPageBytes: 8_000_000,
} as const;
