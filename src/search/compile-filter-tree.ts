/**
 * Filter tree -> SQL boolean expression over the record alias `r`.
 *
 * Two-valued logic: every leaf compiles to an expression that is 0 or 1, never NULL. A leaf on a
 * column the record has no value for is 0 (`ne` and `not_in` included), so `NOT` of it is 1, and
 * AND / OR / NOT of such expressions are never NULL either. Nullable columns are guarded with
 * `col IS NOT NULL AND ...`; values kept in side tables are tested with EXISTS, which is 0 or 1
 * by nature. The guard is a plain AND term, so at the top level of the WHERE clause SQLite still
 * uses `col = ?` (and range terms) on an index.
 *
 * Substring tests use instr() (D1 caps LIKE patterns at 50 bytes, and LIKE would give `%` and
 * `_` in the user's text a meaning). Case-insensitive tests lower() both sides: SQLite folds
 * ASCII letters only.
 */
import { type SQL, sql } from "drizzle-orm";
import type { AnnotationColumnRef, ColumnRef } from "./search-columns";
import type { CompareOperator, FilterLeaf, FilterNode } from "./search-query";
import type { SqlParamPack } from "./sql-param-pack";
import { from, leafMetadata, leafTags, r, RECORD_METRIC_VALUE, recordColumn, recordMetricRows } from "./search-tables";

const COMPARISON: Record<CompareOperator, SQL> = {
  eq: sql.raw("="),
  ne: sql.raw("<>"),
  gt: sql.raw(">"),
  gte: sql.raw(">="),
  lt: sql.raw("<"),
  lte: sql.raw("<="),
};

/**
 * The value of a dataset metadata entry (a `json_each` row aliased "lj") as text; NULL, that is
 * no value, for null, objects and arrays.
 */
export const DATASET_ENTRY_TEXT = sql.raw(
  `(CASE "lj"."type" WHEN 'text' THEN "lj"."value" WHEN 'integer' THEN CAST("lj"."value" AS TEXT) WHEN 'real' THEN CAST("lj"."value" AS TEXT) WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' END)`,
);

function folded(expression: SQL | SQL.Aliased | unknown, caseSensitive: boolean): SQL {
  return caseSensitive ? sql`${expression}` : sql`lower(${expression})`;
}

/** An element of a list value, read from `json_each(list) AS "je"`. */
function listElement(caseSensitive: boolean): SQL {
  return sql.raw(caseSensitive ? `"je"."value"` : `lower("je"."value")`);
}

/** `expr [NOT] IN (list)`, folding both sides when case-insensitive. */
function inList(expression: unknown, negated: boolean, list: SQL, caseSensitive: boolean): SQL {
  return sql`${folded(expression, caseSensitive)} ${sql.raw(negated ? "NOT IN" : "IN")} (SELECT ${listElement(caseSensitive)} FROM json_each(${list}) AS "je")`;
}

/**
 * A test of one present value (a column, a metadata value, a metric value) against the leaf:
 * callers guard for absence.
 */
export function valueTest(expression: unknown, leaf: FilterLeaf, pack: SqlParamPack): SQL {
  switch (leaf.kind) {
    case "compare": {
      const value = pack.value(leaf.value);
      return sql`${folded(expression, leaf.caseSensitive)} ${COMPARISON[leaf.operator]} ${folded(value, leaf.caseSensitive)}`;
    }
    case "contains":
      return sql`instr(${folded(expression, leaf.caseSensitive)}, ${folded(pack.value(leaf.value), leaf.caseSensitive)}) > 0`;
    case "in":
      return inList(expression, leaf.negated, pack.list(leaf.values), leaf.caseSensitive);
    case "between":
      return sql`${expression} BETWEEN ${pack.value(leaf.low)} AND ${pack.value(leaf.high)}`;
    default:
      throw new Error(`leaf ${leaf.kind} has no value test`);
  }
}

function standardLeaf(column: Extract<ColumnRef, { kind: "standard" }>, leaf: FilterLeaf, pack: SqlParamPack): SQL {
  if (column.column.filter_type === "collection") return tagsLeaf(leaf, pack);
  const expression = recordColumn(column.storage);
  const test = valueTest(expression, leaf, pack);
  return column.nullable ? sql`(${expression} IS NOT NULL AND ${test})` : sql`(${test})`;
}

/** The tag list is never missing: a record without tags has the empty list. */
function tagsLeaf(leaf: FilterLeaf, pack: SqlParamPack): SQL {
  const ofRecord = sql`${leafTags.recordRid} = ${r.rid}`;
  switch (leaf.kind) {
    case "contains":
      return sql`EXISTS (SELECT 1 FROM ${from(leafTags)} WHERE ${ofRecord} AND ${folded(leafTags.tag, leaf.caseSensitive)} = ${folded(pack.value(leaf.value), leaf.caseSensitive)})`;
    case "in": {
      const test = inList(leafTags.tag, false, pack.list(leaf.values), leaf.caseSensitive);
      return sql`${sql.raw(leaf.negated ? "NOT EXISTS" : "EXISTS")} (SELECT 1 FROM ${from(leafTags)} WHERE ${ofRecord} AND ${test})`;
    }
    case "tags_equal": {
      const list = pack.list(leaf.values);
      return sql`((SELECT count(DISTINCT ${folded(leafTags.tag, leaf.caseSensitive)}) FROM ${from(leafTags)} WHERE ${ofRecord}) = (SELECT count(DISTINCT ${listElement(leaf.caseSensitive)}) FROM json_each(${list}) AS "je") AND NOT EXISTS (SELECT 1 FROM ${from(leafTags)} WHERE ${ofRecord} AND ${inList(leafTags.tag, true, list, leaf.caseSensitive)}))`;
    }
    default:
      throw new Error(`leaf ${leaf.kind} does not apply to tags`);
  }
}

