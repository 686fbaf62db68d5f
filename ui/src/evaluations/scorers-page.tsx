/**
 * The organization's scorers (docs/evaluations.md): each with its current version, its counts by
 * status and its last error (so nothing waits without saying why). Admins create one from a
 * preset or a judge prompt, test it on a chosen record of a log stream (the result shown, stored
 * nowhere), enable it on a log stream with a sampling rate, and backfill it over the last hours.
 * Members see them.
 */
import { useState } from "preact/hooks";
import type { CurrentUser } from "../api/types";
import { ErrorNotice } from "../views/error-notice";
import { listProjects, listRuns, partialSearch } from "../api/endpoints";
import type { Family } from "../api/types";
import { ScoreRow } from "../trace/record-detail";
import { useApi } from "../views/use-api";
import { addLlmVersion, addPresetVersion, backfill, createScorer, deleteScorer, getRunSettings, getScorer, listScorers, PRESET_EXAMPLES, PRESETS, putRunSettings, type Scorer, type ScorerTestAnswer, testScorer } from "./scorers-api";

export function ScorersPage({ user }: { user: CurrentUser | null }) {
  const scorers = useApi(() => listScorers().then((list) => Promise.all(list.map((s) => getScorer(s.id)))), []);
  const [error, setError] = useState<unknown>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const admin = user?.role === "admin";
  const act = async (work: () => Promise<unknown>, done?: string) => {
    setError(null);
    setNotice(null);
    try {
      await work();
      if (done) setNotice(done);
      scorers.reload();
    } catch (err) {
      setError(err);
    }
  };
  return (
    <main class="page scorers-page">
      <h1>Scorers</h1>
      <p class="muted">Scorers judge new records after they are stored: a preset computed in the service, or an LLM judge. Their values are metrics of the records, filterable, sortable and charted like any other.</p>
      {error ? <ErrorNotice error={error} /> : null}
      {notice ? <p role="status">{notice}</p> : null}
      {admin ? <NewScorer onCreated={() => scorers.reload()} /> : null}
      {scorers.error ? <ErrorNotice error={scorers.error} onRetry={scorers.reload} /> : null}
      {scorers.data?.length === 0 ? <p class="muted">No scorer yet.</p> : null}
      {scorers.data?.map((scorer) => (
        <section key={scorer.id} class="card" aria-label={`Scorer ${scorer.name}`} data-scorer={scorer.name}>
          <h2>
            {scorer.name} <span class="muted">({scorer.scorer_type === "llm" ? "LLM judge" : `preset ${scorer.latest_version?.preset?.name ?? ""}`}, {scorer.output_type})</span>
          </h2>
          <p class="muted">
            Version {scorer.latest_version?.version ?? "none"} · scores {scorer.scoreable_node_types.join(", ")} · budget {scorer.daily_budget} judge calls a day
          </p>
          {scorer.counts ? (
            <p data-testid="scorer-counts">
              {scorer.counts.success} scored · {scorer.counts.pending} pending · {scorer.counts.error} in error
            </p>
          ) : null}
          {scorer.last_error ? (
            <p class="error-text" data-testid="scorer-last-error">
              Last error ({new Date(scorer.last_error.at).toLocaleString()}, record <code>{scorer.last_error.record_id}</code>): {scorer.last_error.message}
            </p>
          ) : null}
          {admin && scorer.latest_version ? <TestOnRecord scorer={scorer} /> : null}
          {admin ? <EnableOnRun scorer={scorer} act={act} /> : null}
          {admin ? (
            <button type="button" class="button-small" onClick={() => confirm(`Delete the scorer "${scorer.name}"? Stored values stay on the records.`) && act(() => deleteScorer(scorer.id))}>
              Delete
            </button>
          ) : null}
        </section>
      ))}
    </main>
  );
}

