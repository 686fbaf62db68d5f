/**
 * The export's own statements below a page of roots (the roots themselves are read by the
 * search's page statement, export-reader.ts):
 *
 * - the outline of the roots' descendants: for each, its row key, id, parent key, created_at and
 *   bytes (no stored text), found by records_session (session_id, record_type) or records_trace
 *   (trace_id, record_type) and sorted by (created_at, id). `+family_key` keeps SQLite off
 *   records_family_order: walking the run's family in created_at order to find a page's
 *   descendants reads the whole run, a cost that grew with the run (0.055x the shell at
 *   1,000,000 records against 0.12x at 100,000);
 * - the full rows of a list of row keys, in that list's order (a row-key lookup each).
 *
 * Both are confined to the run's family of the kind they read and carry the run's ownership
 * guard, as every search statement does. The only bound parameter is the value pack.
 */
import { sql } from "drizzle-orm";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import type { RecordFamily } from "../columns/standard-columns";
import { compileFilter } from "../search/compile-filter-tree";
import { type CompiledStatement, type SearchScope, childCount, rowBytes, runOwnedBy, selectList } from "../search/compile-search-query";
import { familyKeyOf, from, r } from "../search/search-tables";
import type { FilterNode, SearchQuery } from "../search/search-query";
import { storageNeeded } from "../search/shape-record";
import { SqlParamPack } from "../search/sql-param-pack";

const dialect = new SQLiteAsyncDialect();

/** One descendant in the outline. */
export interface OutlineRow {
  rid: number;
  id: string;
  /** The session id of a trace, the parent id of a span (a top-level span's is its trace). */
  parent: string | null;
  created_at: number;
  /** The bytes of its stored text (as the search's byte budget counts them). */
  _row_bytes: number;
  /** Span roots only: 1 when the descendant matches the export's filter itself. */
  matching?: number;
}

/**
 * The outline of the records of `family` whose `by` column (session_id or trace_id) is one of
 * `parents`, oldest first (ties by id). With `matching`, each row also says whether it passes
 * that filter (the export's, for span roots).
 */
export function outlineStatement(
  base: SearchQuery,
  scope: SearchScope,
  family: "trace" | "span",
  by: "session_id" | "trace_id",
  parents: readonly string[],
  matching?: FilterNode,
): CompiledStatement {
  const pack = new SqlParamPack();
  const query: SearchQuery = { ...base, family };
  const familyKey = familyKeyOf(pack.value(scope.runId), pack.value(family));
  const byColumn = by === "session_id" ? r.sessionId : r.traceId;
  const parentColumn = family === "trace" ? r.sessionId : r.parentId;
  const matches = matching ? sql`, (${compileFilter(matching, pack)}) AS "matching"` : sql``;
  const statement = sql`SELECT ${r.rid} AS "rid", ${r.id} AS "id", ${parentColumn} AS "parent", ${r.createdAt} AS "created_at", ${rowBytes(storageNeeded(query), query)} AS "_row_bytes"${matches} FROM ${from(r)} WHERE ${byColumn} IN (SELECT "value" FROM json_each(${pack.list(parents)})) AND ${r.recordType} = ${pack.value(family)} AND +${r.familyKey} = ${familyKey} AND ${runOwnedBy(scope, pack)} ORDER BY ${r.createdAt}, ${r.id}`;
  return { sql: dialect.sqlToQuery(statement).sql, params: [pack.toParameter()] };
}

/**
 * The rows of `rids` (records of the scope's run, of one of `families`), with every column their
 * records are shaped from (the union of the families' columns: shaping reads only its kind's)
 * and the child count of each trace, in the order of `rids`.
 */
export function rowsStatement(base: SearchQuery, scope: SearchScope, families: readonly RecordFamily[], rids: readonly number[]): CompiledStatement {
  const pack = new SqlParamPack();
  const names = [...new Set(families.flatMap((family) => storageNeeded({ ...base, family })))];
  const keys = families.map((family) => familyKeyOf(pack.value(scope.runId), pack.value(family)));
  const counts = families.flatMap((family) => {
    const count = base.includeCounts ? childCount(family, scope, pack, sql`${r.id}`) : undefined;
    // Only the records of that family carry its count (a span's would be an index probe for nothing).
    return count ? [sql`, CASE WHEN ${r.recordType} = ${pack.value(family)} THEN ${count.expression} END AS ${sql.identifier(count.name)}`] : [];
  });
  const statement = sql`SELECT ${r.rid} AS "rid", ${selectList(names)}${sql.join(counts)} FROM json_each(${pack.list(rids)}) AS "k" CROSS JOIN ${from(r)} ON ${r.rid} = "k"."value" WHERE ${r.familyKey} IN (${sql.join(keys, sql.raw(", "))}) AND ${runOwnedBy(scope, pack)} ORDER BY "k"."key"`;
  return { sql: dialect.sqlToQuery(statement).sql, params: [pack.toParameter()] };
}
