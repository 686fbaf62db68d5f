/**
 * Column ids of a search request resolved through the column catalogue: a standard column
 * (src/columns/standard-columns.ts, its `storage` names the `records` column), a metric
 * (`metrics/<name>`), or one key of a metadata map (`user_metadata.<key>`,
 * `dataset_metadata.<key>`). Nothing a client sends is ever used as an SQL identifier: only the
 * catalogue's `storage` names are.
 */
import { getTableColumns } from "drizzle-orm";
import { METRIC_COLUMN_PREFIX } from "../columns/metric-catalogue";
import {
  appliesToFamily,
  type FilterType,
  type RecordFamily,
  type RecordKind,
  type StandardColumn,
  STANDARD_COLUMNS_BY_ID,
} from "../columns/standard-columns";
import type { AnnotationType } from "../db/schema";
import { records } from "../db/schema";
import { SEARCH_LIMITS } from "./search-limits";

export type ColumnRef =
  | { kind: "standard"; id: string; column: StandardColumn; storage: string; nullable: boolean }
  | { kind: "metric"; id: string; name: string }
  | { kind: "user_metadata"; id: string; key: string }
  | { kind: "dataset_metadata"; id: string; key: string }
  | AnnotationColumnRef;

/**
 * `annotations/<template_id>` (contract section 8, "Search and columns"): the template's type is
 * known only on the project's shard, so normalisation records the leaf's own filter type and
 * where the leaf is (`loc`), and the search fills `annotationType` from the template before
 * compiling (bindAnnotationColumns), refusing a leaf that does not fit the template.
 */
export interface AnnotationColumnRef {
  kind: "annotation";
  id: string;
  templateId: string;
  filterType?: FilterType;
  loc?: (string | number)[];
  annotationType?: AnnotationType;
}

export const ANNOTATION_COLUMN_PREFIX = "annotations/";
const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A record field selected by name that is not a search column (see SELECTABLE_FIELDS). */
export type FieldRef = { kind: "field"; id: string };

/** What `select_columns.column_ids` may name. */
export type SelectedColumn = ColumnRef | FieldRef;

const USER_METADATA_PREFIX = "user_metadata.";
const DATASET_METADATA_PREFIX = "dataset_metadata.";

/** SQL names of the `records` columns that may hold NULL, read from the schema itself. */
const NULLABLE_STORAGE: ReadonlySet<string> = new Set(
  Object.values(getTableColumns(records))
    .filter((c) => !c.notNull)
    .map((c) => c.name),
);

const FAMILY_LABEL: Record<RecordFamily, string> = { session: "sessions", trace: "traces", span: "spans" };

/** Kinds a dataset metadata key can be on: the records that carry dataset fields. */
const DATASET_KINDS: readonly RecordKind[] = STANDARD_COLUMNS_BY_ID.get("dataset_input")!.applicable_types;

export type ColumnResolution =
  | { ok: true; ref: ColumnRef }
  | { ok: false; reason: "unknown" | "not_applicable"; message: string };

function keyed(prefix: string, id: string, what: string): { ok: true; key: string } | { ok: false; reason: "unknown"; message: string } {
  const key = id.slice(prefix.length);
  if (key.length === 0) return { ok: false, reason: "unknown", message: `column '${id}' names no ${what}` };
  if (key.length > SEARCH_LIMITS.maxColumnKeyLength) {
    return { ok: false, reason: "unknown", message: `the ${what} in column '${id.slice(0, 64)}...' is longer than ${SEARCH_LIMITS.maxColumnKeyLength} characters` };
  }
  return { ok: true, key };
}

function notApplicable(id: string, family: RecordFamily): ColumnResolution {
  return { ok: false, reason: "not_applicable", message: `column '${id}' does not apply to ${FAMILY_LABEL[family]}` };
}

