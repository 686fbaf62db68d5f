/**
 * A SearchQuery -> ONE SQL statement that returns the page (limit + 1 rows, to know whether more
 * follow), already ordered, with the child counts when asked. Its only bound parameter is the
 * value pack (sql-param-pack.ts).
 *
 * The statement picks the access path that serves both the filter and the order, so that a
 * page costs what it returns rather than what the run holds (docs/search.md, "Query plans"):
 * - a sort on `metrics/<name>` is driven by record_metrics, a WITHOUT ROWID table keyed by
 *   (metric_key, value, record_id) whose rows carry the record's rid: records with the metric in
 *   value order (the key of (family, name) found in metric_keys once, as a constant subquery),
 *   then (a second arm, run only when the page reaches it) the records without it, by id;
 * - in native order (or sorted by created_at), a top-level `user_metadata.<key>` = value or tag
 *   `contains` leaf is driven by its side table's index, which carries (created_at, record_id)
 *   after the value and so is already in page order; so is a comparison on a like_dislike, star
 *   or score rating (`annotations/<tid>`), by annotation_ratings_template_order;
 * - otherwise the records table, whose indexes carry (family_key, [type | model,] created_at, id)
 *   for the native order and (family_key, id) for the id order (family_key: the run's family,
 *   run_families).
 * Side-table drivers are joined with CROSS JOIN, which tells SQLite to keep them as the outer
 * loop whatever its statistics say.
 *
 * Every arm also requires the run to be the caller's (a constant EXISTS on `runs`, evaluated
 * once), so a page can never hold another organization's records even if the separate
 * ownership check were dropped.
 */
import { type SQL, sql } from "drizzle-orm";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import type { RunKind } from "../db/schema";
import { balancedJoin, compileFilter, conjunctsOf, DATASET_ENTRY_TEXT, valueTest } from "./compile-filter-tree";
import type { ColumnRef } from "./search-columns";
import type { FilterLeaf, FilterNode, SearchQuery } from "./search-query";
import { child, driverMetadata, driverMetrics, driverTags, familyKeyOf, from, guardRun, leafMetadata, metricKey, r, recordColumn, recordMetricRows } from "./search-tables";
import { SEARCH_LIMITS } from "./search-limits";
import { storageNeeded } from "./shape-record";
import { SqlParamPack } from "./sql-param-pack";
import { onlyWhen, TEXT_CANDIDATES_READ_ALL, type TextDriver, textCandidateCount, textCandidates, textDriverOf } from "./text-driver";
import { RATINGS_COLUMN, ratingsJsonSql } from "../annotations/record-feedback";

export interface SearchScope {
  organizationId: string;
  projectId: string;
  runId: string;
  runKind: RunKind;
}

export interface CompiledStatement {
  sql: string;
  params: [string];
}

export interface CompiledSearch extends CompiledStatement {
  /**
   * When the text index drives the page: a statement counting its candidates (at most the bound
   * + 1), to run beside the page. More than the bound means the page is not to be trusted: the
   * search is to be run again without the index (text-driver.ts).
   */
  candidateCount?: CompiledStatement;
}

export interface CompileOptions {
  /** The most candidates the text index may yield, or null to never use the index. */
  textIndexBound: number | null;
  /**
   * The most records of the run a search may scan instead of the index when the index lags
   * (TEXT_INDEX_LAG_SCAN_MAX_RECORDS, text-driver.ts): past it, a 503. Absent: no such bound.
   */
  lagScanMax?: number;
}

const dialect = new SQLiteAsyncDialect();

type Direction = "ASC" | "DESC";

interface Context {
  query: SearchQuery;
  scope: SearchScope;
  pack: SqlParamPack;
  direction: Direction;
  /**
   * What each arm selects of its records: the row key, the id (the tie-break of the order) and
   * the row's bytes. The stored columns are read by the statement's outer join, after the byte
   * budget has been applied (see compileSearchQuery).
   */
  columns: SQL;
  /** The key of the searched run's family (familyKeyOf), built once for every arm and driver. */
  familyKey: SQL;
}

/** The run's family every arm is confined to (by its key), and the ownership guard. */
function baseConditions(ctx: Context, familyKey: SQL = ctx.familyKey): SQL {
  return sql`${r.familyKey} = ${familyKey} AND ${runOwnedBy(ctx.scope, ctx.pack)}`;
}

