/**
 * A search request body (either shape: the interface's `pagination`, `sort.name` and leaf `name`,
 * or the SDK's top-level `limit`/`starting_token`, `sort.column_id`, leaf `column_id` and
 * `filter_tree`) -> a SearchQuery, or a RequestValidationError listing every fault with a `loc`
 * that points into the request (a leaf's own field where there is one). Pure.
 *
 * The filter tree is measured (depth, node count) by an iterative walk before anything recurses
 * into it, so no request can exhaust the stack.
 */
import type { FilterType, RecordFamily } from "../columns/standard-columns";
import { RequestValidationError } from "../http/errors";
import type { ValidationErrorItem } from "../http/validation-errors";
import { isoToMicros } from "../ingest/timestamps";
import { CASE_SENSITIVE_TYPES, DEFAULT_OPERATOR, isLeafType, LEAF_TYPES, type Operator, OPERATORS_BY_TYPE } from "./filter-operators";
import { type ColumnRef, filterTypeOf, isSortable, resolveColumn, resolveSelectedColumn, type SelectedColumn } from "./search-columns";
import { SEARCH_LIMITS } from "./search-limits";
import type { CompareOperator, FilterLeaf, FilterNode, Projection, SearchQuery, SortSpec } from "./search-query";
import type { SearchRequestBody } from "./search-schemas";

export type SearchMode = "partial" | "full";

type Loc = (string | number)[];

/** The leaf types an annotation column can take, by template type (contract section 8). */
const ANNOTATION_FILTER_TYPES = new Set(["boolean", "number", "collection", "text"]);

const NODE_KEYS = ["and", "or", "not", "filter"] as const;

/** Every field of every kind, all metrics and feedback: the full-record `search` routes. */
const FULL_PROJECTION: Projection = { columns: null, metrics: "all", feedback: true };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ISO_DATE_TIME = /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2})(:\d{2}(?:[.,]\d+)?)?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$/i;

