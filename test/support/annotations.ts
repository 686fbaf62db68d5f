import { call } from "./client";
import type { Tenant } from "./tenants";

export interface AnnotatedProject {
  projectId: string;
  runId: string;
}

/** A fresh project with one log stream. */
export async function createProjectWithRun(tenant: Tenant): Promise<AnnotatedProject> {
  const project = await call("/v2/projects", { as: tenant, body: { name: `annotations-${crypto.randomUUID()}` } });
  if (project.status !== 200) throw new Error(`project: ${project.status} ${JSON.stringify(project.body)}`);
  const run = await call(`/v2/projects/${project.body.id}/log_streams`, { as: tenant, body: { name: "stream" } });
  if (run.status !== 200) throw new Error(`run: ${run.status} ${JSON.stringify(run.body)}`);
  return { projectId: project.body.id, runId: run.body.id };
}

/** Creates a template; throws on anything but 200. */
export async function createTemplate(tenant: Tenant, projectId: string, constraints: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<any> {
  const answer = await call(`/v2/projects/${projectId}/annotation/templates`, {
    as: tenant,
    body: { name: `${String(constraints.annotation_type)}-${crypto.randomUUID().slice(0, 8)}`, constraints, ...extra },
  });
  if (answer.status !== 200) throw new Error(`template: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body;
}

export function ratingPath(projectId: string, templateId: string, recordId: string): string {
  return `/v2/projects/${projectId}/annotation/templates/${templateId}/records/${recordId}/rating`;
}

/** Puts a rating; throws on anything but 200. */
export async function rate(tenant: Tenant, projectId: string, templateId: string, recordId: string, rating: Record<string, unknown>, explanation?: string): Promise<any> {
  const answer = await call(ratingPath(projectId, templateId, recordId), { as: tenant, method: "PUT", body: { rating, ...(explanation === undefined ? {} : { explanation }) } });
  if (answer.status !== 200) throw new Error(`rating: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body;
}

/** Ingests traces (each with one llm span) into the run; answers their ids and their spans' ids. */
export async function ingestTraces(tenant: Tenant, project: AnnotatedProject, count: number, extra: (i: number) => Record<string, unknown> = () => ({})): Promise<{ traces: string[]; spans: string[] }> {
  const traces = Array.from({ length: count }, () => crypto.randomUUID());
  const spans = Array.from({ length: count }, () => crypto.randomUUID());
  const base = Date.parse("2026-11-01T00:00:00Z");
  const answer = await call(`/v2/projects/${project.projectId}/traces`, {
    as: tenant,
    body: {
      log_stream_id: project.runId,
      traces: traces.map((id, i) => ({
        id,
        name: `trace ${i}`,
        input: `question ${i}`,
        output: `answer ${i}`,
        created_at: new Date(base + i * 1000).toISOString(),
        ...extra(i),
        spans: [{ id: spans[i], type: "llm", name: "llm", input: "hi", output: "there", created_at: new Date(base + i * 1000 + 1).toISOString() }],
      })),
    },
  });
  if (answer.status !== 200) throw new Error(`ingest: ${answer.status} ${JSON.stringify(answer.body)}`);
  return { traces, spans };
}
