/**
 * A run's dashboard: totals and charts over a chosen range (docs/ui.md, "Dashboard"). A click on a
 * bucket opens the run's table filtered to that bucket's time range and group. Loaded as its own
 * chunk (lazy-dashboard.tsx): the chart library is only fetched by those who open a dashboard.
 */
import { useMemo, useState } from "preact/hooks";
import { availableColumns, getProject, listRuns, type RunRef } from "../api/endpoints";
import type { Run, RunKind } from "../api/types";
import { Link, navigate } from "../routing/navigation";
import { emptyTable, hrefOf, type Route } from "../routing/routes";
import { ErrorNotice } from "../views/error-notice";
import { useApi } from "../views/use-api";
import { ChartAlertPanel } from "../alerts/chart-alert-panel";
import { bucketFilter, groupLeaf, loadDashboard, type Bucket, type DashboardData, type MetricInfo } from "./dashboard-data";
import { DashboardControls } from "./dashboard-controls";
import { dashboardHref, parseDashboardState, timeWindow, type DashboardState } from "./dashboard-state";
import { formatChartValue, seriesColor, TimeChart } from "./time-chart";

type DashboardRoute = Extract<Route, { view: "dashboard" }>;

/** An open choice of groups for a bucket clicked away from any line of a grouped chart. */
interface BucketChoice {
  chartTitle: string;
  bucketIndex: number;
}

