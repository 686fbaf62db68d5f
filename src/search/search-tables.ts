/**
 * The table aliases every search statement uses, typed from the drizzle schema, and the one
 * place a catalogue `storage` name becomes a column of `records`.
 */
import { type AnyColumn, getTableColumns, type SQL, sql } from "drizzle-orm";
import { alias, type SQLiteTable } from "drizzle-orm/sqlite-core";
import { metricKeys, recordMetadata, recordMetrics, records, recordTags, runFamilies, runs } from "../db/schema";

/** The searched record. */
export const r = alias(records, "r");
/** Per-leaf subqueries on the side tables (correlated with `r`). */
export const leafTags = alias(recordTags, "lt");
export const leafMetadata = alias(recordMetadata, "lm");
/** Side tables that drive a whole page (docs/search.md, "Query plans"). */
export const driverTags = alias(recordTags, "dt");
export const driverMetadata = alias(recordMetadata, "dd");
export const driverMetrics = alias(recordMetrics, "dm");
/** The key of the sorted metric's name in the run's family. */
export const metricKey = alias(metricKeys, "mk");
/** The searched run's family. */
export const family = alias(runFamilies, "f");
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
  [driverMetrics, recordMetrics],
  [metricKey, metricKeys],
  [family, runFamilies],
  [guardRun, runs],
]);

/** `"table" AS "alias"` for a FROM clause (an alias alone renders as its bare name). */
export function from(aliased: SQLiteTable): SQL {
  const table = TABLE_OF_ALIAS.get(aliased);
  if (!table) throw new Error("unknown search table alias");
  return sql`${table} AS ${aliased}`;
}

/**
 * The family key of a run's family (both bound parameters), as a constant subquery: SQLite runs
 * it once and uses its value as the equality at the head of a family-ordered index
 * (records_family_*, record_metadata_family_key_value_order, record_tags_family_tag_order). No
 * row (a run that never had one): NULL, which matches nothing.
 */
export function familyKeyOf(runId: SQL, recordType: SQL): SQL {
  return sql`(SELECT ${family.key} FROM ${from(family)} WHERE ${family.runId} = ${runId} AND ${family.recordType} = ${recordType})`;
}

/**
 * `EXISTS`-ready rows of r's metric `name` (a bound parameter) as `"lx"."value"`, read from the
 * record's own `metrics` JSON (the row is at hand: no probe of another table, and record_metrics
 * has no key by record). Numbers only, as in record_metrics.
 */
export function recordMetricRows(name: SQL): SQL {
  return sql`SELECT 1 FROM json_each(${r.metrics}) AS "lx" WHERE "lx"."key" = ${name} AND "lx"."type" IN ('integer', 'real')`;
}

/** The value column of recordMetricRows. */
export const RECORD_METRIC_VALUE = sql.raw(`"lx"."value"`);

const RECORD_COLUMNS_BY_NAME = new Map<string, AnyColumn>(Object.values(getTableColumns(r)).map((c) => [c.name, c]));

/** The column of `r` stored under a catalogue `storage` name. */
export function recordColumn(storage: string): AnyColumn {
  const column = RECORD_COLUMNS_BY_NAME.get(storage);
  if (!column) throw new Error(`column catalogue names unknown storage '${storage}'`);
  return column;
}
