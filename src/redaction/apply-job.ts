/**
 * `POST /v2/projects/{pid}/redaction/apply`: rewriting records stored before the policy
 * (contract section 14). A run is an org-job (`job_name: "redact"`, progress
 * `{records_scanned, records_changed}`) advanced through the export queue (the organization jobs'
 * queue of one consumer at a time; a message says which job it carries), in bounded chunks:
 *
 * - phase `records`: the project's records by id (`records_project_record_id`), CHUNK_RECORDS at
 *   a time; those whose created_at is in `[start, end)` are scanned, the ones the policy changes
 *   are rewritten with their side rows (metadata, tags) in one batch; the text index follows the
 *   rows by its triggers (migration 0009), so it never holds the original after the chunk;
 * - phase `patches`: the project's held streaming updates, likewise.
 *
 * Each chunk ends with a compare-and-set of the job's `step` in the catalog: a redelivered message
 * whose step moved on does nothing, and a chunk redone after a crash finds its records already
 * masked (masking is idempotent), so the job is resumable and its progress never counts a chunk
 * twice. The policy applied is the one saved when the job was asked for.
 */
import { nowMicros } from "../db/client";
import type { Env } from "../env";
import { rebuildSideRows } from "../ingest/side-rows";
import { projectRoute } from "../shards/project-routing";
import { shardDatabase } from "../shards/shard-config";
import { compilePolicy, type CompiledPolicy, type RedactionPolicy } from "./policy";
import { redactPatch, redactRecord, type RedactableRecord } from "./redact-record";

export const REDACT_JOB = "redact";
/** Records read per chunk: a chunk masks at most this many records (each bounded, mask-text.ts). */
export const CHUNK_RECORDS = 100;
/** One message's work: at most this long or this many chunks, then a continuation. */
const MESSAGE_BUDGET_MS = 10_000;
const MESSAGE_CHUNKS = 40;

export interface RedactionMessage {
  jobId: string;
  job: typeof REDACT_JOB;
}

export const isRedactionMessage = (body: unknown): body is RedactionMessage =>
  typeof body === "object" && body !== null && (body as { job?: unknown }).job === REDACT_JOB;

interface StoredRecord extends RedactableRecord {
  id: string;
  created_at: number;
}

const RECORD_FIELDS = "id, created_at, name, input, input_is_json, output, output_is_json, redacted_input, redacted_output, user_metadata, tags";

const READ_RECORDS = `SELECT ${RECORD_FIELDS} FROM records WHERE project_id = ?1 AND id > ?2 ORDER BY id LIMIT ${CHUNK_RECORDS}`;

const CHANGED = "(SELECT value ->> '$.id' AS id, value AS v FROM json_each(?2))";
const WRITE_RECORDS = `UPDATE records SET name = c.v ->> '$.name', input = c.v ->> '$.input', output = c.v ->> '$.output',
  redacted_input = c.v ->> '$.redacted_input', redacted_output = c.v ->> '$.redacted_output',
  user_metadata = c.v ->> '$.user_metadata', tags = c.v ->> '$.tags'
  FROM ${CHANGED} AS c WHERE records.project_id = ?1 AND records.id = c.id`;
const SIDE_ROWS = rebuildSideRows(
  { from: "records AS r", where: "r.project_id = ?1 AND r.id IN (SELECT value ->> '$.id' FROM json_each(?2))" },
  ["record_metadata", "record_tags"],
);

const PATCH_FIELDS = "record_id, run_id, input, input_is_json, output, output_is_json, tags, redacted_input, redacted_output";
const READ_PATCHES = `SELECT ${PATCH_FIELDS} FROM record_patches WHERE project_id = ?1 AND record_id > ?2 ORDER BY record_id LIMIT ${CHUNK_RECORDS}`;
const WRITE_PATCHES = `UPDATE record_patches SET input = c.v ->> '$.input', output = c.v ->> '$.output', tags = c.v ->> '$.tags',
  redacted_input = c.v ->> '$.redacted_input', redacted_output = c.v ->> '$.redacted_output'
  FROM (SELECT value AS v FROM json_each(?2)) AS c
  WHERE record_patches.project_id = ?1 AND record_patches.record_id = c.v ->> '$.record_id' AND record_patches.run_id = c.v ->> '$.run_id'`;

interface Range {
  start: number | null;
  end: number | null;
}

const inRange = (createdAt: number, range: Range) => (range.start === null || createdAt >= range.start) && (range.end === null || createdAt < range.end);