/** The rating rows of the record on one template (the ratings' primary key: record, template). */
export function ratingRows(templateId: string, pack: SqlParamPack, alias = "la"): SQL {
  return sql`SELECT 1 FROM "annotation_ratings" AS ${sql.identifier(alias)} WHERE ${sql.identifier(alias)}."record_rid" = ${r.rid} AND ${sql.identifier(alias)}."template_id" = ${pack.value(templateId)}`;
}

/**
 * "At least one rating satisfies the leaf" (contract section 8): like_dislike, star and score
 * compare the rating's number; choice, tree_choice and text its string; tags test the rating's
 * list like the record tags are tested (contains, has any of, has none of, equals). A record
 * without a rating on the template matches no leaf.
 */
function annotationLeaf(column: AnnotationColumnRef, leaf: Exclude<FilterLeaf, { kind: "fully_annotated" }>, pack: SqlParamPack): SQL {
  const rows = ratingRows(column.templateId, pack);
  switch (column.filterType) {
    case "boolean":
    case "number":
      return sql`EXISTS (${rows} AND "la"."num_value" IS NOT NULL AND ${valueTest(sql.raw(`"la"."num_value"`), leaf, pack)})`;
    case "collection": {
      const element = sql.raw(`"lv"."value"`);
      const values = sql.raw(`json_each("la"."value") AS "lv"`);
      switch (leaf.kind) {
        case "contains":
          return sql`EXISTS (${rows} AND EXISTS (SELECT 1 FROM ${values} WHERE ${folded(element, leaf.caseSensitive)} = ${folded(pack.value(leaf.value), leaf.caseSensitive)}))`;
        case "in": {
          const test = inList(element, false, pack.list(leaf.values), leaf.caseSensitive);
          return sql`EXISTS (${rows} AND ${sql.raw(leaf.negated ? "NOT EXISTS" : "EXISTS")} (SELECT 1 FROM ${values} WHERE ${test}))`;
        }
        case "tags_equal": {
          const list = pack.list(leaf.values);
          return sql`EXISTS (${rows} AND (SELECT count(DISTINCT ${folded(element, leaf.caseSensitive)}) FROM ${values}) = (SELECT count(DISTINCT ${listElement(leaf.caseSensitive)}) FROM json_each(${list}) AS "je") AND NOT EXISTS (SELECT 1 FROM ${values} WHERE ${inList(element, true, list, leaf.caseSensitive)}))`;
        }
        default:
          throw new Error(`leaf ${leaf.kind} does not apply to a tags template`);
      }
    }
    default:
      return sql`EXISTS (${rows} AND ${valueTest(sql.raw(`json_extract("la"."value", '$')`), leaf, pack)})`;
  }
}

/**
 * Rated on every live template of the project (by each of the users, or by anyone): no live
 * template lacks such a rating, and there is at least one template.
 */
function fullyAnnotatedLeaf(leaf: Extract<FilterLeaf, { kind: "fully_annotated" }>, pack: SqlParamPack): SQL {
  if (leaf.queue) return queueFullyAnnotatedLeaf(leaf.queue, leaf.userIds, pack);
  if (leaf.projectId === undefined) throw new Error("fully_annotated leaf without its project (bindAnnotationColumns)");
  const users = leaf.userIds ? sql`, json_each(${pack.list(leaf.userIds)}) AS "fau"` : sql``;
  const byUser = leaf.userIds ? sql` AND "faa"."annotator_id" = "fau"."value"` : sql``;
  if (leaf.liveTemplateIds) {
    // The live templates as read on the project's shard (bindAnnotationColumns): the same test on
    // every shard holding a partition, including those without the project's templates.
    if (leaf.liveTemplateIds.length === 0) return sql.raw("0");
    const missing = sql`SELECT 1 FROM json_each(${pack.list(leaf.liveTemplateIds)}) AS "flt"${users} WHERE NOT EXISTS (SELECT 1 FROM "annotation_ratings" AS "faa" WHERE "faa"."record_rid" = ${r.rid} AND "faa"."template_id" = "flt"."value"${byUser})`;
    return sql`(NOT EXISTS (${missing}))`;
  }
  const project = pack.value(leaf.projectId);
  const templates = sql`"annotation_templates" AS "fat" WHERE "fat"."project_id" = ${project} AND "fat"."deleted_at" IS NULL`;
  const missing = sql`SELECT 1 FROM "annotation_templates" AS "fat"${users} WHERE "fat"."project_id" = ${project} AND "fat"."deleted_at" IS NULL AND NOT EXISTS (SELECT 1 FROM "annotation_ratings" AS "faa" WHERE "faa"."record_rid" = ${r.rid} AND "faa"."template_id" = "fat"."id"${byUser})`;
  return sql`(EXISTS (SELECT 1 FROM ${templates}) AND NOT EXISTS (${missing}))`;
}