function quoteList(values: readonly string[]): string {
  const quoted = values.map((v) => `'${v}'`);
  return quoted.length <= 1 ? quoted.join("") : `${quoted.slice(0, -1).join(", ")} or ${quoted[quoted.length - 1]}`;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

class Issues {
  readonly items: ValidationErrorItem[] = [];

  add(loc: Loc, type: string, msg: string, input?: unknown, ctx?: Record<string, unknown>): undefined {
    const item: ValidationErrorItem = { loc, msg, type };
    if (input !== undefined) item.input = input;
    if (ctx) item.ctx = ctx;
    this.items.push(item);
    return undefined;
  }

  valueError(loc: Loc, message: string, input?: unknown): undefined {
    return this.add(loc, "value_error", `Value error, ${message}`, input, { error: message });
  }

  missing(loc: Loc, parent: unknown): undefined {
    return this.add(loc, "missing", "Field required", parent);
  }
}

// ---- values ------------------------------------------------------------------------------------

class Values {
  /** JSON bytes of every filter value so far (they travel as one D1 parameter). */
  bytes = 0;

  constructor(private readonly issues: Issues) {}

  private counted<T>(value: T): T {
    this.bytes += JSON.stringify(value).length;
    return value;
  }

  string(value: unknown, loc: Loc): string | undefined {
    if (typeof value !== "string") return this.issues.add(loc, "string_type", "Input should be a valid string", value);
    if (value.length > SEARCH_LIMITS.maxTextValueLength) {
      const max = SEARCH_LIMITS.maxTextValueLength;
      return this.issues.add(loc, "string_too_long", `String should have at most ${max} characters`, value.slice(0, 64), { max_length: max });
    }
    return this.counted(value);
  }

  uuid(value: unknown, loc: Loc): string | undefined {
    if (typeof value !== "string") return this.issues.add(loc, "uuid_type", "UUID input should be a string, bytes or UUID object", value);
    if (!UUID.test(value.trim())) {
      return this.issues.add(loc, "uuid_parsing", "Input should be a valid UUID", value.slice(0, 64), { error: "invalid UUID format" });
    }
    return this.counted(value.trim().toLowerCase());
  }

  number(value: unknown, loc: Loc): number | undefined {
    if (typeof value === "number" && Number.isFinite(value)) return this.counted(value);
    // Pydantic's lax mode reads numeric strings as numbers.
    if (typeof value === "string" && value.trim() !== "" && Number.isFinite(Number(value))) return this.counted(Number(value));
    if (typeof value === "string") return this.issues.add(loc, "float_parsing", "Input should be a valid number, unable to parse string as a number", value.slice(0, 64));
    return this.issues.add(loc, "float_type", "Input should be a valid number", value);
  }

  boolean(value: unknown, loc: Loc): 0 | 1 | undefined {
    if (typeof value === "boolean") return value ? 1 : 0;
    if (value === 0 || value === 1) return value;
    if (typeof value === "string") {
      const v = value.trim().toLowerCase();
      if (["true", "1", "yes", "on", "t", "y"].includes(v)) return 1;
      if (["false", "0", "no", "off", "f", "n"].includes(v)) return 0;
      return this.issues.add(loc, "bool_parsing", "Input should be a valid boolean, unable to interpret input", value.slice(0, 64));
    }
    return this.issues.add(loc, "bool_type", "Input should be a valid boolean", value);
  }

  /** An ISO 8601 date or date-time (no zone: UTC) -> microseconds since the epoch. */
  dateTime(value: unknown, loc: Loc): number | undefined {
    if (typeof value !== "string") return this.issues.add(loc, "datetime_type", "Input should be a valid datetime", value);
    const match = ISO_DATE_TIME.exec(value.trim());
    const micros = match
      ? isoToMicros(`${match[1]}T${match[2] ?? "00:00"}${match[3] ?? ":00"}${(match[4] ?? "Z").replace(/^([+-]\d{2})$/, "$1:00")}`)
      : undefined;
    if (micros === undefined) {
      return this.issues.add(loc, "datetime_from_date_parsing", "Input should be a valid datetime or date", value.slice(0, 64), { error: "invalid datetime format" });
    }
    return this.counted(micros);
  }

  /** A list of strings (or, where `scalarAllowed`, one string as a list of one). */
  list(value: unknown, loc: Loc, element: (v: unknown, loc: Loc) => string | undefined, scalarAllowed: boolean): string[] | undefined {
    if (typeof value === "string" && scalarAllowed) {
      const one = element(value, loc);
      return one === undefined ? undefined : [one];
    }
    if (!Array.isArray(value)) return this.issues.add(loc, "list_type", "Input should be a valid list", value);
    const max = SEARCH_LIMITS.maxListLength;
    if (value.length > max) {
      return this.issues.add(loc, "too_long", `List should have at most ${max} items after validation, not ${value.length}`, undefined, {
        field_type: "List",
        max_length: max,
        actual_length: value.length,
      });
    }
    const out: string[] = [];
    let failed = false;
    value.forEach((v, i) => {
      const converted = element(v, [...loc, i]);
      if (converted === undefined) failed = true;
      else out.push(converted);
    });
    return failed ? undefined : out;
  }

  range(value: unknown, loc: Loc): [number, number] | undefined {
    if (!Array.isArray(value)) return this.issues.add(loc, "list_type", "Input should be a valid list", value);
    if (value.length !== 2) {
      const type = value.length < 2 ? "too_short" : "too_long";
      return this.issues.add(loc, type, `between takes [low, high]: list should have 2 items, not ${value.length}`, value.slice(0, 3), {
        field_type: "List",
        [value.length < 2 ? "min_length" : "max_length"]: 2,
        actual_length: value.length,
      });
    }
    const low = this.number(value[0], [...loc, 0]);
    const high = this.number(value[1], [...loc, 1]);
    if (low === undefined || high === undefined) return undefined;
    if (low > high) return this.issues.valueError(loc, `between takes [low, high] with low <= high, got [${low}, ${high}]`, value);
    return [low, high];
  }
}

// ---- the filter tree ---------------------------------------------------------------------------

/**
 * Walks the raw elements without recursion and reports the first place where the depth or node
 * limits are exceeded, before the recursive parse runs. Elements are counted before they are
 * queued, so a list of a million elements is refused without walking it.
 */
function measureTree(roots: readonly [unknown, Loc][], issues: Issues): boolean {
  const tooMany = (loc: Loc) => {
    issues.valueError(loc, `a search may combine at most ${SEARCH_LIMITS.maxNodes} filter nodes and leaves`);
    return false;
  };
  if (roots.length > SEARCH_LIMITS.maxNodes) return tooMany(["body", "filters"]);
  const stack: [unknown, Loc, number][] = roots.map(([value, loc]) => [value, loc, 1]);
  // Every element counts, objects or not.
  let counted = roots.length;
  while (stack.length > 0) {
    const [value, loc, depth] = stack.pop()!;
    if (depth > SEARCH_LIMITS.maxTreeDepth) {
      issues.valueError(loc, `filters may be nested at most ${SEARCH_LIMITS.maxTreeDepth} levels deep`);
      return false;
    }
    if (!isObject(value)) continue;
    for (const key of NODE_KEYS) {
      const inner = value[key];
      if (Array.isArray(inner) && (key === "and" || key === "or")) {
        counted += inner.length;
        if (counted > SEARCH_LIMITS.maxNodes) return tooMany([...loc, key]);
        inner.forEach((element, i) => stack.push([element, [...loc, key, i], depth + 1]));
      } else if (inner !== undefined && (key === "not" || key === "filter")) {
        counted += 1;
        if (counted > SEARCH_LIMITS.maxNodes) return tooMany([...loc, key]);
        stack.push([inner, [...loc, key], depth + 1]);
      }
    }
  }
  return true;
}

const PLACEHOLDER: FilterNode = { kind: "and", children: [] };

class TreeParser {
  private leaves = 0;

  constructor(
    private readonly family: RecordFamily,
    private readonly issues: Issues,
    private readonly values: Values,
  ) {}

  node(value: unknown, loc: Loc): FilterNode {
    if (!isObject(value)) {
      this.issues.add(loc, "model_attributes_type", "Input should be a valid dictionary or object to extract fields from", value);
      return PLACEHOLDER;
    }
    const keys = NODE_KEYS.filter((k) => value[k] !== undefined);
    if (keys.length > 1) {
      this.issues.valueError(loc, `a filter node has exactly one of and, or, not, filter; got ${keys.join(", ")}`);
      return PLACEHOLDER;
    }
    const key = keys[0];
    if (key === "and" || key === "or") {
      const list = value[key];
      if (!Array.isArray(list)) {
        this.issues.add([...loc, key], "list_type", "Input should be a valid list", list);
        return PLACEHOLDER;
      }
      return { kind: key, children: list.map((child, i) => this.node(child, [...loc, key, i])) };
    }
    if (key === "not") return { kind: "not", child: this.node(value.not, [...loc, "not"]) };
    if (key === "filter") {
      if (!isObject(value.filter)) {
        this.issues.add([...loc, "filter"], "model_attributes_type", "Input should be a valid dictionary or object to extract fields from", value.filter);
        return PLACEHOLDER;
      }
      return this.leafNode(value.filter, [...loc, "filter"]);
    }
    return this.leafNode(value, loc);
  }

  private leafNode(value: Record<string, unknown>, loc: Loc): FilterNode {
    this.leaves += 1;
    if (this.leaves === SEARCH_LIMITS.maxLeaves + 1) {
      this.issues.valueError(loc, `a search may combine at most ${SEARCH_LIMITS.maxLeaves} filter leaves`);
    }
    if (this.leaves > SEARCH_LIMITS.maxLeaves) return PLACEHOLDER;
    const leaf = this.leaf(value, loc);
    return leaf ? { kind: "leaf", leaf } : PLACEHOLDER;
  }

  private leaf(value: Record<string, unknown>, loc: Loc): FilterLeaf | undefined {
    const { issues } = this;
    const type = value.type ?? undefined;
    if (type !== undefined && !isLeafType(type)) {
      const expected = quoteList(LEAF_TYPES);
      return issues.add(
        [...loc, "type"],
        "union_tag_invalid",
        `Input tag '${String(type)}' found using 'type' does not match any of the expected tags: ${expected}`,
        type,
        { discriminator: "'type'", tag: String(type), expected_tags: expected },
      );
    }
    if (type === "fully_annotated") {
      if (value.user_ids === undefined || value.user_ids === null) return { kind: "fully_annotated", userIds: null };
      const userIds = this.values.list(value.user_ids, [...loc, "user_ids"], (v, l) => this.values.uuid(v, l), false);
      return userIds === undefined ? undefined : { kind: "fully_annotated", userIds: userIds.length === 0 ? null : userIds };
    }

    const columnKey = value.column_id !== undefined && value.column_id !== null ? "column_id" : value.name !== undefined && value.name !== null ? "name" : undefined;
    if (!columnKey) return issues.missing([...loc, "column_id"], value);
    const columnId = value[columnKey];
    if (typeof columnId !== "string") return issues.add([...loc, columnKey], "string_type", "Input should be a valid string", columnId);
    const resolved = resolveColumn(columnId, this.family);
    if (!resolved.ok) return issues.valueError([...loc, columnKey], resolved.message, columnId);
    let column = resolved.ref;
    if (column.kind === "annotation") {
      // The leaf says which of the template's filter types it is; the template is checked
      // against it on the project's shard (bindAnnotationColumns).
      if (type === undefined) return issues.missing([...loc, "type"], value);
      if (!ANNOTATION_FILTER_TYPES.has(type)) {
        return issues.valueError([...loc, "type"], `an annotation column takes a boolean, number, collection or text filter, not a ${type} filter`, type);
      }
      column = { ...column, filterType: type as FilterType, loc };
    }
    const filterType = filterTypeOf(column);
    if (type !== undefined && type !== filterType) {
      return issues.valueError([...loc, "type"], `column '${columnId}' takes a ${filterType} filter, not a ${type} filter`, type);
    }

    const allowed = OPERATORS_BY_TYPE[filterType];
    const rawOperator = value.operator ?? DEFAULT_OPERATOR[filterType];
    if (rawOperator === undefined) return issues.missing([...loc, "operator"], value);
    if (typeof rawOperator !== "string" || !(allowed as readonly string[]).includes(rawOperator)) {
      const expected = quoteList(allowed);
      return issues.add([...loc, "operator"], "literal_error", `Input should be ${expected}`, rawOperator, { expected });
    }
    const operator = rawOperator as Operator;

    let caseSensitive = true;
    if (CASE_SENSITIVE_TYPES.has(filterType) && value.case_sensitive !== undefined && value.case_sensitive !== null) {
      if (typeof value.case_sensitive !== "boolean") {
        return issues.add([...loc, "case_sensitive"], "bool_type", "Input should be a valid boolean", value.case_sensitive);
      }
      caseSensitive = value.case_sensitive;
    }

    if (!("value" in value) || value.value === undefined) return issues.missing([...loc, "value"], value);
    return this.leafValue(column, filterType, operator, value.value, [...loc, "value"], caseSensitive);
  }

  private leafValue(column: ColumnRef, filterType: string, operator: Operator, raw: unknown, loc: Loc, caseSensitive: boolean): FilterLeaf | undefined {
    const v = this.values;
    const compare = (value: string | number | undefined): FilterLeaf | undefined =>
      value === undefined ? undefined : { kind: "compare", column, operator: operator as CompareOperator, value, caseSensitive };
    const inList = (values: string[] | undefined): FilterLeaf | undefined =>
      values === undefined ? undefined : { kind: "in", column, negated: operator === "not_in", values, caseSensitive };
    const contains = (value: string | undefined): FilterLeaf | undefined =>
      value === undefined ? undefined : { kind: "contains", column, value, caseSensitive };
    const text = (x: unknown, l: Loc) => v.string(x, l);
    switch (filterType) {
      case "id":
        if (operator === "one_of" || operator === "not_in") return inList(v.list(raw, loc, (x, l) => v.uuid(x, l), true));
        // Ids are stored lower case: a fragment matches whatever case it is typed in.
        if (operator === "contains") return contains(v.string(raw, loc)?.toLowerCase());
        return compare(v.uuid(raw, loc));
      case "date":
        return compare(v.dateTime(raw, loc));
      case "number": {
        if (operator !== "between") return compare(v.number(raw, loc));
        const range = v.range(raw, loc);
        return range ? { kind: "between", column, low: range[0], high: range[1] } : undefined;
      }
      case "boolean":
        return compare(v.boolean(raw, loc));
      case "collection":
        if (operator === "contains") return contains(v.string(raw, loc));
        if (operator === "eq") {
          const values = v.list(raw, loc, text, true);
          return values ? { kind: "tags_equal", column, values, caseSensitive } : undefined;
        }
        return inList(v.list(raw, loc, text, true));
      default:
        if (operator === "one_of" || operator === "not_in") return inList(v.list(raw, loc, text, true));
        if (operator === "contains") return contains(v.string(raw, loc));
        return compare(v.string(raw, loc));
    }
  }
}

function normalizeFilter(body: SearchRequestBody, family: RecordFamily, issues: Issues): FilterNode {
  const roots: [unknown, Loc][] = (body.filters ?? []).map((element, i) => [element, ["body", "filters", i]]);
  if (body.filter_tree !== undefined && body.filter_tree !== null) roots.push([body.filter_tree, ["body", "filter_tree"]]);
  if (!measureTree(roots, issues)) return PLACEHOLDER;
  const values = new Values(issues);
  const parser = new TreeParser(family, issues, values);
  const children = roots.map(([element, loc]) => parser.node(element, loc));
  if (values.bytes > SEARCH_LIMITS.maxFilterValuesBytes) {
    issues.valueError(["body"], `filter values may total at most ${SEARCH_LIMITS.maxFilterValuesBytes} bytes of JSON, got ${values.bytes}`);
  }
  return { kind: "and", children };
}

/**
 * The filters alone (`filters` and `filter_tree`), for other readers of a run than the search
 * (src/analytics): the same leaves, limits and 422s.
 */
export function normalizeFilters(body: Pick<SearchRequestBody, "filters" | "filter_tree">, family: RecordFamily): FilterNode {
  const issues = new Issues();
  const filter = normalizeFilter(body as SearchRequestBody, family, issues);
  if (issues.items.length > 0) throw new RequestValidationError(issues.items);
  return filter;
}

// ---- sort, projection, pagination ----------------------------------------------------------------

function normalizeSort(sort: SearchRequestBody["sort"], family: RecordFamily, issues: Issues): SortSpec | null {
  if (!sort) return null;
  const key = sort.column_id != null ? "column_id" : sort.name != null ? "name" : undefined;
  if (!key) return issues.missing(["body", "sort", "column_id"], sort) ?? null;
  const columnId = sort[key]!;
  const resolved = resolveColumn(columnId, family);
  if (!resolved.ok) return issues.valueError(["body", "sort", key], resolved.message, columnId) ?? null;
  if (!isSortable(resolved.ref)) return issues.valueError(["body", "sort", key], `column '${columnId}' is not sortable`, columnId) ?? null;
  // Where to point if the template turns out not to exist (bindAnnotationColumns).
  if (resolved.ref.kind === "annotation") resolved.ref.loc = ["body", "sort"];
  return { column: resolved.ref, ascending: sort.ascending ?? true };
}

function normalizeProjection(select: SearchRequestBody["select_columns"], family: RecordFamily, issues: Issues): Projection {
  const metrics = new Set<string>(select?.metric_columns_names ?? []);
  let selectsAllMetrics = select?.include_all_metrics === true || select?.includes_metric_columns === true;
  let columns: SelectedColumn[] | null = null;
  if (select?.column_ids && select.column_ids.length > 0) {
    const seen = new Set<string>();
    columns = [];
    select.column_ids.forEach((id, i) => {
      const resolved = resolveSelectedColumn(id, family);
      if (!resolved.ok) {
        // A column of another kind is simply absent from these records; an unknown one is a fault.
        if (resolved.reason === "unknown") issues.valueError(["body", "select_columns", "column_ids", i], resolved.message, id);
        return;
      }
      if (seen.has(id)) return;
      seen.add(id);
      if (resolved.ref.kind === "field" && resolved.ref.id === "metrics") {
        selectsAllMetrics = true;
        return;
      }
      columns!.push(resolved.ref);
      if (resolved.ref.kind === "metric") metrics.add(resolved.ref.name);
    });
  }
  return { columns, metrics: selectsAllMetrics ? "all" : metrics, feedback: select?.include_all_feedback === true };
}

export function normalizeSearchRequest(body: SearchRequestBody, family: RecordFamily, mode: SearchMode): SearchQuery {
  const issues = new Issues();
  const filter = normalizeFilter(body, family, issues);
  const sort = normalizeSort(body.sort, family, issues);
  const projection = mode === "full" ? FULL_PROJECTION : normalizeProjection(body.select_columns, family, issues);
  if (issues.items.length > 0) throw new RequestValidationError(issues.items);
  return {
    family,
    filter,
    sort,
    limit: body.pagination?.limit ?? body.limit ?? SEARCH_LIMITS.defaultPageSize,
    offset: body.pagination?.starting_token ?? body.starting_token ?? 0,
    projection,
    includeCounts: body.include_counts === true,
    includeMetricInfo: body.include_code_metric_metadata === true,
    truncateFields: body.truncate_fields === true,
  };
}
