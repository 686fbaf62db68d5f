/** The dashboard's range (presets or custom from/to), its grouping, and a refresh. */
import { useEffect, useState } from "preact/hooks";
import { METADATA_GROUP_PREFIX, RANGE_LABELS, type DashboardState, type RangeKind, type TimeWindow } from "./dashboard-state";

interface Props {
  state: DashboardState;
  window: TimeWindow;
  loading: boolean;
  onChange: (patch: Partial<DashboardState>) => void;
  onRefresh: () => void;
}

const pad = (n: number) => String(n).padStart(2, "0");

/** A time as a datetime-local input shows it (local time, to the minute). */
function localInput(ms: number): string {
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

function intervalLabel(minutes: number): string {
  if (minutes % 1_440 === 0) return `${minutes / 1_440} day${minutes === 1_440 ? "" : "s"}`;
  if (minutes % 60 === 0) return `${minutes / 60} hour${minutes === 60 ? "" : "s"}`;
  return `${minutes} min`;
}

export function DashboardControls({ state, window, loading, onChange, onRefresh }: Props) {
  const [from, setFrom] = useState(localInput(window.startMs));
  const [to, setTo] = useState(localInput(window.endMs));
  const metadataKey = state.group.startsWith(METADATA_GROUP_PREFIX) ? state.group.slice(METADATA_GROUP_PREFIX.length) : "";
  const [groupKind, setGroupKind] = useState(metadataKey ? "metadata" : state.group);
  const [key, setKey] = useState(metadataKey);
  useEffect(() => {
    setGroupKind(metadataKey ? "metadata" : state.group);
    setKey(metadataKey);
  }, [state.group]);
  useEffect(() => {
    setFrom(localInput(window.startMs));
    setTo(localInput(window.endMs));
  }, [window.startMs, window.endMs]);

  const customValid = from !== "" && to !== "" && new Date(to).getTime() > new Date(from).getTime();
  const applyCustom = (event: Event) => {
    event.preventDefault();
    if (customValid) onChange({ range: "custom", from: new Date(from).toISOString(), to: new Date(to).toISOString() });
  };
  const chooseGroup = (value: string) => {
    setGroupKind(value);
    if (value !== "metadata") onChange({ group: value });
  };
  const applyKey = (event: Event) => {
    event.preventDefault();
    if (key.trim()) onChange({ group: METADATA_GROUP_PREFIX + key.trim() });
  };

  return (
    <div class="dashboard-controls">
      <div class="segmented" role="group" aria-label="Range">
        {(Object.keys(RANGE_LABELS) as RangeKind[]).map((range) => (
          <button
            key={range}
            type="button"
            aria-pressed={state.range === range}
            onClick={() => (range === "custom" ? onChange({ range, from: new Date(window.startMs).toISOString(), to: new Date(window.endMs).toISOString() }) : onChange({ range, from: null, to: null }))}
          >
            {RANGE_LABELS[range]}
          </button>
        ))}
      </div>
      {state.range === "custom" ? (
        <form class="inline-form" onSubmit={applyCustom} aria-label="Custom range">
          <label>
            From <input type="datetime-local" value={from} onInput={(e) => setFrom(e.currentTarget.value)} />
          </label>
          <label>
            To <input type="datetime-local" value={to} onInput={(e) => setTo(e.currentTarget.value)} />
          </label>
          <button type="submit" disabled={!customValid}>
            Apply
          </button>
        </form>
      ) : null}
      <label class="inline-check">
        Group by
        <select aria-label="Group by" value={groupKind} onChange={(e) => chooseGroup(e.currentTarget.value)}>
          <option value="">Nothing</option>
          <option value="name">Trace name</option>
          <option value="model">Model (LLM calls)</option>
          <option value="tags">Tag</option>
          <option value="metadata">Metadata key…</option>
        </select>
      </label>
      {groupKind === "metadata" ? (
        <form class="inline-form" onSubmit={applyKey} aria-label="Metadata key">
          <input aria-label="Metadata key" placeholder="key, e.g. customer" value={key} onInput={(e) => setKey(e.currentTarget.value)} />
          <button type="submit" disabled={!key.trim()}>
            Group
          </button>
        </form>
      ) : null}
      <span class="muted" data-testid="dashboard-interval">
        buckets of {intervalLabel(window.intervalMinutes)}
      </span>
      <button type="button" class="button-small" onClick={onRefresh} disabled={loading}>
        Refresh
      </button>
    </div>
  );
}