const REDACTED_FIELDS = ["name", "input", "output", "redacted_input", "redacted_output", "user_metadata", "tags"] as const;

/** One chunk of records: what it scanned, the rows the policy changes, and where the next starts. */
async function recordChunk(db: D1Database, projectId: string, cursor: string, range: Range, policy: CompiledPolicy) {
  const rows = (await db.prepare(READ_RECORDS).bind(projectId, cursor).all<StoredRecord>()).results;
  let scanned = 0;
  const changed: StoredRecord[] = [];
  for (const row of rows) {
    if (!inRange(row.created_at, range)) continue;
    scanned++;
    const copy = { ...row };
    redactRecord(copy, policy);
    if (REDACTED_FIELDS.some((f) => copy[f] !== row[f])) changed.push(copy);
  }
  return { scanned, changed, next: rows.length < CHUNK_RECORDS ? null : rows[rows.length - 1]!.id };
}

/** Counts for a dry run: the records in the range and those the policy would change. */
export async function countRedaction(db: D1Database, projectId: string, range: Range, policy: CompiledPolicy, budgetMs: number) {
  const started = Date.now();
  let cursor = "";
  let records = 0;
  let wouldChange = 0;
  for (;;) {
    const chunk = await recordChunk(db, projectId, cursor, range, policy);
    records += chunk.scanned;
    wouldChange += chunk.changed.length;
    if (chunk.next === null) return { records, would_change: wouldChange, complete: true };
    if (Date.now() - started > budgetMs) return { records, would_change: wouldChange, complete: false };
    cursor = chunk.next;
  }
}

interface JobState {
  jobId: string;
  organizationId: string;
  status: string;
  projectId: string;
  range: Range;
  policy: RedactionPolicy;
  phase: "records" | "patches" | "done";
  cursor: string;
  step: number;
}

const READ_JOB = `SELECT j.organization_id, j.status, r.project_id, r.start_micros, r.end_micros, r.policy, r.phase, r.cursor, r.step
  FROM org_jobs AS j JOIN redaction_jobs AS r ON r.job_id = j.id WHERE j.id = ?1 AND j.job_name = '${REDACT_JOB}'`;

async function jobState(env: Env, jobId: string): Promise<JobState | null> {
  const row = await env.DB.prepare(READ_JOB).bind(jobId).first<{
    organization_id: string;
    status: string;
    project_id: string;
    start_micros: number | null;
    end_micros: number | null;
    policy: string;
    phase: JobState["phase"];
    cursor: string;
    step: number;
  }>();
  if (!row) return null;
  return {
    jobId,
    organizationId: row.organization_id,
    status: row.status,
    projectId: row.project_id,
    range: { start: row.start_micros, end: row.end_micros },
    policy: JSON.parse(row.policy) as RedactionPolicy,
    phase: row.phase,
    cursor: row.cursor,
    step: row.step,
  };
}

export async function insertRedactionJob(
  env: Env,
  input: { organizationId: string; createdBy: string; projectId: string; range: Range; policy: RedactionPolicy; request: Record<string, unknown> },
): Promise<string> {
  const jobId = crypto.randomUUID();
  const now = nowMicros();
  await env.DB.batch([
    env.DB.prepare(
      "INSERT INTO org_jobs (id, organization_id, job_name, status, request_data, created_by, created_at, updated_at) VALUES (?1, ?2, ?3, 'queued', ?4, ?5, ?6, ?6)",
    ).bind(jobId, input.organizationId, REDACT_JOB, JSON.stringify(input.request), input.createdBy, now),
    env.DB.prepare("INSERT INTO redaction_jobs (job_id, project_id, start_micros, end_micros, policy) VALUES (?1, ?2, ?3, ?4, ?5)").bind(
      jobId,
      input.projectId,
      input.range.start,
      input.range.end,
      JSON.stringify(input.policy),
    ),
  ]);
  await env.EXPORT_QUEUE.send({ jobId, job: REDACT_JOB } as RedactionMessage);
  return jobId;
}

