/**
 * One page of records as a table: sortable headers (click, or Enter on a focused header), rows
 * that open with a click or Enter, and arrow keys to move between rows. It marks how long the
 * first render of an answer takes (`records-table-render`, from the moment the API answered to
 * the table laid out), which the browser test reads and prints and `npm run bench -- ui` judges
 * against its 100 ms target.
 */
import { useContext, useLayoutEffect, useRef } from "preact/hooks";
import type { ApiRecord, Column } from "../api/types";
import { formatDateTime, formatInteger, formatMetric, metricName, summarize, valueOf } from "../format/values";
import { annotationCell, isAnnotationColumn } from "../annotations/annotation-cell";
import { HighlightText, highlighted } from "../text-search/highlighted";
import { SEARCHED_COLUMNS } from "../text-search/text-query";
import { ColumnHeader } from "./column-header";

export interface TableColumn {
  id: string;
  column: Column | undefined;
  label: string;
}

interface Props {
  columns: TableColumn[];
  records: ApiRecord[];
  /** performance.now() when the answer arrived. */
  answeredAt: number;
  sort: { column: string; ascending: boolean } | null;
  onSort: (column: string) => void;
  onOpen: (record: ApiRecord) => void;
  openId: string | null;
}

/** A cell, rendered as a plain call rather than a component: a page holds a thousand of them. */
function cell(record: ApiRecord, column: TableColumn, searched: string | null) {
  if (isAnnotationColumn(column.id)) return annotationCell(record, column);
  const value = valueOf(record, column.id);
  if (value === null || value === undefined || value === "") return <td key={column.id} class="empty">—</td>;
  const dataType = column.column?.data_type;
  if (metricName(column.id) !== null) return <td key={column.id} class="num">{formatMetric(value, column.column?.data_unit)}</td>;
  if (dataType === "timestamp") return <td key={column.id} class="nowrap">{formatDateTime(value)}</td>;
  if (dataType === "uuid") {
    return (
      <td key={column.id} class="mono" title={String(value)}>
        {String(value).slice(0, 8)}
      </td>
    );
  }
  if (dataType === "boolean") return <td key={column.id}>{value ? "yes" : "no"}</td>;
  if (Array.isArray(value) && column.id === "tags") {
    return (
      <td key={column.id} class="tags">
        {value.map((tag) => (
          <span key={String(tag)} class="chip">
            {String(tag)}
          </span>
        ))}
      </td>
    );
  }
  if (typeof value === "number") {
    const failed = column.id === "status_code" && value >= 400;
    return <td key={column.id} class={`num${failed ? " status-failed" : ""}`}>{formatInteger(value)}</td>;
  }
  if (column.id === "type") {
    return (
      <td key={column.id}>
        <span class={`kind kind-${String(value)}`}>{String(value)}</span>
      </td>
    );
  }
  const text = summarize(value);
  return (
    <td key={column.id} class="text" title={text.length > 80 ? text.slice(0, 2000) : undefined}>
      {(SEARCHED_COLUMNS as readonly string[]).includes(column.id) ? highlighted(text, searched) : text}
    </td>
  );
}

export function RecordsTable({ columns, records, answeredAt, sort, onSort, onOpen, openId }: Props) {
  const table = useRef<HTMLTableElement>(null);
  const searched = useContext(HighlightText);
  useLayoutEffect(() => {
    if (!table.current || answeredAt === 0) return;
    // Reading a layout property makes the browser lay the table out now: the mark covers it.
    void table.current.offsetHeight;
    performance.measure("records-table-render", { start: answeredAt, end: performance.now(), detail: { rows: records.length } });
  }, [records, answeredAt]);

  const onKeyDown = (event: KeyboardEvent, index: number, record: ApiRecord) => {
    const rows = table.current?.querySelectorAll<HTMLTableRowElement>("tbody tr");
    if (!rows) return;
    const move = (to: number) => {
      event.preventDefault();
      rows[Math.max(0, Math.min(rows.length - 1, to))]?.focus();
    };
    if (event.key === "ArrowDown" || event.key === "j") move(index + 1);
    else if (event.key === "ArrowUp" || event.key === "k") move(index - 1);
    else if (event.key === "Home") move(0);
    else if (event.key === "End") move(rows.length - 1);
    else if (event.key === "Enter") {
      event.preventDefault();
      onOpen(record);
    }
  };

  return (
    <div class="table-scroll">
      <table class="records" ref={table} data-testid="records-table" aria-rowcount={records.length}>
        <thead>
          <tr>
            {columns.map((c) => (
              <ColumnHeader key={c.id} id={c.id} label={c.label} sortable={c.column?.sortable ?? false} sort={sort} onSort={onSort} />
            ))}
          </tr>
        </thead>
        <tbody>
          {records.map((record, index) => (
            <tr
              key={record.id}
              tabIndex={0}
              data-id={record.id}
              aria-selected={openId === record.id}
              onClick={() => onOpen(record)}
              onKeyDown={(e) => onKeyDown(e, index, record)}
            >
              {columns.map((c) => cell(record, c, searched))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
