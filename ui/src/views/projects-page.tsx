/** The organization's projects, then a project's log streams and experiments. */
import { listProjects, listRuns, getProject } from "../api/endpoints";
import type { Project, Run, RunKind } from "../api/types";
import { formatDateTime } from "../format/values";
import { Link } from "../routing/navigation";
import { emptyTable, hrefOf } from "../routing/routes";
import { ErrorNotice } from "./error-notice";
import { useApi } from "./use-api";

export function ProjectsPage() {
  const projects = useApi(listProjects, []);
  return (
    <main class="page">
      <h1>Projects</h1>
      {projects.error ? <ErrorNotice error={projects.error} onRetry={projects.reload} /> : null}
      {projects.loading && !projects.data ? <p class="muted">Loading…</p> : null}
      {projects.data && projects.data.length === 0 ? <p class="muted">No projects yet. Log a trace with the API or the galileo SDK to create one.</p> : null}
      <ul class="card-list" aria-label="Projects">
        {projects.data?.map((p: Project) => (
          <li key={p.id}>
            <Link class="card card-link" href={hrefOf({ view: "project", projectId: p.id })}>
              <strong>{p.name}</strong>
              <span class="muted mono">{p.id}</span>
              {p.created_at ? <span class="muted">created {formatDateTime(p.created_at)}</span> : null}
            </Link>
          </li>
        ))}
      </ul>
    </main>
  );
}

function RunList({ projectId, kind, title }: { projectId: string; kind: RunKind; title: string }) {
  const runs = useApi(() => listRuns(projectId, kind), [projectId, kind]);
  return (
    <section aria-label={title}>
      <h2>{title}</h2>
      {runs.error ? <ErrorNotice error={runs.error} onRetry={runs.reload} /> : null}
      {runs.data && runs.data.length === 0 ? <p class="muted">None.</p> : null}
      <ul class="card-list">
        {runs.data?.map((run: Run) => (
          <li key={run.id}>
            <Link class="card card-link" href={hrefOf({ view: "records", projectId, kind, runId: run.id, family: "traces", table: emptyTable() })}>
              <strong>{run.name}</strong>
              <span class="muted mono">{run.id}</span>
            </Link>
          </li>
        ))}
      </ul>
    </section>
  );
}

export function ProjectPage({ projectId }: { projectId: string }) {
  const project = useApi(() => getProject(projectId), [projectId]);
  return (
    <main class="page">
      <nav class="breadcrumbs" aria-label="Breadcrumbs">
        <Link href="/">Projects</Link> / <span>{project.data?.name ?? "…"}</span>
      </nav>
      <h1>{project.data?.name ?? "Project"}</h1>
      {project.error ? <ErrorNotice error={project.error} onRetry={project.reload} /> : null}
      <div class="columns-2">
        <RunList projectId={projectId} kind="log_streams" title="Log streams" />
        <RunList projectId={projectId} kind="experiments" title="Experiments" />
      </div>
    </main>
  );
}
