/**
 * The cron's half of retention (docs/retention.md): once an hour, find the projects that have
 * records older than their retention and hand their erasure to the deletion queue, as one
 * `expire_retention` job per organization (visible at `GET /v2/org-jobs`), in one part per
 * database that holds such projects. The deletion engine does the rest (src/deletion/expiry-sql.ts):
 * bounded chunks, retries, the dead-letter queue, progress summed over the parts.
 *
 * Cost per run: one catalog query for the projects with a retention (`projects_retention`), one
 * for the organizations whose last expiry still runs (`org_jobs_active`: they are skipped this
 * hour, so a slow expiry never piles up jobs), then one query per shard and TARGETS_PER_QUERY
 * projects asking which of them hold anything expired (an index probe per run), and a write per
 * organization that has something to erase.
 */
import { nowMicros as currentMicros } from "../db/client";
import type { ExpiringProject } from "../deletion/deletion-job-types";
import { EXPIRE_RETENTION, insertOrgJob } from "../deletion/deletion-jobs";
import { enqueueJob } from "../deletion/start-deletion";
import { PROJECTS_WITH_EXPIRED_DATA } from "../deletion/expiry-sql";
import type { Env } from "../env";
import { CATALOG_SHARD, shardDatabase } from "../shards/shard-config";
import { type PartitionErasureOutcome, eraseExpiredPartitions } from "./erase-expired-partitions";
import { retentionCutoffMicros } from "./retention-policy";

/** The job's submitter, as `created_by` shows it: no person asked for it. */
export const RETENTION_SUBMITTER = "system:retention";

/** Projects per "which of these have expired data" query: one JSON parameter, bounded work. */
const TARGETS_PER_QUERY = 200;

interface RetainedProject {
  id: string;
  organization_id: string;
  shard: string;
  retention_days: number;
}

export interface ExpiryScheduleOutcome {
  /** Jobs created, one per organization with something expired. */
  jobs: { jobId: string; organizationId: string; projects: number; shards: string[] }[];
  /** Organizations skipped because their previous expiry is still running. */
  busyOrganizations: number;
  /** Closed partitions wholly past their cut-off, erased as a unit before this (erase-expired-partitions.ts); null if that step failed. */
  partitions: PartitionErasureOutcome | null;
}

/**
 * Each project with a retention, once per database holding its records: its own shard, and the
 * shard of each of its partitions (docs/partitions.md; `project_partitions_project_seq` serves
 * the join by project).
 */
const RETAINED_PROJECTS = `
SELECT id, organization_id, coalesce(shard, '${CATALOG_SHARD}') AS shard, retention_days
FROM projects WHERE retention_days IS NOT NULL
UNION
SELECT p.id, p.organization_id, pp.shard, p.retention_days
FROM projects AS p CROSS JOIN project_partitions AS pp ON pp.project_id = p.id
WHERE p.retention_days IS NOT NULL
ORDER BY 2, 1, 3`;

const BUSY_ORGANIZATIONS = `
SELECT DISTINCT organization_id FROM org_jobs WHERE job_name = '${EXPIRE_RETENTION}' AND status IN ('queued', 'running')`;

function chunked<T>(items: readonly T[], size: number): T[][] {
  const chunks: T[][] = [];
  for (let i = 0; i < items.length; i += size) chunks.push(items.slice(i, i + size));
  return chunks;
}

/** Which of `projects` (all on `shard`) hold anything older than their cut-off there. */
async function projectsWithExpiredData(env: Env, shard: string, projects: readonly ExpiringProject[]): Promise<Set<string>> {
  const found = new Set<string>();
  for (const part of chunked(projects, TARGETS_PER_QUERY)) {
    const targets = JSON.stringify(part.map((p) => [p.project_id, p.cutoff]));
    const { results } = await shardDatabase(env, shard).prepare(PROJECTS_WITH_EXPIRED_DATA).bind(targets).all<{ project_id: string }>();
    for (const row of results) found.add(row.project_id);
  }
  return found;
}