/** Resolves a column id for a search over `family`: unknown and inapplicable columns are errors. */
export function resolveColumn(id: string, family: RecordFamily): ColumnResolution {
  const standard = STANDARD_COLUMNS_BY_ID.get(id);
  if (standard) {
    if (!appliesToFamily(standard, family)) return notApplicable(id, family);
    return { ok: true, ref: { kind: "standard", id, column: standard, storage: standard.storage, nullable: NULLABLE_STORAGE.has(standard.storage) } };
  }
  if (id.startsWith(METRIC_COLUMN_PREFIX)) {
    const name = keyed(METRIC_COLUMN_PREFIX, id, "metric");
    return name.ok ? { ok: true, ref: { kind: "metric", id, name: name.key } } : name;
  }
  if (id.startsWith(ANNOTATION_COLUMN_PREFIX)) {
    const templateId = id.slice(ANNOTATION_COLUMN_PREFIX.length);
    if (!UUID_PATTERN.test(templateId)) return { ok: false, reason: "unknown", message: `column '${id.slice(0, 80)}' names no annotation template (a UUID)` };
    return { ok: true, ref: { kind: "annotation", id, templateId: templateId.toLowerCase() } };
  }
  if (id.startsWith(USER_METADATA_PREFIX)) {
    const key = keyed(USER_METADATA_PREFIX, id, "metadata key");
    return key.ok ? { ok: true, ref: { kind: "user_metadata", id, key: key.key } } : key;
  }
  if (id.startsWith(DATASET_METADATA_PREFIX)) {
    if (!appliesToFamily({ applicable_types: DATASET_KINDS }, family)) return notApplicable(id, family);
    const key = keyed(DATASET_METADATA_PREFIX, id, "metadata key");
    return key.ok ? { ok: true, ref: { kind: "dataset_metadata", id, key: key.key } } : key;
  }
  return { ok: false, reason: "unknown", message: `unknown column '${id.length > 200 ? `${id.slice(0, 200)}...` : id}'` };
}

/**
 * Record fields a client may select by name although they are not columns of the catalogue (no
 * filter or sort on them): whole maps and the fields of the contract's record list. `metrics`
 * selects every metric. Each maps to the kinds that carry it.
 */
const SELECTABLE_FIELDS = new Map<string, readonly string[] | "all">([
  ["user_metadata", "all"],
  ["dataset_metadata", "all"],
  ["metrics", "all"],
  ["redacted_input", "all"],
  ["redacted_output", "all"],
  ["feedback_rating_info", "all"],
  ["annotations", "all"],
  ["annotation_aggregates", "all"],
  ["annotation_agreement", "all"],
  ["annotation_queue_ids", "all"],
  ["file_ids", "all"],
  ["file_modalities", "all"],
  ["events", ["llm"]],
  ["previous_session_id", ["session"]],
]);

/** Resolves a column id of `select_columns.column_ids`: a search column, or a record field. */
export function resolveSelectedColumn(
  id: string,
  family: RecordFamily,
): { ok: true; ref: SelectedColumn } | Extract<ColumnResolution, { ok: false }> {
  const resolved = resolveColumn(id, family);
  if (resolved.ok || resolved.reason !== "unknown" || !SELECTABLE_FIELDS.has(id)) return resolved;
  return { ok: true, ref: { kind: "field", id } };
}

/** The filter type a column takes: the catalogue's, number for metrics, text for metadata values. */
export function filterTypeOf(ref: ColumnRef): FilterType {
  switch (ref.kind) {
    case "standard":
      return ref.column.filter_type;
    case "metric":
      return "number";
    case "annotation":
      return ref.filterType ?? "text";
    default:
      return "text";
  }
}

export function isSortable(ref: ColumnRef): boolean {
  return ref.kind !== "standard" || ref.column.sortable;
}

/** Whether a record of `kind` can hold a value for the column (projection keeps only those). */
export function appliesToKind(ref: SelectedColumn, kind: string): boolean {
  switch (ref.kind) {
    case "standard":
      return (ref.column.applicable_types as readonly string[]).includes(kind);
    case "dataset_metadata":
      return (DATASET_KINDS as readonly string[]).includes(kind);
    case "field": {
      const kinds = SELECTABLE_FIELDS.get(ref.id);
      return kinds === "all" || (kinds ?? []).includes(kind);
    }
    default:
      return true;
  }
}
