/**
 * Helpers of the deletion tests: seeding through the public ingestion API, full snapshots of the
 * record tables, the independent computation of what a deletion must remove, and delivery of
 * queue messages to the worker's real `queue` handler.
 */
import { createExecutionContext, createMessageBatch, env, getQueueResult } from "cloudflare:test";
import { expect } from "vitest";
import type { QueueResult } from "cloudflare:test";
import type { DeletionMessage, Env } from "../src/env";
import worker from "../src/index";
import { call } from "./support/client";
import { recordDatabases } from "./support/record-dbs";
import type { Tenant } from "./support/tenants";
import { METRIC_ROWS } from "./support/metric-rows";

export const DELETION_QUEUE = "trace-store-deletions";
export const DEAD_LETTER_QUEUE = "trace-store-deletions-dlq";

export interface Run {
  projectId: string;
  logStreamId: string;
}

let projectCounter = 0;

/** A fresh project with one log stream. */
export async function createRun(tenant: Tenant): Promise<Run> {
  projectCounter += 1;
  const project = await call("/v2/projects", { as: tenant, body: { name: `deletion-${projectCounter}-${crypto.randomUUID()}` } });
  expect(project.status, JSON.stringify(project.body)).toBe(200);
  const stream = await call(`/v2/projects/${project.body.id}/log_streams`, { as: tenant, body: { name: "default" } });
  expect(stream.status, JSON.stringify(stream.body)).toBe(200);
  return { projectId: project.body.id, logStreamId: stream.body.id };
}

/** A second log stream in the same project. */
export async function addLogStream(tenant: Tenant, run: Run, name: string): Promise<Run> {
  const stream = await call(`/v2/projects/${run.projectId}/log_streams`, { as: tenant, body: { name } });
  expect(stream.status, JSON.stringify(stream.body)).toBe(200);
  return { projectId: run.projectId, logStreamId: stream.body.id };
}

export async function postSession(tenant: Tenant, run: Run, session: Record<string, unknown>): Promise<void> {
  const answer = await call(`/v2/projects/${run.projectId}/sessions`, { as: tenant, body: { log_stream_id: run.logStreamId, ...session } });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
}

export async function postTraces(tenant: Tenant, run: Run, traces: Record<string, unknown>[]): Promise<void> {
  const answer = await call(`/v2/projects/${run.projectId}/traces`, { as: tenant, body: { log_stream_id: run.logStreamId, traces } });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
}

export type Row = Record<string, unknown>;

export interface Snapshot {
  records: Row[];
  record_metadata: Row[];
  record_tags: Row[];
  record_metrics: Row[];
}

const SNAPSHOT_ORDER: Record<keyof Snapshot, string> = {
  records: "project_id, id",
  record_metadata: "record_rid, key",
  record_tags: "record_rid, tag",
  record_metrics: "record_rid, name",
};

/**
 * Every row of the record tables of every record database (the shards and the catalog), every
 * column, in key order: records by (project, id), side rows by their database and key. Every row
 * carries `db`, the index of its database (rids are per database).
 */
export async function snapshot(): Promise<Snapshot> {
  const out = {} as Snapshot;
  const databases = recordDatabases();
  for (const [table, order] of Object.entries(SNAPSHOT_ORDER) as [keyof Snapshot, string][]) {
    const parts = await Promise.all(
      databases.map(async (db, index) =>
        (await db.prepare(`SELECT * FROM ${table === "record_metrics" ? METRIC_ROWS : table} ORDER BY ${order}`).all<Row>()).results.map((row): Row => ({ ...row, db: index })),
      ),
    );
    const rows = parts.flat();
    if (table === "records") rows.sort((a, b) => String(a.project_id).localeCompare(String(b.project_id)) || String(a.id).localeCompare(String(b.id)));
    out[table] = rows;
  }
  return out;
}

/** A record's identity: its id within its project. */
export const recordKey = (r: Row) => `${r.project_id}/${r.id}`;

/**
 * The snapshot without the given records (keys of recordKey) and their side rows. A surviving
 * record that had children (records naming it as parent in its run) and has none left reads
 * has_children 0 (a session whose traces matched and went); nothing else of it changes.
 */
export function without(before: Snapshot, deleted: ReadonlySet<string>): Snapshot {
  const parentKey = (r: Row) => `${r.run_id}/${r.parent_id}`;
  const ownKey = (r: Row) => `${r.run_id}/${r.id}`;
  const isDeleted = (r: Row) => deleted.has(recordKey(r));
  const survivors = before.records.filter((r) => !isDeleted(r));
  const ridKey = (db: unknown, rid: unknown) => `${db}/${rid}`;
  const deletedRids = new Set(before.records.filter(isDeleted).map((r) => ridKey(r.db, r.rid)));
  const lostChildren = new Set(before.records.filter((r) => isDeleted(r) && r.parent_id !== null).map(parentKey));
  const keptChildren = new Set(survivors.filter((r) => r.parent_id !== null).map(parentKey));
  return {
    records: survivors.map((r) =>
      r.has_children === 1 && lostChildren.has(ownKey(r)) && !keptChildren.has(ownKey(r)) ? { ...r, has_children: 0 } : r,
    ),
    record_metadata: before.record_metadata.filter((r) => !deletedRids.has(ridKey(r.db, r.record_rid))),
    record_tags: before.record_tags.filter((r) => !deletedRids.has(ridKey(r.db, r.record_rid))),
    record_metrics: before.record_metrics.filter((r) => !deletedRids.has(ridKey(r.db, r.record_rid))),
  };
}

