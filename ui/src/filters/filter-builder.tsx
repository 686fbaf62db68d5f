/**
 * The filter builder: AND / OR / NOT groups of conditions on any filterable column, with the
 * operators its filter type allows, metadata keys and metric names offered, dates with a picker
 * and quick ranges, and the filter tree's JSON visible and editable. A 422 from the last search is
 * shown next to the condition its `loc` names.
 */
import { useEffect, useMemo, useState } from "preact/hooks";
import type { ValidationItem } from "../api/client";
import type { Column, FilterJson, FilterType } from "../api/types";
import { columnTitle } from "../format/values";
import { FullyAnnotatedEditor } from "../annotations/fully-annotated-editor";
import { FULLY_ANNOTATED, fullyAnnotatedLeaf } from "../annotations/fully-annotated-leaf";
import {
  defaultValue,
  emptyGroup,
  errorsByNode,
  FilterParseError,
  type FilterNode,
  fromFilterTree,
  type GroupNode,
  LIST_OPERATORS,
  type LeafNode,
  newLeaf,
  nodeToJson,
  OPERATOR_LABELS,
  OPERATORS,
  toFilterTree,
  updateNode,
} from "./filter-model";

const METADATA_PREFIX = "user_metadata.";
/** The group_label of the annotation columns, where the fully_annotated condition is offered. */
const ANNOTATIONS_GROUP = "Annotations";

interface Props {
  columns: Column[];
  /** user_metadata keys seen in the loaded records, offered as suggestions. */
  metadataKeys: string[];
  value: FilterJson | null;
  /** The faults of the last search (its 422), if any. */
  errors: ValidationItem[];
  onApply: (tree: FilterJson | null) => void;
}

interface BuilderContext {
  columns: Column[];
  byId: Map<string, Column>;
  errors: Map<string, string[]>;
  change: (id: string, update: (node: FilterNode) => FilterNode | null) => void;
}

function typeOfColumn(byId: Map<string, Column>, column: string): FilterType | undefined {
  if (column.startsWith(METADATA_PREFIX) || column.startsWith("dataset_metadata.")) return "text";
  if (column.startsWith("metrics/")) return "number";
  return byId.get(column)?.filter_type;
}

function listText(value: unknown): string {
  return Array.isArray(value) ? value.join(", ") : typeof value === "string" ? value : "";
}

function parseList(text: string, type: FilterType): unknown[] {
  const items = text.split(",").map((s) => s.trim()).filter(Boolean);
  return type === "number" ? items.map(Number) : items;
}

/** ISO (UTC) -> the value of a datetime-local input (local time), and back. */
function toLocalInput(iso: unknown): string {
  if (typeof iso !== "string" || !iso) return "";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return "";
  return new Date(date.getTime() - date.getTimezoneOffset() * 60_000).toISOString().slice(0, 19);
}

function fromLocalInput(text: string): string {
  return text ? new Date(text).toISOString() : "";
}

const QUICK_RANGES: { label: string; ms: number }[] = [
  { label: "Last hour", ms: 3_600_000 },
  { label: "Last day", ms: 86_400_000 },
  { label: "Last week", ms: 7 * 86_400_000 },
];

function ValueEditor({ leaf, column, set }: { leaf: LeafNode; column: Column | undefined; set: (patch: Partial<LeafNode>) => void }) {
  const { type, operator, value } = leaf;
  if (LIST_OPERATORS.has(operator) || (type === "collection" && operator === "eq")) {
    return (
      <input
        aria-label="Values (comma-separated)"
        placeholder="a, b, c"
        value={listText(value)}
        onChange={(e) => set({ value: parseList(e.currentTarget.value, type) })}
        list={column?.allowed_values ? `allowed-${column.id}` : undefined}
      />
    );
  }
  if (operator === "between") {
    const [low, high] = Array.isArray(value) ? value : [0, 1];
    return (
      <span class="between">
        <input aria-label="From" type="number" step="any" value={String(low ?? "")} onChange={(e) => set({ value: [Number(e.currentTarget.value), high] })} />
        and
        <input aria-label="To" type="number" step="any" value={String(high ?? "")} onChange={(e) => set({ value: [low, Number(e.currentTarget.value)] })} />
      </span>
    );
  }
  if (type === "boolean") {
    return (
      <select aria-label="Value" value={String(value)} onChange={(e) => set({ value: e.currentTarget.value === "true" })}>
        <option value="true">true</option>
        <option value="false">false</option>
      </select>
    );
  }
  if (type === "number") {
    return <input aria-label="Value" type="number" step="any" value={typeof value === "number" ? String(value) : String(value ?? "")} onChange={(e) => set({ value: Number(e.currentTarget.value) })} />;
  }
  if (type === "date") {
    return (
      <span class="date-value">
        <input aria-label="Date and time" type="datetime-local" step="1" value={toLocalInput(value)} onChange={(e) => set({ value: fromLocalInput(e.currentTarget.value) })} />
        {QUICK_RANGES.map((range) => (
          <button key={range.label} type="button" class="button-small" onClick={() => set({ operator: "gte", value: new Date(Date.now() - range.ms).toISOString() })}>
            {range.label}
          </button>
        ))}
      </span>
    );
  }
  if (column?.allowed_values && (operator === "eq" || operator === "ne")) {
    return (
      <select aria-label="Value" value={String(value ?? "")} onChange={(e) => set({ value: e.currentTarget.value })}>
        <option value="" disabled>
          choose…
        </option>
        {column.allowed_values.map((v) => (
          <option key={v} value={v}>
            {v}
          </option>
        ))}
      </select>
    );
  }
  return <input aria-label="Value" value={typeof value === "string" ? value : JSON.stringify(value ?? "")} onChange={(e) => set({ value: e.currentTarget.value })} />;
}