function NewScorer({ onCreated }: { onCreated: () => void }) {
  const [name, setName] = useState("");
  const [kind, setKind] = useState<"preset" | "llm">("preset");
  const [preset, setPreset] = useState<(typeof PRESETS)[number]>("contains");
  const [params, setParams] = useState(JSON.stringify(PRESET_EXAMPLES.contains));
  const [nodeTypes, setNodeTypes] = useState("llm");
  const [prompt, setPrompt] = useState("Is this answer helpful? {output}");
  const [model, setModel] = useState("gpt-4o-mini");
  const [judges, setJudges] = useState(1);
  const [error, setError] = useState<unknown>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(null);
    try {
      const parsedParams = kind === "preset" ? (JSON.parse(params) as unknown) : null;
      const scorer = await createScorer({ name, scorer_type: kind, output_type: kind === "preset" && preset === "length" ? "count" : "boolean", scoreable_node_types: nodeTypes.split(",").map((t) => t.trim()).filter(Boolean) });
      if (kind === "preset") await addPresetVersion(scorer.id, preset, parsedParams);
      else await addLlmVersion(scorer.id, { instructions: "", user_prompt: prompt, model_name: model, num_judges: judges });
      setName("");
      onCreated();
    } catch (err) {
      setError(err instanceof SyntaxError ? new Error(`The params are not JSON: ${err.message}`) : err);
    }
  };
  return (
    <form class="card alert-form" aria-label="New scorer" onSubmit={submit}>
      <label>
        Name
        <input required pattern="[a-z][a-z0-9_]{0,63}" value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </label>
      <label>
        Kind
        <select value={kind} onChange={(e) => setKind(e.currentTarget.value as "preset" | "llm")}>
          <option value="preset">Preset</option>
          <option value="llm">LLM judge</option>
        </select>
      </label>
      <label>
        Node types
        <input value={nodeTypes} onInput={(e) => setNodeTypes(e.currentTarget.value)} />
      </label>
      {kind === "preset" ? (
        <>
          <label>
            Preset
            <select
              value={preset}
              onChange={(e) => {
                const next = e.currentTarget.value as (typeof PRESETS)[number];
                setPreset(next);
                setParams(JSON.stringify(PRESET_EXAMPLES[next]));
              }}
            >
              {PRESETS.map((p) => (
                <option key={p} value={p}>
                  {p}
                </option>
              ))}
            </select>
          </label>
          <label class="wide">
            Params (JSON)
            <textarea rows={3} value={params} onInput={(e) => setParams(e.currentTarget.value)} />
          </label>
        </>
      ) : (
        <>
          <label class="wide">
            Prompt ({"{input}"}, {"{output}"}, {"{metadata.KEY}"}, {"{name}"}, {"{model}"})
            <textarea rows={3} value={prompt} onInput={(e) => setPrompt(e.currentTarget.value)} />
          </label>
          <label>
            Model
            <input value={model} onInput={(e) => setModel(e.currentTarget.value)} />
          </label>
          <label>
            Judges
            <input type="number" min={1} max={5} value={judges} onInput={(e) => setJudges(Number(e.currentTarget.value))} />
          </label>
        </>
      )}
      {error ? (
        <div class="wide">
          <ErrorNotice error={error} />
        </div>
      ) : null}
      <div class="wide">
        <button type="submit">Create the scorer</button>
      </div>
    </form>
  );
}

/**
 * Adds the scorer to a log stream's settings with a sampling rate, and optionally backfills the
 * last 24 hours. The project and the log stream are picked from lists (never typed ids). The
 * other scorers of the run keep their entries as they were (filters and node types included), and
 * the segments with a filter keep theirs: the rate given here is the run's default segment (the
 * one without a filter), as the contract's `segment_filters` model sampling per run; a record
 * outside every segment is not scored, so that default segment is kept beside filtered ones.
 */
function EnableOnRun({ scorer, act }: { scorer: Scorer; act: (work: () => Promise<unknown>, done?: string) => Promise<void> }) {
  const [projectId, setProjectId] = useState("");
  const [runId, setRunId] = useState("");
  const [rate, setRate] = useState(1);
  const projects = useApi(() => listProjects(), []);
  const runs = useApi(() => (projectId ? listRuns(projectId, "log_streams") : Promise.resolve([])), [projectId]);
  const enable = (e: Event) => {
    e.preventDefault();
    void act(async () => {
      const current = await getRunSettings(projectId, runId);
      const kept = current.scorers.filter((s) => s.id !== scorer.id).map((s) => ({ id: s.id, filters: s.filters, ...(s.scoreable_node_types ? { scoreable_node_types: s.scoreable_node_types } : {}) }));
      const filtered = current.segment_filters.filter((segment) => segment.filter != null);
      await putRunSettings(projectId, runId, {
        scorers: [...kept, { id: scorer.id }],
        // Beside filtered segments a record outside them is not scored: the default segment
        // (no filter) carries the rate, even 1, whenever there are any.
        segment_filters: rate < 1 || filtered.length > 0 ? [...filtered, { sample_rate: rate }] : [],
      });
    }, `${scorer.name} now scores new records of that log stream.`);
  };
  const fill = () =>
    act(
      () => backfill(projectId, runId, { start_time: new Date(Date.now() - 86_400_000).toISOString(), end_time: new Date().toISOString(), scorer_ids: [scorer.id] }),
      `A backfill of the last 24 hours was queued for ${scorer.name}.`,
    );
  return (
    <details>
      <summary>Enable on a log stream</summary>
      <form class="alert-form" aria-label={`Enable ${scorer.name}`} onSubmit={enable}>
        <LogStreamPicker projects={projects.data} runs={runs.data} projectId={projectId} runId={runId} onProject={(id) => (setProjectId(id), setRunId(""))} onRun={setRunId} />
        <label>
          Sampling rate
          <input type="number" min={0} max={1} step={0.01} value={rate} onInput={(e) => setRate(Number(e.currentTarget.value))} />
        </label>
        <div class="wide">
          <button type="submit">Enable</button>{" "}
          <button type="button" class="button-small" disabled={!projectId || !runId} onClick={fill}>
            Backfill the last 24 hours
          </button>
        </div>
      </form>
    </details>
  );
}