/** The ownership guard: the run is the scope's (an uncorrelated EXISTS). */
export function runOwnedBy(scope: SearchScope, pack: SqlParamPack): SQL {
  const run = pack.value(scope.runId);
  return sql`EXISTS (SELECT 1 FROM ${from(guardRun)} WHERE ${guardRun.id} = ${run} AND ${guardRun.projectId} = ${pack.value(scope.projectId)} AND ${guardRun.organizationId} = ${pack.value(scope.organizationId)} AND ${guardRun.kind} = ${pack.value(scope.runKind)})`;
}

function residual(nodes: readonly FilterNode[], pack: SqlParamPack): SQL {
  return nodes.length === 0 ? sql.raw("1") : balancedJoin(nodes.map((n) => compileFilter(n, pack)), "AND");
}

function pageLimit(ctx: Context): SQL {
  return sql`LIMIT ${ctx.pack.value(ctx.query.limit + 1)} OFFSET ${ctx.pack.value(ctx.query.offset)}`;
}

/** The leaf of a top-level conjunct, if it is a bare leaf. */
function leafOf(node: FilterNode): FilterLeaf | undefined {
  return node.kind === "leaf" ? node.leaf : undefined;
}

function isColumn(column: ColumnRef, id: string): boolean {
  return column.kind === "standard" && column.id === id;
}

/**
 * The keyset condition (query.after): the record comes after `after` in the order
 * `expression IS NULL, expression, id` (in the direction; NULLs last either way), the order
 * every plan pages in. A row value `(expression, id) > (v, id)` is a range of an index whose
 * key carries both (SQLite seeks to it), so a continued page reads no earlier entry.
 * `sorted: null`: the order is by id alone.
 */
function keysetCondition(ctx: Context, sorted: { expression: SQL; nullable: boolean } | null, id: SQL): SQL {
  const after = ctx.query.after;
  if (!after) return sql.raw("1");
  const op = sql.raw(ctx.direction === "ASC" ? ">" : "<");
  const afterId = ctx.pack.value(after.id);
  if (sorted === null) return sql`${id} ${op} ${afterId}`;
  if (after.value === null) {
    // Past the last record with a value: only records without one remain, by id.
    return sorted.nullable ? sql`((${sorted.expression}) IS NULL AND ${id} ${op} ${afterId})` : sql.raw("0");
  }
  const beyond = sql`(${sorted.expression}, ${id}) ${op} (${ctx.pack.value(after.value)}, ${afterId})`;
  return sorted.nullable ? sql`((${sorted.expression}) IS NULL OR ${beyond})` : beyond;
}

// ---- records-driven plan ----------------------------------------------------------------------

/** The value a sort orders by, for sorts that are not served by a side table. */
function sortExpression(column: ColumnRef, pack: SqlParamPack): { expression: SQL; nullable: boolean } {
  switch (column.kind) {
    case "standard":
      return { expression: sql`${recordColumn(column.storage)}`, nullable: column.nullable };
    case "user_metadata":
      return {
        expression: sql`(SELECT ${leafMetadata.value} FROM ${from(leafMetadata)} WHERE ${leafMetadata.recordRid} = ${r.rid} AND ${leafMetadata.key} = ${pack.value(column.key)})`,
        nullable: true,
      };
    case "dataset_metadata":
      return {
        expression: sql`(SELECT ${DATASET_ENTRY_TEXT} FROM json_each(${r.datasetMetadata}) AS "lj" WHERE "lj"."key" = ${pack.value(column.key)})`,
        nullable: true,
      };
    case "metric":
      throw new Error("metric sorts use the metric plan");
    case "annotation": {
      // The aggregate (contract section 8): the like share or the average for the types with a
      // number, the number of ratings otherwise; NULL (sorted last) for a record without rating.
      const numeric = column.annotationType === "like_dislike" || column.annotationType === "star" || column.annotationType === "score";
      const aggregate = sql.raw(numeric ? `avg("sa"."num_value")` : `nullif(count(*), 0)`);
      return {
        expression: sql`(SELECT ${aggregate} FROM "annotation_ratings" AS "sa" WHERE "sa"."record_rid" = ${r.rid} AND "sa"."template_id" = ${pack.value(column.templateId)})`,
        nullable: true,
      };
    }
  }
}

