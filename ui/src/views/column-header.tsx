/** A table header; a sortable one cycles ascending, descending, then the native order. */
interface Props {
  id: string;
  label: string;
  sortable: boolean;
  sort: { column: string; ascending: boolean } | null;
  onSort: (column: string) => void;
}

export function ColumnHeader({ id, label, sortable, sort, onSort }: Props) {
  const active = sort?.column === id;
  const ariaSort = active ? (sort!.ascending ? "ascending" : "descending") : "none";
  if (!sortable) {
    return (
      <th scope="col" data-column={id}>
        {label}
      </th>
    );
  }
  return (
    <th scope="col" data-column={id} aria-sort={ariaSort}>
      <button type="button" class="sort-button" onClick={() => onSort(id)} title={`Sort by ${label}`}>
        {label}
        <span class="sort-mark" aria-hidden="true">
          {active ? (sort!.ascending ? "▲" : "▼") : "↕"}
        </span>
      </button>
    </th>
  );
}
