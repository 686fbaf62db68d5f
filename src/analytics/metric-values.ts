/**
 * What can be aggregated and grouped by (contract, section 9), as SQL over the record alias `r`:
 * a metric of the record's `metrics` (numbers only, as the metric rows hold them), a number or
 * boolean standard column, and the group columns. Unknown names are 422s naming the field.
 */
import { sql } from "drizzle-orm";
import { isKnownMetric } from "../columns/metric-catalogue";
import { appliesToFamily, type RecordFamily, STANDARD_COLUMNS } from "../columns/standard-columns";
import { RequestValidationError } from "../http/errors";
import type { GroupSpec, ValueExpression } from "./aggregate-records";

/** A metric's value on the record, or NULL. */
export const metricValue = (name: string): ValueExpression => (pack) =>
  sql`(SELECT "lx"."value" FROM json_each("r"."metrics") AS "lx" WHERE "lx"."key" = ${pack.value(name)} AND "lx"."type" IN ('integer', 'real'))`;

const columnValue = (storage: string): ValueExpression => () => sql.raw(`"r"."${storage}"`);

/** Number and boolean standard columns of a family (booleans as 0 / 1). */
function numericColumns(family: RecordFamily) {
  return STANDARD_COLUMNS.filter((c) => (c.filter_type === "number" || c.filter_type === "boolean") && appliesToFamily(c, family));
}

function fault(loc: (string | number)[], msg: string, input: unknown): RequestValidationError {
  return new RequestValidationError([{ loc, msg: `Value error, ${msg}`, type: "value_error", input, ctx: { error: msg } }]);
}

/**
 * The value named by a custom_search `metric_name`: a number or boolean column of the family, or
 * a metric the run's records of that family hold (or one the service knows by name).
 */
export function namedValue(name: string, family: RecordFamily, runMetrics: ReadonlySet<string>, loc: (string | number)[]): ValueExpression {
  const column = numericColumns(family).find((c) => c.id === name);
  if (column) return columnValue(column.storage);
  const metric = name.startsWith("metrics/") ? name.slice("metrics/".length) : name;
  if (runMetrics.has(metric) || isKnownMetric(metric)) return metricValue(metric);
  const columns = numericColumns(family).map((c) => c.id).join(", ");
  throw fault(loc, `unknown metric '${name}': name a metric of the run's ${family}s or one of the columns ${columns}`, name);
}

/**
 * The metric a custom_search `metric_name` names (without `metrics/`), or null when it names a
 * column: what the pre-aggregated cells may hold of it (they keep every numeric metric of a
 * trace, never a column). Also the key under which details on the same value share it.
 */
export function namedMetric(name: string, family: RecordFamily): string | null {
  if (numericColumns(family).some((c) => c.id === name)) return null;
  return name.startsWith("metrics/") ? name.slice("metrics/".length) : name;
}

/** The grouping a `group_by` names: name, status_code, tags, user_metadata.<key>; for spans also type and model. */
export function groupSpecOf(groupBy: string | null | undefined, family: RecordFamily): GroupSpec {
  if (groupBy === undefined || groupBy === null) return { kind: "none" };
  if (groupBy === "name" || groupBy === "status_code") return { kind: "column", storage: groupBy };
  if (groupBy === "tags" && family !== "session") return { kind: "tags" };
  if ((groupBy === "type" || groupBy === "model") && family === "span") return { kind: "column", storage: groupBy };
  if (groupBy.startsWith("user_metadata.") && groupBy.length > "user_metadata.".length) return { kind: "metadata", key: groupBy.slice("user_metadata.".length) };
  const allowed = family === "span" ? "name, status_code, tags, type, model or user_metadata.<key>" : family === "trace" ? "name, status_code, tags or user_metadata.<key>" : "name, status_code or user_metadata.<key>";
  throw fault(["body", "group_by"], `cannot group ${family}s by '${groupBy}': group by ${allowed}`, groupBy);
}
