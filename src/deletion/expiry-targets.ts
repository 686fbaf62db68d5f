/**
 * A retention change reaches an expiry already running (contract section 12): before each chunk
 * the job's projects are read again from the catalog, and a project whose retention became null
 * (keep for ever) or was removed leaves the job, while one whose retention grew has its cut-off
 * moved back by the days it gained. A shorter retention does not hurry a running job: the next
 * hourly run erases the rest. One catalog query per chunk, by primary key.
 */
import type { DeletionJob, ExpiringProject } from "./deletion-job-types";

const MICROS_PER_DAY = 86_400_000_000;

const CURRENT_RETENTION = `SELECT id, retention_days FROM projects WHERE id IN (SELECT value FROM json_each(?1)) AND organization_id = ?2`;

type ExpiryJob = Extract<DeletionJob, { kind: "expiry" }>;

/** The job's projects under the retention each has now (pure: `current` maps project id to its retention). */
export function retargetExpiry(projects: readonly ExpiringProject[], current: ReadonlyMap<string, number | null>): ExpiringProject[] {
  return projects.flatMap((p) => {
    const days = current.get(p.project_id);
    if (days === null || days === undefined) return [];
    if (days <= p.retention_days) return [p];
    return [{ project_id: p.project_id, retention_days: days, cutoff: p.cutoff - (days - p.retention_days) * MICROS_PER_DAY }];
  });
}

export async function currentExpiryJob(catalog: D1Database, job: ExpiryJob): Promise<ExpiryJob> {
  const ids = JSON.stringify(job.projects.map((p) => p.project_id));
  const { results } = await catalog.prepare(CURRENT_RETENTION).bind(ids, job.organizationId).all<{ id: string; retention_days: number | null }>();
  const current = new Map(results.map((row) => [row.id, row.retention_days]));
  return { ...job, projects: retargetExpiry(job.projects, current) };
}