/** Stores one organization's expiry job and its parts, then queues one message per part. */
async function startExpiryJob(env: Env, organizationId: string, projects: ExpiringProject[], shards: readonly string[]): Promise<string> {
  const jobId = await insertOrgJob(env, { organizationId, createdBy: RETENTION_SUBMITTER, jobName: EXPIRE_RETENTION, request: { projects }, status: "queued", shards });
  // Failed if it cannot be queued: a job no message names would stay queued for ever and block
  // the next hours' expiries.
  await enqueueJob(env, jobId, shards, 0, "The expiry could not be queued; the next hourly run tries again.");
  return jobId;
}

/**
 * Finds what has expired and queues its erasure. `scheduledMicros`: the cron's time, from which
 * every cut-off of this run is computed (one instant for the whole run).
 */
export async function scheduleExpiry(env: Env, scheduledMicros: number = currentMicros()): Promise<ExpiryScheduleOutcome> {
  // Whole partitions first: what they erase is then neither probed nor chunked record by record
  // (a dropped partition's shard is asked only if it holds another partition of the project).
  let partitions: PartitionErasureOutcome | null = null;
  try {
    partitions = await eraseExpiredPartitions(env, scheduledMicros);
  } catch (error) {
    console.error(`retention: erasing whole partitions failed: ${error instanceof Error ? error.message : String(error)}`);
  }
  const [retained, busy] = await env.DB.batch<RetainedProject & { organization_id: string }>([
    env.DB.prepare(RETAINED_PROJECTS),
    env.DB.prepare(BUSY_ORGANIZATIONS),
  ]);
  const busyOrganizations = new Set((busy?.results ?? []).map((row) => row.organization_id));
  const candidates = (retained?.results ?? []).filter((p) => !busyOrganizations.has(p.organization_id));

  // Per shard: which candidates hold expired records or held updates there (a project whose
  // partitions span shards is asked on each).
  const byShard = new Map<string, ExpiringProject[]>();
  const organizationOf = new Map<string, string>();
  for (const project of candidates) {
    const cutoff = retentionCutoffMicros(project.retention_days, scheduledMicros)!;
    const list = byShard.get(project.shard) ?? [];
    list.push({ project_id: project.id, retention_days: project.retention_days, cutoff });
    byShard.set(project.shard, list);
    organizationOf.set(project.id, project.organization_id);
  }
  // Per organization: its projects with something expired (each once), and the shards where.
  const expiring = new Map<string, { projects: Map<string, ExpiringProject>; shards: Set<string> }>();
  for (const [shard, projects] of byShard) {
    let found: Set<string>;
    try {
      found = await projectsWithExpiredData(env, shard, projects);
    } catch (error) {
      // One shard down must not hold back the others; its projects wait for the next run.
      console.error(`retention: could not look at ${shard}: ${error instanceof Error ? error.message : String(error)}`);
      continue;
    }
    for (const project of projects) {
      if (!found.has(project.project_id)) continue;
      const organizationId = organizationOf.get(project.project_id)!;
      const entry = expiring.get(organizationId) ?? { projects: new Map(), shards: new Set() };
      entry.projects.set(project.project_id, project);
      entry.shards.add(shard);
      expiring.set(organizationId, entry);
    }
  }

  const outcome: ExpiryScheduleOutcome = { jobs: [], busyOrganizations: busyOrganizations.size, partitions };
  for (const [organizationId, entry] of expiring) {
    const projects = [...entry.projects.values()];
    const shards = [...entry.shards].sort();
    try {
      const jobId = await startExpiryJob(env, organizationId, projects, shards);
      outcome.jobs.push({ jobId, organizationId, projects: projects.length, shards });
    } catch (error) {
      console.error(`retention: could not start the expiry of organization ${organizationId}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return outcome;
}