function recordsPlan(ctx: Context): SQL {
  const { query, pack, direction } = ctx;
  const dir = sql.raw(direction);
  const sort = query.sort ? sortExpression(query.sort.column, pack) : { expression: sql`${r.createdAt}`, nullable: false };
  // Exactly the key order of an index where one exists (records_family_order, records_family_id_order),
  // so that SQLite reads the page in order instead of sorting the run.
  const byId = query.sort !== null && isColumn(query.sort.column, "id");
  const order = byId
    ? sql`${r.id} ${dir}`
    : sort.nullable
      ? sql`(${sort.expression}) IS NULL, ${sort.expression} ${dir}, ${r.id} ${dir}`
      : sql`${sort.expression} ${dir}, ${r.id} ${dir}`;
  const keyset = keysetCondition(ctx, byId ? null : sort, sql`${r.id}`);
  return sql`SELECT 0 AS "arm", ${sort.expression} AS "sort_value", ${ctx.columns} FROM ${from(r)} WHERE ${baseConditions(ctx)} AND ${keyset} AND ${residual(conjunctsOf(query.filter), pack)} ORDER BY ${order} ${pageLimit(ctx)}`;
}

// ---- text-index-driven plan ------------------------------------------------------------------

/**
 * The page from the text index's candidates (text-driver.ts, materialized once as "tcand"), each
 * checked against the whole filter (the driving leaf included), in two arms of which exactly one
 * runs (a constant test on the candidate count):
 * - few candidates (at most TEXT_CANDIDATES_READ_ALL): each is read by row key and the matches
 *   sorted, in any order but a metric's;
 * - more, in the native or id order: the run's order index is walked as the records plan walks
 *   it, and only entries among the candidates are read, so a common needle fills its page after
 *   a few hundred entries instead of reading all of its candidates. (Other orders read them all.)
 */
function textPlan(ctx: Context): SQL {
  const { query, pack, direction } = ctx;
  const dir = sql.raw(direction);
  const sort = query.sort ? sortExpression(query.sort.column, pack) : { expression: sql`${r.createdAt}`, nullable: false };
  const order = sort.nullable ? sql`(${sort.expression}) IS NULL, ${sort.expression} ${dir}, ${r.id} ${dir}` : sql`${sort.expression} ${dir}, ${r.id} ${dir}`;
  const byId = query.sort !== null && isColumn(query.sort.column, "id");
  const walkable = byId || query.sort === null || isColumn(query.sort.column, "created_at");
  const few = pack.value(TEXT_CANDIDATES_READ_ALL);
  const count = sql.raw(`(SELECT count(*) FROM "tcand")`);
  const keyset = keysetCondition(ctx, byId ? null : sort, sql`${r.id}`);
  const readAll = sql`SELECT 0 AS "arm", ${sort.expression} AS "sort_value", ${ctx.columns} FROM "tcand" CROSS JOIN ${from(r)} ON ${r.rid} = "tcand"."rid" WHERE ${walkable ? sql`${count} <= ${few} AND ` : sql``}${baseConditions(ctx)} AND ${keyset} AND ${residual(conjunctsOf(query.filter), pack)} ORDER BY ${order} ${pageLimit(ctx)}`;
  if (!walkable) return readAll;
  // The unary + keeps SQLite from driving by the candidates' row keys: the order index drives.
  // Its seek key is NULL unless there are more than `few` candidates (onlyWhen: a constant test
  // in the WHERE would be tested on every entry of the run's index, not once).
  const walk = sql`SELECT 0 AS "arm", ${sort.expression} AS "sort_value", ${ctx.columns} FROM ${from(r)} WHERE ${baseConditions(ctx, onlyWhen(sql`${count} > ${few}`, ctx.familyKey))} AND +${r.rid} IN (SELECT "rid" FROM "tcand") AND ${keyset} AND ${residual(conjunctsOf(query.filter), pack)} ORDER BY ${byId ? sql`${r.id} ${dir}` : order} ${pageLimit(ctx)}`;
  return sql`SELECT * FROM (${readAll}) UNION ALL SELECT * FROM (${walk})`;
}

// ---- side-table-driven plan (native order) ----------------------------------------------------

export interface SideDriver {
  conjunct: FilterNode;
  leaf: FilterLeaf;
}

