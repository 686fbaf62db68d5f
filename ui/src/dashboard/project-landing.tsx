/**
 * Opening a project: straight to the dashboard of the run written to last (a project's log
 * streams and experiments are one click away from there, in its run picker).
 *
 * No route says when a run was last written, so the page asks each candidate run for its newest
 * trace (a one-row `partial_search` sorted by `created_at`, which the `(run, created_at)` index
 * answers without a scan). Candidates: the MAX_PROBED_RUNS runs created last, log streams and
 * experiments together; a run older than that which is still written to is not found (its
 * dashboard is one choice away in the picker). When no candidate has a trace, the run created
 * last is opened.
 */
import { useEffect, useState } from "preact/hooks";
import { getProject, listRuns, partialSearch } from "../api/endpoints";
import type { Run, RunKind } from "../api/types";
import { Link, navigate } from "../routing/navigation";
import { hrefOf } from "../routing/routes";
import { ErrorNotice } from "../views/error-notice";
import { useApi } from "../views/use-api";

const MAX_PROBED_RUNS = 20;

interface Candidate {
  kind: RunKind;
  run: Run;
}

async function newestTraceMs(projectId: string, { kind, run }: Candidate): Promise<number> {
  const answer = await partialSearch({ projectId, kind, runId: run.id }, "traces", {
    filterTree: null,
    sort: { column: "created_at", ascending: false },
    offset: 0,
    limit: 1,
    columns: ["created_at"],
  });
  const created = answer.records[0]?.created_at;
  return typeof created === "string" ? Date.parse(created) : -Infinity;
}

/** The run written to last, or null when the project has no run. */
export async function latestRun(projectId: string): Promise<Candidate | null> {
  const [logStreams, experiments] = await Promise.all([listRuns(projectId, "log_streams"), listRuns(projectId, "experiments")]);
  const created = (c: Candidate) => Date.parse(c.run.created_at ?? "") || 0;
  const candidates = [
    ...logStreams.map((run) => ({ kind: "log_streams" as const, run })),
    ...experiments.map((run) => ({ kind: "experiments" as const, run })),
  ]
    .sort((a, b) => created(b) - created(a))
    .slice(0, MAX_PROBED_RUNS);
  if (candidates.length <= 1) return candidates[0] ?? null;
  const newest = await Promise.all(candidates.map((c) => newestTraceMs(projectId, c)));
  let best = 0;
  // Ties (no trace anywhere included) go to the run created last, first in the list.
  newest.forEach((ms, i) => {
    if (ms > newest[best]!) best = i;
  });
  return candidates[best]!;
}

export function ProjectLanding({ projectId }: { projectId: string }) {
  const project = useApi(() => getProject(projectId), [projectId]);
  const [empty, setEmpty] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [attempt, setAttempt] = useState(0);
  useEffect(() => {
    let current = true;
    setError(null);
    latestRun(projectId).then(
      (found) => {
        if (!current) return;
        if (found) navigate(hrefOf({ view: "dashboard", projectId, kind: found.kind, runId: found.run.id, search: "" }), { replace: true });
        else setEmpty(true);
      },
      (caught: unknown) => current && setError(caught),
    );
    return () => {
      current = false;
    };
  }, [projectId, attempt]);
  return (
    <main class="page">
      <nav class="breadcrumbs" aria-label="Breadcrumbs">
        <Link href="/">Projects</Link> / <span>{project.data?.name ?? "…"}</span>
      </nav>
      <h1>{project.data?.name ?? "Project"}</h1>
      {error ? <ErrorNotice error={error} onRetry={() => setAttempt((n) => n + 1)} /> : null}
      {empty ? <p class="muted">No log streams or experiments yet. Log a trace with the API or the galileo SDK to create one.</p> : error ? null : <p class="muted">Opening the latest run…</p>}
    </main>
  );
}