function ErrorList({ errors }: { errors: readonly string[] | undefined }) {
  if (!errors || errors.length === 0) return null;
  return (
    <ul class="leaf-errors" role="alert">
      {errors.map((e) => (
        <li key={e}>{e}</li>
      ))}
    </ul>
  );
}

function LeafEditor({ leaf, ctx }: { leaf: LeafNode; ctx: BuilderContext }) {
  const isMetadata = leaf.column.startsWith(METADATA_PREFIX);
  const isFullyAnnotated = leaf.column === FULLY_ANNOTATED;
  const column = ctx.byId.get(leaf.column);
  const set = (patch: Partial<LeafNode>) => ctx.change(leaf.id, (n) => ({ ...(n as LeafNode), ...patch }));
  const chooseColumn = (id: string) => {
    if (id === FULLY_ANNOTATED) return ctx.change(leaf.id, () => fullyAnnotatedLeaf(leaf.id, []));
    const type = typeOfColumn(ctx.byId, id) ?? "text";
    ctx.change(leaf.id, () => ({ ...newLeaf(id, type), id: leaf.id }));
  };
  const operators = OPERATORS[leaf.type] ?? [leaf.operator];
  const groups = new Map<string, Column[]>();
  for (const c of ctx.columns) groups.set(c.group_label, [...(groups.get(c.group_label) ?? []), c]);
  const errors = ctx.errors.get(leaf.id);
  return (
    <div class={`filter-leaf${errors ? " has-error" : ""}`} data-testid="filter-leaf">
      <select aria-label="Column" value={isMetadata ? METADATA_PREFIX : leaf.column} onChange={(e) => chooseColumn(e.currentTarget.value)}>
        {!column && !isMetadata && (!isFullyAnnotated || !groups.has(ANNOTATIONS_GROUP)) ? (
          <option value={leaf.column}>{isFullyAnnotated ? "Fully annotated" : leaf.column}</option>
        ) : null}
        {[...groups].map(([group, columns]) => (
          <optgroup key={group} label={group}>
            {columns.map((c) => (
              <option key={c.id} value={c.id}>
                {columnTitle(c)}
              </option>
            ))}
            {group === ANNOTATIONS_GROUP ? <option value={FULLY_ANNOTATED}>Fully annotated</option> : null}
          </optgroup>
        ))}
        <optgroup label="Metadata">
          <option value={METADATA_PREFIX}>user_metadata key…</option>
        </optgroup>
      </select>
      {isMetadata ? (
        <input
          aria-label="Metadata key"
          class="metadata-key"
          placeholder="key"
          list="metadata-keys"
          value={leaf.column.slice(METADATA_PREFIX.length)}
          onChange={(e) => set({ column: METADATA_PREFIX + e.currentTarget.value.trim() })}
        />
      ) : null}
      {isFullyAnnotated ? (
        <FullyAnnotatedEditor userIds={leaf.value as string[]} onChange={(value) => set({ value })} />
      ) : (
        <>
          <select aria-label="Operator" value={leaf.operator} onChange={(e) => set({ operator: e.currentTarget.value, value: defaultValue(leaf.type, e.currentTarget.value) })}>
            {(operators.includes(leaf.operator) ? operators : [leaf.operator, ...operators]).map((op) => (
              <option key={op} value={op}>
                {OPERATOR_LABELS[op] ?? op}
              </option>
            ))}
          </select>
          <ValueEditor leaf={leaf} column={column} set={set} />
        </>
      )}
      {column?.allowed_values ? (
        <datalist id={`allowed-${column.id}`}>
          {column.allowed_values.map((v) => (
            <option key={v} value={v} />
          ))}
        </datalist>
      ) : null}
      {leaf.type === "text" || leaf.type === "collection" ? (
        <label class="inline-check" title="Case-sensitive">
          <input type="checkbox" checked={leaf.caseSensitive} onChange={(e) => set({ caseSensitive: e.currentTarget.checked })} />
          Aa
        </label>
      ) : null}
      <button type="button" class="icon-button" aria-label="Remove condition" onClick={() => ctx.change(leaf.id, () => null)}>
        ×
      </button>
      <ErrorList errors={errors} />
    </div>
  );
}