/** The family whose records the scorer scores first (its first node type): the records offered for a test. */
/** A project, then one of its log streams: the two selects the enable and test forms share. */
function LogStreamPicker(props: {
  projects: { id: string; name: string }[] | undefined;
  runs: { id: string; name: string }[] | undefined;
  projectId: string;
  runId: string;
  onProject: (id: string) => void;
  onRun: (id: string) => void;
}) {
  return (
    <>
      <label>
        Project
        <select required value={props.projectId} onChange={(e) => props.onProject(e.currentTarget.value)}>
          <option value="">Choose a project</option>
          {props.projects?.map((p) => (
            <option key={p.id} value={p.id}>
              {p.name}
            </option>
          ))}
        </select>
      </label>
      <label>
        Log stream
        <select required value={props.runId} disabled={!props.projectId} onChange={(e) => props.onRun(e.currentTarget.value)}>
          <option value="">Choose a log stream</option>
          {props.runs?.map((r) => (
            <option key={r.id} value={r.id}>
              {r.name}
            </option>
          ))}
        </select>
      </label>
    </>
  );
}

function familyOf(scorer: Scorer): Family {
  const first = scorer.scoreable_node_types[0];
  return first === "trace" ? "traces" : first === "session" ? "sessions" : "spans";
}

/**
 * Runs the scorer's current version on one record chosen from a log stream's latest records
 * (or given by id), before enabling it anywhere: the value, the status, the judge's explanation
 * or why it was not scored. Nothing is stored; a judge's call is a real one (paced, and it may
 * cost), so admins only, as the API.
 */
function TestOnRecord({ scorer }: { scorer: Scorer }) {
  const [open, setOpen] = useState(false);
  const [projectId, setProjectId] = useState("");
  const [runId, setRunId] = useState("");
  const [recordId, setRecordId] = useState("");
  const [running, setRunning] = useState(false);
  const [answer, setAnswer] = useState<ScorerTestAnswer | null>(null);
  const [error, setError] = useState<unknown>(null);
  const family = familyOf(scorer);
  const projects = useApi(() => (open ? listProjects() : Promise.resolve([])), [open]);
  const runs = useApi(() => (projectId ? listRuns(projectId, "log_streams") : Promise.resolve([])), [projectId]);
  const records = useApi(
    () =>
      projectId && runId
        ? partialSearch({ projectId, kind: "log_streams", runId }, family, { filterTree: null, sort: { column: "created_at", ascending: false }, offset: 0, limit: 25, columns: ["name", "created_at"] }).then((a) => a.records)
        : Promise.resolve([]),
    [projectId, runId, family],
  );
  const run = async (e: Event) => {
    e.preventDefault();
    setError(null);
    setAnswer(null);
    setRunning(true);
    try {
      setAnswer(await testScorer(scorer.id, projectId, recordId.trim()));
    } catch (err) {
      setError(err);
    } finally {
      setRunning(false);
    }
  };
  return (
    <details onToggle={(e) => setOpen((e.currentTarget as HTMLDetailsElement).open)}>
      <summary>Test on a record</summary>
      <form class="alert-form" aria-label={`Test ${scorer.name}`} onSubmit={run}>
        <LogStreamPicker
          projects={projects.data}
          runs={runs.data}
          projectId={projectId}
          runId={runId}
          onProject={(id) => (setProjectId(id), setRunId(""), setRecordId(""))}
          onRun={(id) => (setRunId(id), setRecordId(""))}
        />
        <label class="wide">
          Record ({family}, latest first)
          <select required value={recordId} disabled={!runId} onChange={(e) => setRecordId(e.currentTarget.value)}>
            <option value="">{records.data && records.data.length === 0 && runId ? `No ${family} in this log stream` : "Choose a record"}</option>
            {records.data?.map((r) => (
              <option key={r.id} value={r.id}>
                {String(r.name ?? "(unnamed)")} · {r.type} · {r.id}
              </option>
            ))}
          </select>
        </label>
        {records.error ? (
          <div class="wide">
            <ErrorNotice error={records.error} onRetry={records.reload} />
          </div>
        ) : null}
        <div class="wide">
          <button type="submit" disabled={!recordId || running}>
            {running ? "Running…" : "Run the test"}
          </button>{" "}
          <span class="muted small">Nothing is stored{scorer.scorer_type === "llm" ? "; the judge is called for real (paced, not counted in the daily budget)" : ""}.</span>
        </div>
        {error ? (
          <div class="wide">
            <ErrorNotice error={error} />
          </div>
        ) : null}
        {answer ? (
          <div class="wide" data-testid="scorer-test-result">
            <p class="muted small">
              Version {answer.version} on record <code>{answer.record_id}</code>:
            </p>
            <table class="kv scores">
              <tbody>
                <ScoreRow name={scorer.name} score={{ ...answer.result, scorer_id: answer.scorer_id }} />
              </tbody>
            </table>
          </div>
        ) : null}
      </form>
    </details>
  );
}
