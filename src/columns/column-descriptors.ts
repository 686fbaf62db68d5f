import { METRIC_COLUMN_PREFIX, metricDescriptor } from "./metric-catalogue";
import { type RecordFamily, type StandardColumn, standardColumnsOf } from "./standard-columns";

export interface ColumnDescriptor {
  id: string;
  label: string;
  description: string;
  category: "standard" | "metric" | "feedback";
  group_label: string;
  data_type: string;
  filter_type: string;
  filterable: boolean;
  sortable: boolean;
  multi_valued: boolean;
  is_optional: boolean;
  is_empty: boolean;
  applicable_types: string[];
  allowed_values?: string[];
  data_unit?: string;
  roll_up_method?: string;
  threshold?: { buckets: number[]; display_value_levels: string[]; inverted: boolean };
}

function standardDescriptor(column: StandardColumn, present: ReadonlySet<string>): ColumnDescriptor {
  return {
    id: column.id,
    label: column.label,
    description: column.description,
    category: "standard",
    group_label: "Standard",
    data_type: column.data_type,
    filter_type: column.filter_type,
    filterable: true,
    sortable: column.sortable,
    multi_valued: column.multi_valued,
    is_optional: column.is_optional,
    is_empty: !present.has(column.id),
    applicable_types: [...column.applicable_types],
    ...(column.allowed_values ? { allowed_values: [...column.allowed_values] } : {}),
  };
}

export function metricColumnDescriptor(name: string): ColumnDescriptor {
  const d = metricDescriptor(name);
  return {
    id: `${METRIC_COLUMN_PREFIX}${name}`,
    label: d.label,
    description: d.description,
    category: "metric",
    group_label: d.group_label,
    data_type: d.data_type,
    filter_type: "number",
    filterable: true,
    sortable: true,
    multi_valued: false,
    is_optional: true,
    is_empty: false,
    applicable_types: [],
    ...(d.data_unit ? { data_unit: d.data_unit } : {}),
    ...(d.roll_up_method ? { roll_up_method: d.roll_up_method } : {}),
    ...(d.threshold ? { threshold: d.threshold } : {}),
  };
}

/**
 * The available-columns answer for one search route: its standard columns in the seed's order,
 * then one column per metric the run holds, by name. `presentColumnIds` are the column ids that
 * hold a value somewhere in the run for this family (standard ids and `metrics/<name>`).
 */
export function availableColumns(family: RecordFamily, presentColumnIds: Iterable<string>): ColumnDescriptor[] {
  const present = new Set(presentColumnIds);
  const metricNames = [...present]
    .filter((id) => id.startsWith(METRIC_COLUMN_PREFIX))
    .map((id) => id.slice(METRIC_COLUMN_PREFIX.length))
    .sort();
  return [
    ...standardColumnsOf(family).map((c) => standardDescriptor(c, present)),
    ...metricNames.map(metricColumnDescriptor),
  ];
}
