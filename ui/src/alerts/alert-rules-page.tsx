/**
 * A run's alert rules (docs/alerts.md): each rule's condition, state, last value and when it was
 * evaluated, its history of state changes, and, for admins, a form to create one (prefilled when
 * it comes from a dashboard chart: rule-prefill.ts), to switch it off or on and to delete it.
 */
import { useMemo, useState } from "preact/hooks";
import { getProject, listRuns, type RunRef } from "../api/endpoints";
import type { CurrentUser } from "../api/types";
import { Link } from "../routing/navigation";
import { emptyTable, hrefOf, type Route } from "../routing/routes";
import { ErrorNotice } from "../views/error-notice";
import { useApi } from "../views/use-api";
import { type Comparison, createRule, deleteRule, listChannels, listRules, patchRule, type Rule, ruleHistory, type RuleFields } from "./alerts-api";
import { parsePrefill } from "./rule-prefill";
import "./alerts.css";

type AlertsRoute = Extract<Route, { view: "alerts" }>;

export const METRIC_CHOICES = [
  "trace_count", "error_count", "error_rate", "average_latency_ns", "p50_latency_ns", "p90_latency_ns", "p95_latency_ns", "p99_latency_ns",
  "total_input_tokens", "total_output_tokens", "total_tokens", "total_cost", "average_cost", "session_count", "span_count",
];

const SYMBOL: Record<Comparison, string> = { gt: ">", gte: "≥", lt: "<", lte: "≤" };

const time = (iso: string | null) => (iso ? new Date(iso).toLocaleString() : "—");
const shownValue = (v: number | null) => (v === null ? "no data" : String(Number(v.toPrecision(6))));

export function AlertRulesPage({ route, user }: { route: AlertsRoute; user: CurrentUser | null }) {
  const { projectId, kind, runId } = route;
  const run: RunRef = useMemo(() => ({ projectId, kind, runId }), [projectId, kind, runId]);
  const prefill = useMemo(() => parsePrefill(route.search), [route.search]);
  const project = useApi(() => getProject(projectId), [projectId]);
  const runs = useApi(() => listRuns(projectId, kind), [projectId, kind]);
  const rules = useApi(() => listRules(run), [run]);
  const channels = useApi(() => listChannels(), []);
  const [formOpen, setFormOpen] = useState(prefill.open);
  const [actionError, setActionError] = useState<unknown>(null);
  const admin = user?.role === "admin";
  const runName = runs.data?.find((r) => r.id === runId)?.name;

  const act = async (work: () => Promise<unknown>) => {
    setActionError(null);
    try {
      await work();
      rules.reload();
    } catch (error) {
      setActionError(error);
    }
  };

  return (
    <main class="page page-wide alerts-page">
      <nav class="breadcrumbs" aria-label="Breadcrumbs">
        <Link href="/">Projects</Link> / <span>{project.data?.name ?? "…"}</span> /{" "}
        <span>
          {kind === "log_streams" ? "log stream" : "experiment"} {runName ?? runId.slice(0, 8)}
        </span>
      </nav>
      <nav class="tabs" aria-label="Run views">
        <Link href={hrefOf({ view: "dashboard", projectId, kind, runId, search: "" })}>Dashboard</Link>
        <Link href={hrefOf({ view: "records", projectId, kind, runId, family: "traces", table: emptyTable() })}>Traces</Link>
        <Link href={hrefOf({ view: "alerts", projectId, kind, runId, search: "" })} aria-current="page">
          Alerts
        </Link>
      </nav>
      <h1>Alert rules</h1>
      <p class="muted">
        Evaluated every minute they are due, over the window ending at that minute, with the numbers of the dashboard. Notifications go to the{" "}
        <Link href="/alert-channels">channels</Link> on each change of state.
      </p>
      {actionError ? <ErrorNotice error={actionError} /> : null}
      {admin && !formOpen ? (
        <button type="button" onClick={() => setFormOpen(true)}>
          New rule
        </button>
      ) : null}
      {admin && formOpen ? (
        <RuleForm
          initial={prefill.fields}
          channels={channels.data ?? []}
          onCancel={() => setFormOpen(false)}
          onCreate={async (fields) => {
            await createRule(run, fields);
            setFormOpen(false);
            rules.reload();
          }}
        />
      ) : null}
      {rules.error ? <ErrorNotice error={rules.error} onRetry={rules.reload} /> : null}
      {rules.data && rules.data.length === 0 ? <p class="muted" data-testid="no-rules">No alert rule watches this run yet.</p> : null}
      {rules.data && rules.data.length > 0 ? (
        <table class="alert-list" aria-label="Alert rules">
          <thead>
            <tr>
              <th>Rule</th>
              <th>Condition</th>
              <th>State</th>
              <th>Last value</th>
              <th>Evaluated</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {rules.data.map((rule) => (
              <RuleRow key={rule.id} rule={rule} run={run} admin={admin} act={act} />
            ))}
          </tbody>
        </table>
      ) : null}
    </main>
  );
}