export function DashboardPage({ route }: { route: DashboardRoute }) {
  const { projectId, kind, runId } = route;
  const run: RunRef = useMemo(() => ({ projectId, kind, runId }), [projectId, kind, runId]);
  const state = useMemo(() => parseDashboardState(route.search), [route.search]);
  // Now is read when the range or the run changes, or on Refresh; never on a mere re-render.
  const [refreshed, setRefreshed] = useState(0);
  const win = useMemo(() => timeWindow(state, Date.now()), [state.range, state.from, state.to, run, refreshed]);
  const project = useApi(() => getProject(projectId), [projectId]);
  const logStreams = useApi(() => listRuns(projectId, "log_streams"), [projectId]);
  const experiments = useApi(() => listRuns(projectId, "experiments"), [projectId]);
  const columns = useApi(() => availableColumns(run, "traces"), [run]);
  const metrics: MetricInfo | null = useMemo(() => {
    if (!columns.data) return null;
    const info: MetricInfo = new Map();
    for (const c of columns.data) if (c.id.startsWith("metrics/")) info.set(c.id.slice("metrics/".length), { label: c.label, unit: c.data_unit ?? null });
    return info;
  }, [columns.data]);
  const data = useApi(
    () => (metrics ? loadDashboard(run, win, state.group, metrics) : new Promise<DashboardData>(() => undefined)),
    [run, win, state.group, metrics],
  );
  const [choice, setChoice] = useState<BucketChoice | null>(null);
  // "Alert on this chart": the chart, its threshold (drawn on it) and the line chosen.
  const [alerting, setAlerting] = useState<{ key: string; threshold: number; group: string | null } | null>(null);

  const setState = (patch: Partial<DashboardState>) => {
    setChoice(null);
    navigate(dashboardHref(run, { ...state, ...patch }));
  };

  const openBucket = (bucket: Bucket, groupValue: string | null) => {
    const family = data.data?.family ?? "traces";
    const filter = bucketFilter(bucket, state.group, groupValue, family);
    navigate(hrefOf({ view: "records", projectId, kind, runId, family, table: { ...emptyTable(), filter } }));
  };

  const onBucketClick = (chartTitle: string) => (bucketIndex: number, seriesName: string | null) => {
    const bucket = data.data?.buckets[bucketIndex];
    if (!bucket) return;
    if (seriesName === null) setChoice({ chartTitle, bucketIndex });
    else openBucket(bucket, seriesName);
  };

  const runs: { kind: RunKind; run: Run }[] = [
    ...(logStreams.data ?? []).map((r) => ({ kind: "log_streams" as const, run: r })),
    ...(experiments.data ?? []).map((r) => ({ kind: "experiments" as const, run: r })),
  ];
  const runName = runs.find((r) => r.run.id === runId)?.run.name;
  const tracesHref = hrefOf({ view: "records", projectId, kind, runId, family: "traces", table: emptyTable() });
  const shown = data.data;

  return (
    <main class="page page-wide dashboard">
      <nav class="breadcrumbs" aria-label="Breadcrumbs">
        <Link href="/">Projects</Link> / <span>{project.data?.name ?? "…"}</span> /{" "}
        <span>
          {kind === "log_streams" ? "log stream" : "experiment"} {runName ?? runId.slice(0, 8)}
        </span>
      </nav>
      <div class="records-header">
        <nav class="tabs" aria-label="Run views">
          <Link href={hrefOf(route)} aria-current="page">
            Dashboard
          </Link>
          <Link href={tracesHref}>Traces</Link>
          <Link href={hrefOf({ view: "records", projectId, kind, runId, family: "spans", table: emptyTable() })}>Spans</Link>
          <Link href={hrefOf({ view: "records", projectId, kind, runId, family: "sessions", table: emptyTable() })}>Sessions</Link>
          <Link href={hrefOf({ view: "alerts", projectId, kind, runId, search: "" })}>Alerts</Link>
        </nav>
        <label class="inline-check">
          Run
          <select
            aria-label="Run"
            value={`${kind}/${runId}`}
            onChange={(e) => {
              const [k, id] = e.currentTarget.value.split("/") as [RunKind, string];
              navigate(dashboardHref({ projectId, kind: k, runId: id }, state));
            }}
          >
            {runs.length === 0 ? <option value={`${kind}/${runId}`}>{runId}</option> : null}
            {runs.map(({ kind: k, run: r }) => (
              <option key={r.id} value={`${k}/${r.id}`}>
                {k === "log_streams" ? "Log stream" : "Experiment"}: {r.name}
              </option>
            ))}
          </select>
        </label>
      </div>
      <DashboardControls state={state} window={win} onChange={setState} onRefresh={() => setRefreshed((n) => n + 1)} loading={data.loading} />
      {columns.error ? <ErrorNotice error={columns.error} onRetry={columns.reload} /> : null}
      {data.error ? <ErrorNotice error={data.error} onRetry={data.reload} /> : null}
      {!shown && data.loading ? <p class="muted">Loading…</p> : null}
      {shown ? (
        <>
          <Totals data={shown} />
          {shown.totals[shown.family === "spans" ? "span_count" : "trace_count"] === 0 ? (
            <p class="muted" data-testid="dashboard-empty">
              Nothing was written to this run in this range. <Link href={tracesHref}>Open its traces</Link> or choose a longer range.
            </p>
          ) : null}
          {choice ? <GroupChoice data={shown} choice={choice} onOpen={openBucket} onClose={() => setChoice(null)} /> : null}
          <div class="chart-grid">
            {shown.charts.map((spec) => (
              <section key={spec.key} class="card chart-card" aria-label={spec.title}>
                <div class="chart-card-head">
                  <h3>{spec.title}</h3>
                  {/* Rules watch metrics/search's keys: the trace charts (not the per-model span charts). */}
                  {shown.family === "traces" && alerting?.key !== spec.key ? (
                    <button
                      type="button"
                      class="button-small"
                      aria-label={`Alert on ${spec.title}`}
                      onClick={() => setAlerting({ key: spec.key, threshold: chartMaximum(shown.series[spec.key]!.values), group: null })}
                    >
                      Alert…
                    </button>
                  ) : null}
                </div>
                <TimeChart
                  spec={spec}
                  buckets={shown.buckets}
                  series={shown.series[spec.key]!}
                  startMs={win.startMs}
                  endMs={win.endMs}
                  onBucketClick={onBucketClick(spec.title)}
                  threshold={alerting?.key === spec.key ? alerting.threshold : null}
                  onPickValue={alerting?.key === spec.key ? (value) => setAlerting({ ...alerting, threshold: roundThreshold(value) }) : null}
                />
                {alerting?.key === spec.key ? (
                  <ChartAlertPanel
                    run={run}
                    metric={spec.key}
                    title={spec.title}
                    groups={shown.series[spec.key]!.names}
                    group={alerting.group}
                    onGroup={(group) => setAlerting({ ...alerting, group })}
                    groupFilter={(group) => groupLeaf(state.group, group)}
                    threshold={alerting.threshold}
                    onThreshold={(threshold) => setAlerting({ ...alerting, threshold })}
                    intervalMinutes={win.intervalMinutes}
                    onClose={() => setAlerting(null)}
                  />
                ) : null}
              </section>
            ))}
          </div>
        </>
      ) : null}
    </main>
  );
}

