/**
 * The table aliases every search statement uses, typed from the drizzle schema, and the one
 * place a catalogue `storage` name becomes a column of `records`.
 */
import { type AnyColumn, getTableColumns, type SQL, sql } from "drizzle-orm";
import { alias, type SQLiteTable } from "drizzle-orm/sqlite-core";
import { recordMetadata, recordMetrics, records, recordTags, runs } from "../db/schema";

/** The searched record. */
export const r = alias(records, "r");
/** Per-leaf subqueries on the side tables (correlated with `r`). */
export const leafTags = alias(recordTags, "lt");
export const leafMetadata = alias(recordMetadata, "lm");
export const leafMetrics = alias(recordMetrics, "lx");
/** Side tables that drive a whole page (docs/search.md, "Query plans"). */
export const driverTags = alias(recordTags, "dt");
export const driverMetadata = alias(recordMetadata, "dd");
export const driverMetrics = alias(recordMetrics, "dm");
/** Child records counted for `include_counts`. */
export const child = alias(records, "c");
/** The run, for the ownership guard inside every page statement. */
export const guardRun = alias(runs, "g");

const TABLE_OF_ALIAS = new Map<SQLiteTable, SQLiteTable>([
  [r, records],
  [child, records],
  [leafTags, recordTags],
  [driverTags, recordTags],
  [leafMetadata, recordMetadata],
  [driverMetadata, recordMetadata],
  [leafMetrics, recordMetrics],
  [driverMetrics, recordMetrics],
  [guardRun, runs],
]);

/** `"table" AS "alias"` for a FROM clause (an alias alone renders as its bare name). */
export function from(aliased: SQLiteTable): SQL {
  const table = TABLE_OF_ALIAS.get(aliased);
  if (!table) throw new Error("unknown search table alias");
  return sql`${table} AS ${aliased}`;
}

const RECORD_COLUMNS_BY_NAME = new Map<string, AnyColumn>(Object.values(getTableColumns(r)).map((c) => [c.name, c]));

/** The column of `r` stored under a catalogue `storage` name. */
export function recordColumn(storage: string): AnyColumn {
  const column = RECORD_COLUMNS_BY_NAME.get(storage);
  if (!column) throw new Error(`column catalogue names unknown storage '${storage}'`);
  return column;
}
