/**
 * "Alert on this chart", under a dashboard chart: the threshold is drawn on the chart as a dashed
 * line (a click on the chart moves it there, or type it), the line of a grouped chart can be
 * chosen (its group becomes the rule's filter), and "Create the rule" opens the run's alerts page
 * with the new rule's form prefilled with the chart's metric, that filter and the threshold.
 */
import { navigate } from "../routing/navigation";
import { hrefOf } from "../routing/routes";
import type { RunKind } from "../api/types";
import { prefillSearch, windowForBucket } from "./rule-prefill";

interface Props {
  run: { projectId: string; kind: RunKind; runId: string };
  metric: string;
  title: string;
  /** The chart's lines: [""] ungrouped, else the groups shown. */
  groups: string[];
  /** The group chosen (its filter leaf), or null for all traces. */
  group: string | null;
  onGroup: (group: string | null) => void;
  groupFilter: (group: string) => unknown;
  threshold: number;
  onThreshold: (value: number) => void;
  intervalMinutes: number;
  onClose: () => void;
}

export function ChartAlertPanel(props: Props) {
  const named = props.groups.filter((g) => g !== "" && g !== "other");
  const create = () => {
    const filters = props.group === null ? [] : [props.groupFilter(props.group)];
    const name = `${props.title}${props.group === null ? "" : ` (${props.group})`} above ${props.threshold}`;
    navigate(hrefOf({ view: "alerts", ...props.run, search: prefillSearch({ metric: props.metric, threshold: props.threshold, filters, windowMinutes: windowForBucket(props.intervalMinutes), name }) }));
  };
  return (
    <div class="chart-alert" role="group" aria-label={`Alert on ${props.title}`}>
      <p class="muted">Click the chart to draw the threshold, or type it.</p>
      <label>
        Threshold{" "}
        <input
          type="number"
          step="any"
          aria-label="Threshold"
          value={props.threshold}
          onInput={(e) => {
            const value = Number(e.currentTarget.value);
            if (e.currentTarget.value !== "" && Number.isFinite(value)) props.onThreshold(value);
          }}
        />
      </label>
      {named.length > 0 ? (
        <label>
          Line{" "}
          <select aria-label="Line" value={props.group ?? ""} onChange={(e) => props.onGroup(e.currentTarget.value === "" ? null : e.currentTarget.value)}>
            <option value="">All traces</option>
            {named.map((g) => (
              <option key={g} value={g}>
                {g}
              </option>
            ))}
          </select>
        </label>
      ) : null}
      <button type="button" onClick={create}>
        Create the rule…
      </button>
      <button type="button" class="button-small" onClick={props.onClose}>
        Cancel
      </button>
    </div>
  );
}