/** A top-level leaf whose side-table index yields matches in created_at order. */
function sideDriverOf(conjuncts: readonly FilterNode[]): SideDriver | undefined {
  for (const conjunct of conjuncts) {
    const leaf = leafOf(conjunct);
    if (leaf && isRatingNumberLeaf(leaf)) return { conjunct, leaf };
    if (!leaf || leaf.kind === "fully_annotated" || leaf.kind === "tags_equal" || leaf.kind === "between") continue;
    if (leaf.kind === "compare" && leaf.operator === "eq" && leaf.caseSensitive && leaf.column.kind === "user_metadata") return { conjunct, leaf };
    if (leaf.kind === "contains" && leaf.caseSensitive && isColumn(leaf.column, "tags")) return { conjunct, leaf };
  }
  return undefined;
}

/**
 * A comparison on the number of a like_dislike, star or score rating (`annotations/<tid>` with a
 * boolean or number filter): annotation_ratings_template_order (template, family, record
 * created_at, record id, number) yields its matches in page order.
 */
function isRatingNumberLeaf(leaf: FilterLeaf): boolean {
  if (leaf.kind === "fully_annotated" || leaf.column.kind !== "annotation") return false;
  if (leaf.column.filterType !== "boolean" && leaf.column.filterType !== "number") return false;
  return (leaf.kind === "compare" && leaf.operator !== "ne") || leaf.kind === "between";
}

/** Top-level created_at ranges, repeated on the driver's own created_at so its index range narrows. */
function createdAtRanges(conjuncts: readonly FilterNode[], driverCreatedAt: unknown, pack: SqlParamPack): SQL[] {
  const ranges: SQL[] = [];
  for (const conjunct of conjuncts) {
    const leaf = leafOf(conjunct);
    if (leaf?.kind === "compare" && leaf.operator !== "ne" && isColumn(leaf.column, "created_at")) {
      ranges.push(valueTest(driverCreatedAt, leaf, pack));
    }
  }
  return ranges;
}

function sidePlan(ctx: Context, driver: SideDriver): SQL {
  const { query, pack, direction } = ctx;
  const dir = sql.raw(direction);
  const conjuncts = conjunctsOf(query.filter);
  const rest = conjuncts.filter((c) => c !== driver.conjunct);
  const { familyKey } = ctx;
  const leaf = driver.leaf as Extract<FilterLeaf, { kind: "compare" | "contains" | "between" }>;
  const side =
    leaf.column.kind === "annotation"
      ? ratingsDriver(leaf.column.templateId, leaf, familyKey, pack)
      : leaf.column.kind === "user_metadata"
        ? {
            table: from(driverMetadata),
            createdAt: sql`${driverMetadata.createdAt}`,
            recordId: sql`${driverMetadata.recordId}`,
            recordRid: sql`${driverMetadata.recordRid}`,
            match: sql`${driverMetadata.familyKey} = ${familyKey} AND ${driverMetadata.key} = ${pack.value(leaf.column.key)} AND ${driverMetadata.value} = ${pack.value((leaf as { value: string }).value)}`,
          }
        : {
            table: from(driverTags),
            createdAt: sql`${driverTags.createdAt}`,
            recordId: sql`${driverTags.recordId}`,
            recordRid: sql`${driverTags.recordRid}`,
            match: sql`${driverTags.familyKey} = ${familyKey} AND ${driverTags.tag} = ${pack.value((leaf as { value: string }).value)}`,
          };
  const ranges = createdAtRanges(conjuncts, side.createdAt, pack);
  // Balanced (balancedJoin): up to 50 range terms in a chain would pass SQLite's depth limit.
  const keyset = keysetCondition(ctx, { expression: side.createdAt, nullable: false }, side.recordId);
  const where = balancedJoin([side.match, ...ranges, keyset, baseConditions(ctx), residual(rest, pack)], "AND");
  return sql`SELECT 0 AS "arm", ${side.createdAt} AS "sort_value", ${ctx.columns} FROM ${side.table} CROSS JOIN ${from(r)} ON ${r.rid} = ${side.recordRid} WHERE ${where} ORDER BY ${side.createdAt} ${dir}, ${side.recordId} ${dir} ${pageLimit(ctx)}`;
}

/**
 * The ratings' side of a rating-number leaf: the template's ratings of the run's family whose
 * number passes the leaf, in (record created_at, record id) order from
 * annotation_ratings_template_order. "At least one rating satisfies" may hold for several
 * annotators of one record: only the matching rating of the lowest annotator id drives, so each
 * record comes once (the check is a lookup on the ratings' primary key, record then template).
 */
