/** The organization's projects (opening one lands on its dashboard: ui/src/dashboard/project-landing.tsx). */
import { listProjects } from "../api/endpoints";
import type { Project } from "../api/types";
import { formatDateTime } from "../format/values";
import { Link } from "../routing/navigation";
import { hrefOf } from "../routing/routes";
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
            <Link class="button-small" href={hrefOf({ view: "redaction", projectId: p.id })} data-testid="project-redaction">
              Redaction
            </Link>
          </li>
        ))}
      </ul>
    </main>
  );
}
