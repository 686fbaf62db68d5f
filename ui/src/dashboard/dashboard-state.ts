/**
 * What the dashboard shows, kept in its URL's query string (so a chart can be linked and the back
 * button returns to the range before): `range` (hour, day, week or custom, with `from` and `to`),
 * `group` (name, model, tags or user_metadata.<key>). Also the time window and the bucket interval
 * a range stands for.
 */
import type { RunKind } from "../api/types";
import { hrefOf } from "../routing/routes";

export type RangePreset = "hour" | "day" | "week";
export type RangeKind = RangePreset | "custom";

export interface DashboardState {
  range: RangeKind;
  /** ISO times of a custom range; ignored for the presets. */
  from: string | null;
  to: string | null;
  /** "" (no grouping), "name", "model", "tags" or "user_metadata.<key>". */
  group: string;
}

export const RANGE_LABELS: Record<RangeKind, string> = { hour: "Last hour", day: "Last day", week: "Last week", custom: "Custom" };

const PRESET_MINUTES: Record<RangePreset, number> = { hour: 60, day: 1_440, week: 10_080 };

export const METADATA_GROUP_PREFIX = "user_metadata.";

export function parseDashboardState(search: string): DashboardState {
  const params = new URLSearchParams(search);
  const range = params.get("range");
  const from = params.get("from");
  const to = params.get("to");
  const custom = range === "custom" && validTime(from) && validTime(to) && Date.parse(to!) > Date.parse(from!);
  return {
    range: custom ? "custom" : range === "hour" || range === "week" ? range : "day",
    from: custom ? from : null,
    to: custom ? to : null,
    group: params.get("group") ?? "",
  };
}

function validTime(text: string | null): boolean {
  return text !== null && !Number.isNaN(Date.parse(text));
}

export function dashboardSearch(state: DashboardState): string {
  const params = new URLSearchParams();
  if (state.range !== "day") params.set("range", state.range);
  if (state.range === "custom" && state.from && state.to) {
    params.set("from", state.from);
    params.set("to", state.to);
  }
  if (state.group) params.set("group", state.group);
  const text = params.toString();
  return text ? `?${text}` : "";
}

export function dashboardHref(run: { projectId: string; kind: RunKind; runId: string }, state: DashboardState): string {
  return hrefOf({ view: "dashboard", ...run, search: dashboardSearch(state) });
}

export interface TimeWindow {
  startMs: number;
  endMs: number;
  intervalMinutes: number;
}

/** Bucket lengths the dashboard picks from (minutes): round figures a reader recognizes. */
const INTERVALS = [1, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1_440, 2_880, 10_080];
/** Enough points for a readable line, few enough for a bucket to be wide enough to click. */
const TARGET_BUCKETS = 60;
/** The service refuses more (contract, section 9). */
const MAX_BUCKETS = 1_000;

/** The shortest interval of INTERVALS that cuts the window into at most TARGET_BUCKETS buckets. */
export function intervalFor(durationMinutes: number): number {
  const fitting = INTERVALS.find((m) => durationMinutes / m <= TARGET_BUCKETS);
  return fitting ?? Math.ceil(durationMinutes / MAX_BUCKETS);
}

/**
 * The window a state stands for at `nowMs`. A preset ends at the end of the bucket holding now
 * (bucket edges on round times of UTC, so the hour's buckets start at :00, :05, ...) and starts
 * the preset's length before; a custom range is taken as it is.
 */
export function timeWindow(state: DashboardState, nowMs: number): TimeWindow {
  if (state.range === "custom" && state.from && state.to) {
    const startMs = Date.parse(state.from);
    const endMs = Date.parse(state.to);
    return { startMs, endMs, intervalMinutes: intervalFor((endMs - startMs) / 60_000) };
  }
  const minutes = PRESET_MINUTES[state.range as RangePreset] ?? PRESET_MINUTES.day;
  const intervalMinutes = intervalFor(minutes);
  const step = intervalMinutes * 60_000;
  const endMs = Math.ceil((nowMs + 1) / step) * step;
  return { startMs: endMs - minutes * 60_000, endMs, intervalMinutes };
}