function ratingsDriver(templateId: string, leaf: FilterLeaf, familyKey: SQL, pack: SqlParamPack) {
  const template = pack.value(templateId);
  const number = (alias: string) => sql.raw(`"${alias}"."num_value"`);
  return {
    table: sql.raw(`"annotation_ratings" AS "da"`),
    createdAt: sql.raw(`"da"."record_created_at"`),
    recordId: sql.raw(`"da"."record_id"`),
    recordRid: sql.raw(`"da"."record_rid"`),
    match: sql`"da"."template_id" = ${template} AND "da"."family_key" = ${familyKey} AND ${number("da")} IS NOT NULL AND ${valueTest(number("da"), leaf, pack)} AND NOT EXISTS (SELECT 1 FROM "annotation_ratings" AS "dx" WHERE "dx"."record_rid" = "da"."record_rid" AND "dx"."template_id" = ${template} AND "dx"."annotator_id" < "da"."annotator_id" AND ${number("dx")} IS NOT NULL AND ${valueTest(number("dx"), leaf, pack)})`,
  };
}

// ---- metric-sort plan ---------------------------------------------------------------------------

function metricPlan(ctx: Context, name: string): { with: SQL; inner: SQL } {
  const { query, pack, direction } = ctx;
  const dir = sql.raw(direction);
  const conjuncts = conjunctsOf(query.filter);
  // Top-level leaves on the sorted metric become ranges of the driving index; any of them also
  // proves the record has the metric, so the arm of records without it is then empty.
  const onMetric = (node: FilterNode) => {
    const leaf = leafOf(node);
    return leaf !== undefined && leaf.kind !== "fully_annotated" && leaf.column.kind === "metric" && leaf.column.name === name;
  };
  const ranges = conjuncts.filter(onMetric).map((node) => valueTest(driverMetrics.value, leafOf(node)!, pack));
  const rest = residual(conjuncts.filter((c) => !onMetric(c)), pack);
  const metricName = pack.value(name);
  const { familyKey } = ctx;
  const key = sql`(SELECT ${metricKey.key} FROM ${from(metricKey)} WHERE ${metricKey.familyKey} = ${familyKey} AND ${metricKey.name} = ${metricName})`;
  // The keyset on the driving index's own (value, record_id); past the records with the metric
  // (a null value), this arm is empty and the second continues by id.
  const afterNull = query.after != null && query.after.value === null;
  const keyset = afterNull ? sql.raw("0") : keysetCondition(ctx, { expression: sql`${driverMetrics.value}`, nullable: false }, sql`${driverMetrics.recordId}`);
  const withMetric = sql`${from(driverMetrics)} CROSS JOIN ${from(r)} ON ${r.rid} = ${driverMetrics.recordRid} WHERE ${balancedJoin([sql`${driverMetrics.metricKey} = ${key}`, ...ranges, keyset, baseConditions(ctx), rest], "AND")}`;
  const firstArm = sql`SELECT 0 AS "arm", ${driverMetrics.value} AS "sort_value", ${ctx.columns} FROM ${withMetric} ORDER BY ${driverMetrics.value} ${dir}, ${driverMetrics.recordId} ${dir} ${pageLimit(ctx)}`;
  if (ranges.length > 0) return { with: sql``, inner: firstArm };

  // Rows of the first arm up to the end of this page (bounded: it stops at offset + limit + 1).
  const pageEnd = pack.value(query.offset + query.limit + 1);
  const offset = pack.value(query.offset);
  const counted = sql`WITH "arm1_count"("n") AS (SELECT count(*) FROM (SELECT 1 FROM ${withMetric} LIMIT ${pageEnd})) `;
  const firstArmRows = sql.raw(`(SELECT "n" FROM "arm1_count")`);
  const withoutMetric = sql`NOT EXISTS (${recordMetricRows(metricName)})`;
  // LIMIT 0 when the first arm fills the page: SQLite then never starts the second arm's scan.
  const secondKeyset = afterNull ? keysetCondition(ctx, null, sql`${r.id}`) : sql.raw("1");
  const secondArm = sql`SELECT 1 AS "arm", NULL AS "sort_value", ${ctx.columns} FROM ${from(r)} WHERE ${baseConditions(ctx)} AND ${secondKeyset} AND ${withoutMetric} AND ${rest} ORDER BY ${r.id} ${dir} LIMIT max(0, ${pageEnd} - max(${firstArmRows}, ${offset})) OFFSET max(0, ${offset} - ${firstArmRows})`;
  return { with: counted, inner: sql`SELECT * FROM (${firstArm}) UNION ALL SELECT * FROM (${secondArm})` };
}

