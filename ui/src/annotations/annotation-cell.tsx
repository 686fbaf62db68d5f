/**
 * A records-table cell of an annotation column (`annotations/<template_id>`, category
 * `feedback`): the record's aggregate with that template, from the feedback fields the search
 * returns when an annotation column is shown (include_all_feedback).
 */
import type { ApiRecord, Column } from "../api/types";
import { aggregateText } from "./aggregate-text";
import type { RecordFeedback } from "./annotation-types";

export const ANNOTATION_COLUMN_PREFIX = "annotations/";

export const isAnnotationColumn = (id: string) => id.startsWith(ANNOTATION_COLUMN_PREFIX);

export function annotationCell(record: ApiRecord, column: { id: string; column: Column | undefined }) {
  const aggregate = (record as RecordFeedback).annotation_aggregates?.[column.id.slice(ANNOTATION_COLUMN_PREFIX.length)]?.aggregate;
  if (!aggregate) return <td key={column.id} class="empty">—</td>;
  return (
    <td key={column.id} class="annotation" data-testid="annotation-cell">
      {aggregateText(aggregate)}
    </td>
  );
}
