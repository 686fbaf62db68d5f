/**
 * Where a project's redaction policy lives (catalog table `project_redaction`, migration 0022)
 * and how ingestion reads it: every intake path asks for the compiled policy of its project, so
 * each isolate keeps it for POLICY_TTL_MS. A PUT reaches the isolate that served it at once and
 * every other isolate within that time (contract section 14: "within 5 seconds"); a policy is
 * never stale longer, because an entry is dropped, not refreshed in the background.
 */
import { DEFAULT_POLICY, compilePolicy, type CompiledPolicy, type RedactionPolicy } from "./policy";

export const POLICY_TTL_MS = 4_000;

/** Bounds the cache: an isolate serving many projects forgets the oldest first. */
const MAX_CACHED = 1_000;

interface Cached {
  loadedAt: number;
  policy: RedactionPolicy;
  compiled: CompiledPolicy | null;
}

const cache = new Map<string, Cached>();

export async function readPolicy(db: D1Database, projectId: string): Promise<RedactionPolicy> {
  const row = await db.prepare("SELECT policy FROM project_redaction WHERE project_id = ?1").bind(projectId).first<{ policy: string }>();
  return row ? { ...DEFAULT_POLICY, ...(JSON.parse(row.policy) as Partial<RedactionPolicy>) } : DEFAULT_POLICY;
}

export async function writePolicy(db: D1Database, projectId: string, policy: RedactionPolicy, nowMicros: number): Promise<void> {
  await db
    .prepare(
      `INSERT INTO project_redaction (project_id, policy, updated_at) VALUES (?1, ?2, ?3)
       ON CONFLICT (project_id) DO UPDATE SET policy = excluded.policy, updated_at = excluded.updated_at`,
    )
    .bind(projectId, JSON.stringify(policy), nowMicros)
    .run();
  remember(projectId, policy);
}

function remember(projectId: string, policy: RedactionPolicy): Cached {
  const entry = { loadedAt: Date.now(), policy, compiled: compilePolicy(policy) };
  cache.delete(projectId);
  cache.set(projectId, entry);
  if (cache.size > MAX_CACHED) cache.delete(cache.keys().next().value!);
  return entry;
}

/**
 * The compiled policy ingestion applies to the project's records, or null when redaction is off.
 * Called once per ingest request, beside the run's lookup (no extra round trip in sequence).
 */
export async function redactionFor(db: D1Database, projectId: string): Promise<CompiledPolicy | null> {
  const cached = cache.get(projectId);
  if (cached && Date.now() - cached.loadedAt < POLICY_TTL_MS) return cached.compiled;
  return remember(projectId, await readPolicy(db, projectId)).compiled;
}