/** The highest value of a chart (a first threshold to move), 0 for an empty one. */
function chartMaximum(values: (number | null)[][]): number {
  let max = 0;
  for (const line of values) for (const v of line) if (v !== null && v > max) max = v;
  return roundThreshold(max);
}

/** Three significant digits: a threshold a person would write. */
function roundThreshold(value: number): number {
  return value === 0 ? 0 : Number(value.toPrecision(3));
}

const TRACE_TOTALS: [string, string, string][] = [
  ["trace_count", "Traces", "count"],
  ["error_rate", "Error rate", "fraction"],
  ["p50_latency_ns", "Latency p50", "nano_seconds"],
  ["p95_latency_ns", "Latency p95", "nano_seconds"],
  ["total_tokens", "Tokens", "tokens"],
  ["total_cost", "Cost", "dollars"],
];

const SPAN_TOTALS: [string, string, string][] = [["span_count", "LLM calls", "count"], ["error_count", "LLM errors", "count"], ...TRACE_TOTALS.slice(2)];

function Totals({ data }: { data: DashboardData }) {
  const list = data.family === "spans" ? SPAN_TOTALS : TRACE_TOTALS;
  return (
    <dl class="dashboard-totals" aria-label="Totals over the range">
      {list.map(([key, label, unit]) => (
        <div key={key} class="card" data-total={key}>
          <dt>{label}</dt>
          <dd>{formatChartValue(data.totals[key], unit)}</dd>
        </div>
      ))}
    </dl>
  );
}

/** The groups of a clicked bucket, each opening the table filtered to it. */
function GroupChoice({ data, choice, onOpen, onClose }: { data: DashboardData; choice: BucketChoice; onOpen: (b: Bucket, group: string | null) => void; onClose: () => void }) {
  const bucket = data.buckets[choice.bucketIndex]!;
  const counts = data.series[data.family === "spans" ? "span_count" : "trace_count"]!;
  const noun = data.family === "spans" ? "LLM calls" : "traces";
  const time = (ms: number) => new Date(ms).toLocaleString();
  return (
    <div class="card bucket-choice" role="dialog" aria-label="Open a bucket">
      <div class="bucket-choice-head">
        <strong>
          {choice.chartTitle}, {time(bucket.startMs)} – {time(bucket.endMs)}
        </strong>
        <button type="button" class="button-small" onClick={onClose}>
          Close
        </button>
      </div>
      <ul>
        <li>
          <button type="button" class="link-button" onClick={() => onOpen(bucket, null)}>
            All {noun} of this bucket
          </button>
        </li>
        {counts.names.map((name, i) => {
          const count = counts.values[i]![choice.bucketIndex] ?? 0;
          return count > 0 && name !== "other" ? (
            <li key={name}>
              <span class="swatch" style={{ background: seriesColor(i) }} />
              <button type="button" class="link-button" onClick={() => onOpen(bucket, name)}>
                {name}
              </button>{" "}
              <span class="muted">
                {formatChartValue(count, "count")} {noun}
              </span>
            </li>
          ) : null;
        })}
      </ul>
    </div>
  );
}