/**
 * In a queue's search: no (queue template, annotator) pair lacks a rating of the record, the
 * annotators being `userIds` or else the queue's; false when the queue has no template or no
 * annotator (nothing can be fully annotated there).
 */
function queueFullyAnnotatedLeaf(queue: { templateIds: string[]; annotatorIds: string[] }, userIds: string[] | null, pack: SqlParamPack): SQL {
  const annotators = userIds ?? queue.annotatorIds;
  if (queue.templateIds.length === 0 || annotators.length === 0) return sql.raw("0");
  const missing = sql`SELECT 1 FROM json_each(${pack.list(queue.templateIds)}) AS "fqt", json_each(${pack.list(annotators)}) AS "fqu" WHERE NOT EXISTS (SELECT 1 FROM "annotation_ratings" AS "fqa" WHERE "fqa"."record_rid" = ${r.rid} AND "fqa"."template_id" = "fqt"."value" AND "fqa"."annotator_id" = "fqu"."value")`;
  return sql`(NOT EXISTS (${missing}))`;
}

function columnLeaf(leaf: Exclude<FilterLeaf, { kind: "fully_annotated" }>, pack: SqlParamPack): SQL {
  const { column } = leaf;
  switch (column.kind) {
    case "standard":
      return standardLeaf(column, leaf, pack);
    case "metric":
      return sql`EXISTS (${recordMetricRows(pack.value(column.name))} AND ${valueTest(RECORD_METRIC_VALUE, leaf, pack)})`;
    case "user_metadata":
      return sql`EXISTS (SELECT 1 FROM ${from(leafMetadata)} WHERE ${leafMetadata.recordRid} = ${r.rid} AND ${leafMetadata.key} = ${pack.value(column.key)} AND ${valueTest(leafMetadata.value, leaf, pack)})`;
    case "annotation":
      return annotationLeaf(column, leaf, pack);
    case "dataset_metadata":
      // A NULL entry text makes every test NULL, so the row does not satisfy the EXISTS.
      return sql`EXISTS (SELECT 1 FROM json_each(${r.datasetMetadata}) AS "lj" WHERE "lj"."key" = ${pack.value(column.key)} AND ${valueTest(DATASET_ENTRY_TEXT, leaf, pack)})`;
  }
}

function compileLeaf(leaf: FilterLeaf, pack: SqlParamPack): SQL {
  return leaf.kind === "fully_annotated" ? fullyAnnotatedLeaf(leaf, pack) : columnLeaf(leaf, pack);
}

/**
 * `a OP b OP c ...` as a balanced tree of parenthesised halves. SQLite's parser nests a chain of
 * binary operators one level per operator, and refuses an expression deeper than 100 levels
 * ("Expression tree is too large"): an `or` of 30 leaves written as a chain, each leaf a few
 * levels deep, passed it (issue 30). Balanced, n operands cost ceil(log2 n) levels, so every tree
 * the body caps allow (docs/search.md, "Limits") stays far below the limit. AND, OR and `||` are
 * associative, so the grouping changes nothing but the depth; SQLite still splits a balanced AND
 * into its terms for the planner (every conjunct can drive an index as before).
 */
export function balancedJoin(parts: readonly SQL[], operator: "AND" | "OR" | "||"): SQL {
  if (parts.length === 0) throw new Error("balancedJoin of nothing");
  if (parts.length === 1) return parts[0]!;
  const middle = Math.ceil(parts.length / 2);
  return sql`(${balancedJoin(parts.slice(0, middle), operator)} ${sql.raw(operator)} ${balancedJoin(parts.slice(middle), operator)})`;
}

/** The filter as a 0/1 expression over `r`. An empty AND is 1, an empty OR is 0. */
export function compileFilter(node: FilterNode, pack: SqlParamPack): SQL {
  switch (node.kind) {
    case "leaf":
      return compileLeaf(node.leaf, pack);
    case "not":
      return sql`(NOT ${compileFilter(node.child, pack)})`;
    case "and":
      if (node.children.length === 0) return sql.raw("1");
      return sql`(${balancedJoin(node.children.map((c) => compileFilter(c, pack)), "AND")})`;
    case "or":
      if (node.children.length === 0) return sql.raw("0");
      return sql`(${balancedJoin(node.children.map((c) => compileFilter(c, pack)), "OR")})`;
  }
}

/** The top-level conjuncts of a filter: nested ANDs flattened, so each can drive a plan. */
export function conjunctsOf(node: FilterNode): FilterNode[] {
  return node.kind === "and" ? node.children.flatMap(conjunctsOf) : [node];
}