function RuleRow({ rule, run, admin, act }: { rule: Rule; run: RunRef; admin: boolean; act: (work: () => Promise<unknown>) => Promise<void> }) {
  const [open, setOpen] = useState(false);
  const history = useApi(() => (open ? ruleHistory(run, rule.id) : Promise.resolve([])), [open, rule.id, rule.state]);
  return (
    <>
      <tr data-rule={rule.name}>
        <td>
          <button type="button" class="link-button" aria-expanded={open} onClick={() => setOpen(!open)}>
            {rule.name}
          </button>
          {rule.enabled ? null : <span class="muted"> (off)</span>}
        </td>
        <td>
          <code>{rule.metric}</code> {SYMBOL[rule.comparison]} {rule.threshold}
          {rule.warning_threshold !== null ? `, warning ${SYMBOL[rule.comparison]} ${rule.warning_threshold}` : ""} over {rule.window_minutes} min
          {rule.filters.length > 0 ? <span class="muted"> ({rule.filters.length} filter{rule.filters.length > 1 ? "s" : ""})</span> : null}
        </td>
        <td>
          <span class="state-badge" data-state={rule.state}>
            {rule.state}
          </span>
          <div class="muted">since {time(rule.state_since)}</div>
        </td>
        <td>{rule.last_evaluated_at ? shownValue(rule.last_value) : "—"}</td>
        <td>
          {time(rule.last_evaluated_at)}
          {rule.last_error ? <div class="error-text">{rule.last_error}</div> : null}
        </td>
        <td>
          {admin ? (
            <>
              <button type="button" class="button-small" onClick={() => act(() => patchRule(run, rule.id, { enabled: !rule.enabled }))}>
                {rule.enabled ? "Switch off" : "Switch on"}
              </button>{" "}
              <button type="button" class="button-small" onClick={() => confirm(`Delete the rule "${rule.name}" and its history?`) && act(() => deleteRule(run, rule.id))}>
                Delete
              </button>
            </>
          ) : null}
        </td>
      </tr>
      {open ? (
        <tr>
          <td colSpan={6}>
            {history.error ? <ErrorNotice error={history.error} onRetry={history.reload} /> : null}
            {history.data && history.data.length === 0 ? <p class="muted">No change of state yet.</p> : null}
            {history.data && history.data.length > 0 ? (
              <table class="alert-list" aria-label={`History of ${rule.name}`}>
                <thead>
                  <tr>
                    <th>At</th>
                    <th>Change</th>
                    <th>Value</th>
                    <th>Window</th>
                  </tr>
                </thead>
                <tbody>
                  {history.data.map((h) => (
                    <tr key={h.at}>
                      <td>{time(h.at)}</td>
                      <td>
                        {h.previous_state} → <span class="state-badge" data-state={h.state}>{h.state}</span>
                      </td>
                      <td>{shownValue(h.value)}</td>
                      <td>
                        {time(h.window_start)} – {time(h.window_end)}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            ) : null}
          </td>
        </tr>
      ) : null}
    </>
  );
}

function RuleForm({ initial, channels, onCreate, onCancel }: { initial: Partial<RuleFields>; channels: { id: string; name: string; enabled: boolean }[]; onCreate: (fields: RuleFields) => Promise<void>; onCancel: () => void }) {
  const [fields, setFields] = useState<RuleFields>({
    name: initial.name ?? "",
    metric: initial.metric ?? "error_rate",
    filters: initial.filters ?? [],
    window_minutes: initial.window_minutes ?? 15,
    comparison: initial.comparison ?? "gt",
    threshold: initial.threshold ?? 0,
    warning_threshold: null,
    evaluate_every_minutes: 5,
    no_data: "ok",
    renotify_minutes: null,
    channel_ids: [],
    enabled: true,
  });
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const set = (change: Partial<RuleFields>) => setFields({ ...fields, ...change });
  const num = (text: string) => (text.trim() === "" ? null : Number(text));
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await onCreate(fields);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const metrics = METRIC_CHOICES.includes(fields.metric) ? METRIC_CHOICES : [fields.metric, ...METRIC_CHOICES];
  return (
    <form class="card alert-form" aria-label="New alert rule" onSubmit={submit}>
      <label class="wide">
        Name
        <input required value={fields.name} onInput={(e) => set({ name: e.currentTarget.value })} />
      </label>
      <label>
        Metric
        <select value={fields.metric} onChange={(e) => set({ metric: e.currentTarget.value })}>
          {metrics.map((m) => (
            <option key={m} value={m}>
              {m}
            </option>
          ))}
        </select>
      </label>
      <label>
        Comparison
        <select value={fields.comparison} onChange={(e) => set({ comparison: e.currentTarget.value as Comparison })}>
          <option value="gt">above (&gt;)</option>
          <option value="gte">at or above (≥)</option>
          <option value="lt">below (&lt;)</option>
          <option value="lte">at or below (≤)</option>
        </select>
      </label>
      <label>
        Threshold
        <input type="number" step="any" required value={fields.threshold} onInput={(e) => set({ threshold: Number(e.currentTarget.value) })} />
      </label>
      <label>
        Warning threshold
        <input type="number" step="any" value={fields.warning_threshold ?? ""} onInput={(e) => set({ warning_threshold: num(e.currentTarget.value) })} />
      </label>
      <label>
        Window (minutes)
        <input type="number" min={5} max={1440} value={fields.window_minutes} onInput={(e) => set({ window_minutes: Number(e.currentTarget.value) })} />
      </label>
      <label>
        Evaluate every (minutes)
        <input type="number" min={1} max={60} value={fields.evaluate_every_minutes} onInput={(e) => set({ evaluate_every_minutes: Number(e.currentTarget.value) })} />
      </label>
      <label>
        No data
        <select value={fields.no_data} onChange={(e) => set({ no_data: e.currentTarget.value as RuleFields["no_data"] })}>
          <option value="ok">counts as ok</option>
          <option value="alert">fires</option>
          <option value="keep">keeps the state</option>
        </select>
      </label>
      <label>
        Notify again while firing (minutes)
        <input type="number" min={1} placeholder="never" value={fields.renotify_minutes ?? ""} onInput={(e) => set({ renotify_minutes: num(e.currentTarget.value) })} />
      </label>
      {fields.filters.length > 0 ? (
        <p class="wide muted" data-testid="rule-filters">
          Filter: <code>{JSON.stringify(fields.filters)}</code>
        </p>
      ) : null}
      <fieldset class="wide">
        <legend>Channels</legend>
        {channels.length === 0 ? (
          <p class="muted">
            No channel yet: <Link href="/alert-channels">add one</Link> first.
          </p>
        ) : null}
        {channels.map((c) => (
          <label key={c.id}>
            <input
              type="checkbox"
              checked={fields.channel_ids.includes(c.id)}
              onChange={(e) => set({ channel_ids: e.currentTarget.checked ? [...fields.channel_ids, c.id] : fields.channel_ids.filter((id) => id !== c.id) })}
            />
            {c.name}
            {c.enabled ? "" : " (disabled)"}
          </label>
        ))}
      </fieldset>
      {error ? (
        <div class="wide">
          <ErrorNotice error={error} />
        </div>
      ) : null}
      <div class="wide">
        <button type="submit" disabled={busy}>
          Create the rule
        </button>{" "}
        <button type="button" class="button-small" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