// ---- which plan ---------------------------------------------------------------------------------

/**
 * The table whose index drives the statement: record_metrics for a metric sort, a side table's
 * index for a top-level metadata `eq` or tag `contains` in native order, else records (whose
 * index SQLite picks). search-cost.ts classifies a search by this same choice.
 */
export type AccessPath = { kind: "metric"; name: string } | { kind: "side"; driver: SideDriver } | { kind: "records"; nativeOrder: boolean };

export function accessPathOf(query: SearchQuery): AccessPath {
  const sortColumn = query.sort?.column;
  if (sortColumn?.kind === "metric") return { kind: "metric", name: sortColumn.name };
  const nativeOrder = !sortColumn || isColumn(sortColumn, "created_at");
  const driver = nativeOrder ? sideDriverOf(conjunctsOf(query.filter)) : undefined;
  return driver ? { kind: "side", driver } : { kind: "records", nativeOrder };
}

// ---- the statement ------------------------------------------------------------------------------

/**
 * The child count of `include_counts` for a record of `family` whose id is `parentId`, and the
 * field it fills (none for spans).
 */
export function childCount(family: SearchQuery["family"], scope: SearchScope, pack: SqlParamPack, parentId: SQL): { expression: SQL; name: string } | undefined {
  if (family === "span") return undefined;
  const [parentColumn, childFamily, name] =
    family === "trace" ? ([child.traceId, "span", "num_spans"] as const) : ([child.sessionId, "trace", "num_traces"] as const);
  // Children of the same run only: a record of another run cannot be counted by naming this id.
  return {
    expression: sql`(SELECT count(*) FROM ${from(child)} WHERE ${parentColumn} = ${parentId} AND ${child.recordType} = ${pack.value(childFamily)} AND ${child.runId} = ${pack.value(scope.runId)})`,
    name,
  };
}

function countColumns(ctx: Context): SQL {
  const count = ctx.query.includeCounts ? childCount(ctx.query.family, ctx.scope, ctx.pack, sql.raw(`"page"."id"`)) : undefined;
  return count ? sql`, ${count.expression} AS ${sql.identifier(count.name)}` : sql``;
}

/**
 * Select lists rendered once per set of columns: rendering ~45 aliased columns through drizzle
 * is most of the cost of compiling a statement, and a few projections cover nearly all requests.
 * The text holds only catalogue column names, quoted by drizzle.
 */
const SELECT_LISTS = new Map<string, SQL>();
const MAX_SELECT_LISTS = 256;

export function selectList(names: readonly string[]): SQL {
  const key = names.join(",");
  let list = SELECT_LISTS.get(key);
  if (!list) {
    const columns = names.map((name) => sql`${recordColumn(name)} AS ${sql.identifier(name)}`);
    list = sql.raw(dialect.sqlToQuery(sql.join(columns, sql.raw(", "))).sql);
    if (SELECT_LISTS.size >= MAX_SELECT_LISTS) SELECT_LISTS.clear();
    SELECT_LISTS.set(key, list);
  }
  return list;
}

/** Columns that may hold large text, whose bytes count against SEARCH_LIMITS.maxPageBytes. */
const TEXT_COLUMNS = new Set([
  "name", "input", "output", "redacted_input", "redacted_output", "external_id", "dataset_input", "dataset_output",
  "dataset_metadata", "error_message", "progress_message", "user_metadata", "tags", "metrics", "metric_info",
  "feedback_rating_info", "model", "finish_reason", "tools", "events", "tool_call_id", "agent_name", "evaluator_name",
  "selector_path",
]);

/** Fields `truncate_fields` cuts to SEARCH_LIMITS.truncatedFieldLength characters (4 bytes each at most). */
const TRUNCATED_COLUMNS = new Set(["input", "output", "redacted_input", "redacted_output"]);

/** SQL: the bytes of the record's selected text (`"r"`), as the answer will carry them (at most). */
export function rowBytes(names: readonly string[], query: SearchQuery): SQL {
  const terms = names
    .filter((name) => TEXT_COLUMNS.has(name))
    .map((name) => {
      const bytes = `coalesce(length(CAST("r"."${name}" AS BLOB)), 0)`;
      return query.truncateFields && TRUNCATED_COLUMNS.has(name) ? `min(${bytes}, ${4 * SEARCH_LIMITS.truncatedFieldLength})` : bytes;
    });
  return sql.raw(terms.length === 0 ? "0" : terms.join(" + "));
}