/** Saves a chunk's outcome if the job still stands at `state.step`; false when another delivery got there first. */
async function saveChunk(env: Env, state: JobState, next: { phase: JobState["phase"]; cursor: string }, scanned: number, changed: number): Promise<boolean> {
  const now = nowMicros();
  const [saved] = await env.DB.batch([
    env.DB.prepare("UPDATE redaction_jobs SET phase = ?2, cursor = ?3, step = step + 1 WHERE job_id = ?1 AND step = ?4").bind(state.jobId, next.phase, next.cursor, state.step),
    env.DB.prepare(
      `UPDATE org_jobs SET records_scanned = records_scanned + ?2, records_changed = records_changed + ?3,
         status = CASE WHEN ?4 THEN 'completed' ELSE 'running' END, updated_at = ?5
       WHERE id = ?1 AND changes() > 0 AND status IN ('queued', 'running')`,
    ).bind(state.jobId, scanned, changed, next.phase === "done" ? 1 : 0, now),
  ]);
  return (saved?.meta.changes ?? 0) > 0;
}

/** Advances one job by one message's budget; answers whether it continues. */
export async function advanceRedactionJob(env: Env, jobId: string): Promise<"continues" | "done"> {
  const started = Date.now();
  for (let chunks = 0; chunks < MESSAGE_CHUNKS && Date.now() - started < MESSAGE_BUDGET_MS; chunks++) {
    const state = await jobState(env, jobId);
    if (!state || (state.status !== "queued" && state.status !== "running") || state.phase === "done") return "done";
    const policy = compilePolicy({ ...state.policy, enabled: true });
    const route = await projectRoute(env, { organizationId: state.organizationId } as Parameters<typeof projectRoute>[1], state.projectId);
    const db = shardDatabase(env, route.shard);
    if (!policy) {
      await saveChunk(env, state, { phase: "done", cursor: "" }, 0, 0);
      return "done";
    }
    if (state.phase === "records") {
      const chunk = await recordChunk(db, state.projectId, state.cursor, state.range, policy);
      if (chunk.changed.length > 0) {
        const json = JSON.stringify(chunk.changed.map((r) => Object.fromEntries(["id", ...REDACTED_FIELDS].map((f) => [f, r[f as keyof StoredRecord]]))));
        await db.batch([WRITE_RECORDS, ...SIDE_ROWS].map((sql) => db.prepare(sql).bind(state.projectId, json)));
      }
      const next = chunk.next === null ? { phase: "patches" as const, cursor: "" } : { phase: "records" as const, cursor: chunk.next };
      if (!(await saveChunk(env, state, next, chunk.scanned, chunk.changed.length))) return "done";
    } else {
      const rows = (await db.prepare(READ_PATCHES).bind(state.projectId, state.cursor).all<Record<string, unknown>>()).results;
      const changed: Record<string, unknown>[] = [];
      for (const row of rows) {
        const copy = { ...row } as Record<string, unknown> & Parameters<typeof redactPatch>[0];
        redactPatch(copy, policy);
        if (["input", "output", "tags", "redacted_input", "redacted_output"].some((f) => copy[f] !== row[f])) changed.push(copy);
      }
      if (changed.length > 0) await db.prepare(WRITE_PATCHES).bind(state.projectId, JSON.stringify(changed)).run();
      const next = rows.length < CHUNK_RECORDS ? { phase: "done" as const, cursor: "" } : { phase: "patches" as const, cursor: String(rows[rows.length - 1]!.record_id) };
      if (!(await saveChunk(env, state, next, 0, 0))) return "done";
    }
  }
  const after = await jobState(env, jobId);
  return after && after.phase !== "done" && (after.status === "queued" || after.status === "running") ? "continues" : "done";
}

/** The queue's side: one message, one advance; a continuation is sent before the ack. */
export async function handleRedactionMessage(env: Env, message: Message<unknown>): Promise<void> {
  const { jobId } = message.body as RedactionMessage;
  try {
    if ((await advanceRedactionJob(env, jobId)) === "continues") await env.EXPORT_QUEUE.send({ jobId, job: REDACT_JOB } as RedactionMessage);
    message.ack();
  } catch (error) {
    // The error's text names no record content: statements carry values as parameters only.
    console.error(`redaction job ${jobId}: attempt ${message.attempts} failed: ${error instanceof Error ? error.name : "error"}`);
    if (message.attempts >= 8) {
      await env.DB.prepare("UPDATE org_jobs SET status = 'failed', error_message = ?2, updated_at = ?3 WHERE id = ?1 AND status IN ('queued', 'running')")
        .bind(jobId, "The redaction job failed repeatedly; apply again to resume from the start (records already masked stay masked).", nowMicros())
        .run();
      message.ack();
      return;
    }
    message.retry({ delaySeconds: Math.min(256, 2 ** message.attempts) });
  }
}
