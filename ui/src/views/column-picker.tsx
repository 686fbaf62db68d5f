/** Which columns the table shows: every column of available_columns, grouped, metrics with their units. */
import { useState } from "preact/hooks";
import type { Column } from "../api/types";
import { columnTitle } from "../format/values";

interface Props {
  columns: Column[];
  visible: string[];
  onChange: (visible: string[]) => void;
}

export function ColumnPicker({ columns, visible, onChange }: Props) {
  const [open, setOpen] = useState(false);
  const groups = new Map<string, Column[]>();
  for (const c of columns) groups.set(c.group_label, [...(groups.get(c.group_label) ?? []), c]);
  const toggle = (id: string, on: boolean) => {
    // Keep the catalogue's order, so adding a column does not shuffle the others.
    const next = new Set(visible);
    if (on) next.add(id);
    else next.delete(id);
    const ordered = [...visible.filter((v) => next.has(v)), ...columns.map((c) => c.id).filter((c) => next.has(c) && !visible.includes(c))];
    onChange(ordered);
  };
  return (
    <div class="popover-anchor">
      <button type="button" aria-expanded={open} aria-haspopup="true" onClick={() => setOpen(!open)} data-testid="column-picker-button">
        Columns ({visible.length})
      </button>
      {open ? (
        <div class="popover column-picker" role="dialog" aria-label="Columns" onKeyDown={(e) => e.key === "Escape" && setOpen(false)}>
          {[...groups].map(([group, list]) => (
            <fieldset key={group}>
              <legend>{group}</legend>
              {list.map((c) => (
                <label key={c.id} class={`inline-check${c.is_empty ? " muted" : ""}`} title={c.description}>
                  <input type="checkbox" checked={visible.includes(c.id)} onChange={(e) => toggle(c.id, e.currentTarget.checked)} />
                  {columnTitle(c)}
                  {c.is_empty ? " (empty)" : ""}
                </label>
              ))}
            </fieldset>
          ))}
          <button type="button" class="button-small" onClick={() => setOpen(false)}>
            Done
          </button>
        </div>
      ) : null}
    </div>
  );
}