function GroupEditor({ group, ctx, root }: { group: GroupNode; ctx: BuilderContext; root: boolean }) {
  const set = (patch: Partial<GroupNode>) => ctx.change(group.id, (n) => ({ ...(n as GroupNode), ...patch }));
  const firstColumn = ctx.columns[0];
  const add = (node: FilterNode) => set({ children: [...group.children, node] });
  const errors = ctx.errors.get(group.id);
  return (
    <fieldset class={`filter-group${group.negate ? " negated" : ""}`} data-testid="filter-group">
      <legend>
        <label class="inline-check">
          <input type="checkbox" checked={group.negate} onChange={(e) => set({ negate: e.currentTarget.checked })} />
          NOT
        </label>
        <span class="segmented segmented-small" role="radiogroup" aria-label="Combine with">
          {(["and", "or"] as const).map((op) => (
            <button key={op} type="button" role="radio" aria-checked={group.op === op} onClick={() => set({ op })}>
              {op.toUpperCase()}
            </button>
          ))}
        </span>
        {!root ? (
          <button type="button" class="icon-button" aria-label="Remove group" onClick={() => ctx.change(group.id, () => null)}>
            ×
          </button>
        ) : null}
      </legend>
      {group.children.length === 0 ? <p class="muted small">{root ? "No conditions: every record matches." : "Empty group."}</p> : null}
      {group.children.map((child) =>
        child.kind === "leaf" ? <LeafEditor key={child.id} leaf={child} ctx={ctx} /> : <GroupEditor key={child.id} group={child} ctx={ctx} root={false} />,
      )}
      <ErrorList errors={errors} />
      <div class="group-actions">
        <button type="button" class="button-small" disabled={!firstColumn} onClick={() => firstColumn && add(newLeaf(firstColumn.id, firstColumn.filter_type))}>
          + Condition
        </button>
        <button type="button" class="button-small" onClick={() => add(emptyGroup("or"))}>
          + Group
        </button>
      </div>
    </fieldset>
  );
}

export function FilterBuilder({ columns, metadataKeys, value, errors, onApply }: Props) {
  const filterable = useMemo(() => columns.filter((c) => c.filterable), [columns]);
  const byId = useMemo(() => new Map(columns.map((c) => [c.id, c])), [columns]);
  const typeOf = (column: string) => typeOfColumn(byId, column);
  // Keyed by the tree's text: the URL is parsed anew on every navigation (paging, sorting), and
  // that must not throw away conditions being edited.
  const valueKey = JSON.stringify(value);
  const applied = useMemo(() => fromFilterTree(value, typeOf), [valueKey, byId]);
  const [model, setModel] = useState<GroupNode>(applied);
  const [jsonText, setJsonText] = useState(() => JSON.stringify(value ?? null, null, 2));
  const [jsonError, setJsonError] = useState<string | null>(null);
  useEffect(() => {
    setModel(applied);
    setJsonText(JSON.stringify(value ?? null, null, 2));
    setJsonError(null);
  }, [applied]);

  // 422s name places in the tree that was sent, which `applied` mirrors node for node.
  // The builder's nodes are edited copies of `applied`'s and keep their ids.
  const errorMap = useMemo(() => errorsByNode(applied, errors), [applied, errors]);
  const general = errorMap.get("") ?? [];

  const ctx: BuilderContext = {
    columns: filterable,
    byId,
    errors: errorMap,
    change: (id, update) =>
      setModel((m) => {
        const next = updateNode(m, id, update);
        setJsonText(JSON.stringify(toFilterTree(next), null, 2));
        return next;
      }),
  };

  const applyJson = () => {
    try {
      const parsed = JSON.parse(jsonText) as FilterJson | null;
      const next = fromFilterTree(parsed, typeOf);
      setJsonError(null);
      onApply(toFilterTree(next));
    } catch (error) {
      setJsonError(error instanceof FilterParseError ? error.message : `Not valid JSON: ${(error as Error).message}`);
    }
  };

  const dirty = JSON.stringify(toFilterTree(model)) !== JSON.stringify(value ? nodeToJson(applied) : null);

  return (
    <section class="filter-builder card" aria-label="Filter">
      <form
        onSubmit={(e) => {
          e.preventDefault();
          onApply(toFilterTree(model));
        }}
      >
        <GroupEditor group={model} ctx={ctx} root />
        <datalist id="metadata-keys">
          {metadataKeys.map((k) => (
            <option key={k} value={k} />
          ))}
        </datalist>
        <ErrorList errors={general} />
        <div class="filter-actions">
          <button type="submit" class="button-primary" data-testid="apply-filter">
            Apply filter{dirty ? " •" : ""}
          </button>
          <button type="button" onClick={() => onApply(null)} disabled={!value}>
            Clear
          </button>
        </div>
      </form>
      <details class="filter-json">
        <summary>Filter tree JSON</summary>
        <textarea aria-label="Filter tree JSON" spellcheck={false} rows={8} value={jsonText} onInput={(e) => setJsonText(e.currentTarget.value)} />
        {jsonError ? (
          <p class="field-error" role="alert">
            {jsonError}
          </p>
        ) : null}
        <button type="button" onClick={applyJson} data-testid="apply-json">
          Apply JSON
        </button>
      </details>
    </section>
  );
}