export interface ExpectedDeletion {
  /** recordKey of every record to delete. */
  ids: Set<string>;
  counts: { sessions: number; traces: number; spans: number };
}

/**
 * What deleting user_metadata[key] = value in `organizationId` must remove, computed from the
 * records' own user_metadata JSON (not from record_metadata, which the implementation uses):
 * matching sessions; matching traces and the traces of matching sessions; the spans of those
 * traces and of matching sessions; matching spans and every span below them. A child belongs
 * to a parent it names from the same run.
 */
export function expectedDeletion(records: Row[], organizationId: string, key: string, value: string): ExpectedDeletion {
  const matches = (r: Row) => {
    const metadata = JSON.parse(r.user_metadata as string) as Record<string, unknown>;
    return Object.hasOwn(metadata, key) && metadata[key] === value;
  };
  const inOrg = records.filter((r) => r.organization_id === organizationId);
  const sessions = inOrg.filter((r) => r.record_type === "session" && matches(r));
  const sessionKeys = new Set(sessions.map((s) => `${s.run_id}/${s.id}`));
  const traces = inOrg.filter(
    (r) => r.record_type === "trace" && (matches(r) || (r.session_id !== null && sessionKeys.has(`${r.run_id}/${r.session_id}`))),
  );
  const traceKeys = new Set(traces.map((t) => `${t.run_id}/${t.id}`));
  const spansOfOrg = inOrg.filter((r) => r.record_type === "span");
  const going = new Set(
    spansOfOrg
      .filter(
        (r) =>
          matches(r) ||
          (r.trace_id !== null && traceKeys.has(`${r.run_id}/${r.trace_id}`)) ||
          (r.session_id !== null && sessionKeys.has(`${r.run_id}/${r.session_id}`)),
      )
      .map((r) => `${r.run_id}/${r.id}`),
  );
  // Below a going span, everything goes: repeat until no span is added (any depth).
  for (let grew = true; grew; ) {
    grew = false;
    for (const span of spansOfOrg) {
      const own = `${span.run_id}/${span.id}`;
      if (!going.has(own) && span.parent_id !== null && going.has(`${span.run_id}/${span.parent_id}`)) {
        going.add(own);
        grew = true;
      }
    }
  }
  const spans = spansOfOrg.filter((r) => going.has(`${r.run_id}/${r.id}`));
  return {
    ids: new Set([...sessions, ...traces, ...spans].map(recordKey)),
    counts: { sessions: sessions.length, traces: traces.length, spans: spans.length },
  };
}

export interface Delivery {
  id: string;
  attempts: number;
  body: unknown;
}

export interface DeliveryResult extends QueueResult {
  /** The delay each retried message asked for (getQueueResult does not report it). */
  retryDelays: Record<string, number | undefined>;
}

/** Runs the worker's real `queue` handler on one batch and reports its acks and retries. */
export async function deliver(queue: string, messages: Delivery[], bindings: Env = env): Promise<DeliveryResult> {
  const batch = createMessageBatch<DeletionMessage>(
    queue,
    messages.map((m) => ({ id: m.id, timestamp: new Date(), attempts: m.attempts, body: m.body as DeletionMessage })),
  );
  const retryDelays: Record<string, number | undefined> = {};
  for (const message of batch.messages) {
    const retry = message.retry.bind(message);
    message.retry = (options?: QueueRetryOptions) => {
      retryDelays[message.id] = options?.delaySeconds;
      retry(options);
    };
  }
  const ctx = createExecutionContext();
  await worker.queue(batch, bindings);
  return { ...(await getQueueResult(batch, ctx)), retryDelays };
}

/** The worker's bindings with a producer that records what the consumer enqueues instead of sending it. */
export function capturingBindings(): { bindings: Env; sent: DeletionMessage[] } {
  const sent: DeletionMessage[] = [];
  const producer = {
    send: async (body: DeletionMessage) => {
      sent.push(body);
    },
    sendBatch: async (messages: Iterable<MessageSendRequest<DeletionMessage>>) => {
      for (const m of messages) sent.push(m.body);
    },
  } as unknown as Queue<DeletionMessage>;
  return { bindings: { ...env, DELETION_QUEUE: producer }, sent };
}

export async function getJob(tenant: Tenant, jobId: string) {
  const answer = await call(`/v2/org-jobs/${jobId}`, { as: tenant });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body;
}

/** Polls the job until it leaves queued/running; returns every status seen, in order. */
export async function waitForJob(tenant: Tenant, jobId: string, timeoutMs = 30_000): Promise<{ job: any; seen: string[] }> {
  const seen: string[] = [];
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const job = await getJob(tenant, jobId);
    if (seen.at(-1) !== job.status) seen.push(job.status);
    if (job.status === "completed" || job.status === "failed") return { job, seen };
    if (Date.now() > deadline) throw new Error(`job ${jobId} still ${job.status} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export function deleteByMetadata(tenant: Tenant, body: unknown, query = "") {
  return call(`/v2/org-jobs/delete-by-metadata${query}`, { as: tenant, body });
}