/** The text index's driver of this search under these options, if it has one. */
export function usableTextDriver(query: SearchQuery, options: CompileOptions): TextDriver | undefined {
  if (options.textIndexBound === null || query.sort?.column.kind === "metric") return undefined;
  return textDriverOf(query);
}

export function compileSearchQuery(query: SearchQuery, scope: SearchScope, options: CompileOptions = { textIndexBound: null }): CompiledSearch {
  const pack = new SqlParamPack();
  const ascending = query.sort?.ascending ?? false;
  const names = storageNeeded(query);
  const ctx: Context = {
    query,
    scope,
    pack,
    direction: ascending ? "ASC" : "DESC",
    columns: sql`${r.rid} AS "rid", ${r.id} AS "id", ${rowBytes(names, query)} AS "_row_bytes"`,
    familyKey: familyKeyOf(pack.value(scope.runId), pack.value(query.family)),
  };
  const path = accessPathOf(query);
  let prefix = sql``;
  let inner: SQL;
  const textDriver = usableTextDriver(query, options);
  let candidateCount: SQL | undefined;
  if (textDriver) {
    const candidates = textCandidates(textDriver, ctx.familyKey, pack, options.textIndexBound!);
    // Built before the page is rendered: its values go in the one parameter both share.
    candidateCount = textCandidateCount(textDriver, ctx.familyKey, pack, options.textIndexBound!, options.lagScanMax ?? Number.MAX_SAFE_INTEGER - 1);
    prefix = sql`WITH "tcand"("rid") AS MATERIALIZED (${candidates}) `;
    inner = textPlan(ctx);
  } else if (path.kind === "metric") {
    const plan = metricPlan(ctx, path.name);
    prefix = plan.with;
    inner = plan.inner;
  } else {
    inner = path.kind === "side" ? sidePlan(ctx, path.driver) : recordsPlan(ctx);
  }
  // The page is re-sorted outside (at most limit + 1 rows): a subquery's order is not guaranteed.
  const order = (table: string) => sql.raw(`"${table}"."arm", "${table}"."sort_value" IS NULL, "${table}"."sort_value" ${ctx.direction}, "${table}"."id" ${ctx.direction}`);
  // The byte budget: each row knows the bytes of the rows before it in page order, and the page
  // keeps the rows that start within SEARCH_LIMITS.maxPageBytes (the first one always). How
  // many rows were read (`_rows_read`) tells the caller whether the budget cut the page.
  // The window runs over the arms' narrow rows (key, id, bytes): over the full rows, its
  // buffering copied every page's text twice more and cost 2.5 ms against 1.3 ms this way
  // (first page at 1,000,000 records). The stored columns are then read by rowid.
  const budgeted = sql`SELECT *, sum("_row_bytes") OVER (ORDER BY ${order("arms")} ROWS UNBOUNDED PRECEDING) AS "_bytes_through", count(*) OVER () AS "_rows_read" FROM (${inner}) AS "arms"`;
  // The record's ratings with live templates (served by the ratings' primary key), for the
  // feedback fields (src/annotations/record-feedback.ts).
  const ratings = query.projection.feedback ? sql.raw(`, ${ratingsJsonSql(`"page"."rid"`)} AS "${RATINGS_COLUMN}"`) : sql``;
  const statement = sql`${prefix}SELECT "page"."arm", "page"."sort_value", ${selectList(names)}${countColumns(ctx)}${ratings}, "page"."_row_bytes", "page"."_bytes_through", "page"."_rows_read" FROM (${budgeted}) AS "page" CROSS JOIN ${from(r)} ON ${r.rid} = "page"."rid" WHERE "page"."_bytes_through" - "page"."_row_bytes" < ${pack.value(SEARCH_LIMITS.maxPageBytes)} ORDER BY ${order("page")}`;
  const compiled: CompiledSearch = { sql: dialect.sqlToQuery(statement).sql, params: [pack.toParameter()] };
  if (candidateCount) {
    // Rendered after the page so that both share the one parameter (the pack is complete).
    compiled.candidateCount = { sql: dialect.sqlToQuery(candidateCount).sql, params: compiled.params };
  }
  return compiled;
}
