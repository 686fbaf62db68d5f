/**
 * Erasure of a project whose partitions span shards (contract section 13; docs/partitions.md):
 * deletion by metadata, deletion by filter (its dry run too) and retention's expiry reach every
 * record wherever its partition is, and nothing else.
 */
import { env } from "cloudflare:test";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Env } from "../src/env";
import { refreshMetricCells } from "../src/analytics/metric-cells";
import { clearPartitionCache } from "../src/partitions/partition-catalog";
import { PARTITION_ERASURE_SQL, eraseExpiredPartitions } from "../src/retention/erase-expired-partitions";
import { scheduleExpiry } from "../src/retention/schedule-expiry";
import { clearProjectRoutes } from "../src/shards/project-routing";
import { deleteByMetadata, waitForJob } from "./deletion-fixtures";
import { type PartitionedProject, fetchAs, ingestTraces, projectOn, rollTo, shardsOf } from "./support/partitioned-project";
import { type Tenant, createTenant } from "./support/tenants";

const uuid = () => crypto.randomUUID();
const DAY_MS = 86_400_000;

let tenant: Tenant;

beforeAll(async () => {
  tenant = await createTenant("admin");
});

beforeEach(() => {
  clearPartitionCache();
  clearProjectRoutes();
});

interface Written {
  project: PartitionedProject;
  /** Every record id written, with whether it should go. */
  going: string[];
  staying: string[];
}

/**
 * Three partitions (SHARD_0, SHARD_1, SHARD_0 again), each with traces (and their spans) that
 * `goes` marks, and others that stay; `shape` gives a trace's fields by whether it goes.
 */
async function spread(shape: (goes: boolean, i: number) => Record<string, unknown>, projectFields: Record<string, unknown> = {}): Promise<Written> {
  const project = await projectOn(tenant, "SHARD_0", projectFields);
  const going: string[] = [];
  const staying: string[] = [];
  const part = (offset: number) =>
    [true, false, true].map((goes, i) => {
      const trace = { id: uuid(), name: `t${offset + i}`, input: "in", output: "out", ...shape(goes, offset + i), spans: [{ id: uuid(), type: "llm", name: "s", ...shape(goes, offset + i) }] };
      (goes ? going : staying).push(trace.id, trace.spans[0]!.id);
      return trace;
    });
  await ingestTraces(project, part(0));
  await rollTo(project, "SHARD_1");
  await ingestTraces(project, part(3));
  await rollTo(project, "SHARD_0");
  await ingestTraces(project, part(6));
  // The middle partition's records are on SHARD_1 indeed.
  const where = await shardsOf(project, [...going, ...staying]);
  expect(new Set(where.values())).toEqual(new Set(["SHARD_0", "SHARD_1"]));
  return { project, going, staying };
}

/** The ids a search of the run finds, of traces and spans. */
async function searchable(p: PartitionedProject): Promise<string[]> {
  const ids: string[] = [];
  for (const family of ["traces", "spans"]) {
    const page = await fetchAs(p.tenant, {}, `/v2/projects/${p.projectId}/${family}/partial_search`, { log_stream_id: p.logStreamId, limit: 100 });
    expect(page.status, JSON.stringify(page.body)).toBe(200);
    ids.push(...page.body.records.map((r: { id: string }) => r.id));
  }
  return ids.sort();
}

describe("erasure across partitions on several shards", () => {
  it("deletion by metadata erases the matching records of every partition, and keeps the rest", async () => {
    const { project, going, staying } = await spread((goes) => ({ user_metadata: { env: goes ? "gone" : "kept" } }));
    const started = await deleteByMetadata(tenant, { metadata_key: "env", metadata_value: "gone" });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const { job } = await waitForJob(tenant, started.body.job_id);
    expect(job.status).toBe("completed");
    expect([...(await shardsOf(project, going)).keys()]).toEqual([]);
    expect((await shardsOf(project, staying)).size).toBe(staying.length);
    expect(await searchable(project)).toEqual([...staying].sort());
  });

  it("a late span or update of a trace erased in a partition on another shard meets its tombstone there, as in one partition", async () => {
    const { project, going } = await spread((goes) => ({ user_metadata: { env: goes ? "gone" : "kept" } }));
    const started = await deleteByMetadata(tenant, { metadata_key: "env", metadata_value: "gone" });
    expect((await waitForJob(tenant, started.body.job_id)).job.status).toBe("completed");
    // going[0] is a trace of the first partition (SHARD_0); the open partition is on SHARD_0 too,
    // so take one of the middle partition's (SHARD_1): the first going id written after the roll.
    const erasedOnShard1 = going[4]!;
    const late = crypto.randomUUID();
    const spans = await fetchAs(tenant, {}, `/v2/projects/${project.projectId}/spans`, {
      log_stream_id: project.logStreamId,
      trace_id: erasedOnShard1,
      parent_id: erasedOnShard1,
      spans: [{ id: late, type: "tool", name: "late" }],
    });
    expect(spans.status, JSON.stringify(spans.body)).toBe(200);
    const resent = await ingestTraces(project, [{ id: erasedOnShard1, name: "again", spans: [{ id: crypto.randomUUID(), type: "llm" }] }]);
    expect(resent.status).toBe(200);
    expect([...(await shardsOf(project, [late, erasedOnShard1])).keys()]).toEqual([]);
    const patched = await fetchAs(tenant, {}, `/v2/projects/${project.projectId}/traces/${erasedOnShard1}`, { log_stream_id: project.logStreamId, trace_id: erasedOnShard1, output: "x" }, "PATCH");
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    let held = 0;
    for (const shard of ["DB", "SHARD_0", "SHARD_1"]) {
      const db = (env as unknown as Record<string, D1Database>)[shard]!;
      held += (await db.prepare("SELECT count(*) AS n FROM record_patches WHERE record_id = ?1").bind(erasedOnShard1).first<{ n: number }>())!.n;
    }
    expect(held).toBe(0);
    const spanCount = await fetchAs(tenant, {}, `/v2/projects/${project.projectId}/spans/count`, { log_stream_id: project.logStreamId });
    expect(spanCount.body.total_count).toBe(3);
  });

  it("deletion by filter counts and erases the matches of every partition, with their spans", async () => {
    const { project, going, staying } = await spread((goes) => ({ tags: [goes ? "gone" : "kept"] }));
    const body = { log_stream_id: project.logStreamId, filters: [{ column_id: "tags", operator: "contains", value: "gone", type: "collection" }] };
    const path = `/v2/projects/${project.projectId}/traces/delete`;
    const dry = await fetchAs(tenant, {}, `${path}?dry_run=true`, body);
    expect(dry.status, JSON.stringify(dry.body)).toBe(200);
    expect(dry.body).toMatchObject({ would_delete: { sessions: 0, traces: 6, spans: 6 }, would_delete_is_exact: true });
    expect((await shardsOf(project, going)).size).toBe(going.length);

    const deleted = await fetchAs(tenant, {}, path, body);
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);
    if (deleted.body.job_id) expect((await waitForJob(tenant, deleted.body.job_id)).job.status).toBe("completed");
    else expect(deleted.body.deleted).toEqual({ sessions: 0, traces: 6, spans: 6 });
    expect([...(await shardsOf(project, going)).keys()]).toEqual([]);
    expect(await searchable(project)).toEqual([...staying].sort());
    // Nothing is left to match.
    const again = await fetchAs(tenant, {}, path, body);
    expect(again.body).toMatchObject({ job_id: null });
    expect(again.body.message).toMatch(/nothing to delete/);
  });

  it("retention's expiry runs a part on every shard holding an expired partition's records, and erases only what is past the cut-off", async () => {
    const now = Date.now();
    const { project, going, staying } = await spread(
      (goes) => ({ created_at: new Date(now - (goes ? 20 : 2) * DAY_MS).toISOString() }),
      { retention_days: 10 },
    );
    const outcome = await scheduleExpiry(env as unknown as Env, now * 1000);
    const mine = outcome.jobs.find((j) => j.organizationId === tenant.organizationId);
    expect(mine).toMatchObject({ projects: 1, shards: ["SHARD_0", "SHARD_1"] });
    const { job } = await waitForJob(tenant, mine!.jobId);
    expect(job.status).toBe("completed");
    expect([...(await shardsOf(project, going)).keys()]).toEqual([]);
    expect((await shardsOf(project, staying)).size).toBe(staying.length);
    // The next run finds nothing more to erase for this project.
    const next = await scheduleExpiry(env as unknown as Env, now * 1000);
    expect(next.jobs.find((j) => j.organizationId === tenant.organizationId)).toBeUndefined();
  });
});

describe("a closed partition wholly past the cut-off, erased as a unit", () => {
  const now = Date.now();
  const daysAgo = (d: number) => new Date(now - d * DAY_MS).toISOString();
  const db = (shard: string) => (env as unknown as Record<string, D1Database>)[shard]!;
  const count = async (shard: string, sql: string, projectId: string) => (await db(shard).prepare(sql).bind(projectId).first<{ n: number }>())!.n;

  /** Partition 1 (SHARD_0): old and young; partition 2: all old, late span included; partition 3 (SHARD_0, open): old and young. */
  async function written(partitioned: boolean) {
    const project = await projectOn(tenant, "SHARD_0", { retention_days: 10 });
    const trace = (name: string, days: number, spanDays = days) => ({ id: uuid(), name, input: `words of ${name}`, created_at: daysAgo(days), spans: [{ id: uuid(), type: "llm", name: `${name}-s`, created_at: daysAgo(spanDays) }] });
    const first = [trace("a-old", 20), trace("a-young", 2)];
    const middle = [trace("b-old", 20), trace("b-older", 30, 12)];
    const last = [trace("c-old", 25), trace("c-young", 1)];
    await ingestTraces(project, first);
    if (partitioned) await rollTo(project, "SHARD_1");
    await ingestTraces(project, middle);
    if (partitioned) await rollTo(project, "SHARD_0");
    await ingestTraces(project, last);
    // A late span of an old trace of the middle partition, itself old.
    const late = await fetchAs(tenant, {}, `/v2/projects/${project.projectId}/spans`, { log_stream_id: project.logStreamId, trace_id: middle[0]!.id, parent_id: middle[0]!.id, spans: [{ id: uuid(), type: "tool", name: "late", created_at: daysAgo(11) }] });
    expect(late.status, JSON.stringify(late.body)).toBe(200);
    // A rating and a queue entry on a record of the middle partition, one on a young record.
    const template = await fetchAs(tenant, {}, `/v2/projects/${project.projectId}/annotation/templates`, { name: "ok", constraints: { annotation_type: "like_dislike" } });
    for (const id of [middle[1]!.id, first[1]!.id]) {
      const rated = await fetchAs(tenant, {}, `/v2/projects/${project.projectId}/annotation/templates/${template.body.id}/records/${id}/rating`, { rating: { annotation_type: "like_dislike", value: true } }, "PUT");
      expect(rated.status, JSON.stringify(rated.body)).toBe(200);
    }
    const queue = await fetchAs(tenant, {}, "/v2/annotation_queues", { name: { value: `q-${uuid()}` } });
    const added = await fetchAs(tenant, {}, `/v2/annotation_queues/${queue.body.id}/records`, { project_id: project.projectId, run_id: project.logStreamId, record_selector: { type: "record_ids", record_ids: [middle[0]!.id, middle[1]!.id, last[1]!.id] } });
    expect(added.body).toEqual({ num_records_added: 3 });
    if (partitioned) {
      // The first two partitions closed 12 days ago (before the cut-off): as if they rolled then.
      await env.DB.prepare("UPDATE project_partitions SET closed_at = ?2 WHERE project_id = ?1 AND state = 'closed'").bind(project.projectId, (now - 12 * DAY_MS) * 1000).run();
      clearPartitionCache();
    }
    return { project, templateId: template.body.id as string, queueId: queue.body.id as string, middle: middle.flatMap((t) => [t.id, t.spans[0]!.id]) };
  }

  /** What a user reads of the project: searches (all records, retention aside), counts, usage, queue size. */
  async function reads(w: Awaited<ReturnType<typeof written>>) {
    const { project: p } = w;
    const names = async (family: string) => {
      const page = await fetchAs(tenant, {}, `/v2/projects/${p.projectId}/${family}/partial_search`, { log_stream_id: p.logStreamId, limit: 100, select_columns: { column_ids: ["name"] }, sort: { column_id: "name", ascending: true } });
      expect(page.status, JSON.stringify(page.body)).toBe(200);
      return page.body.records.map((r: { name: string }) => r.name);
    };
    const total = async (family: string) => (await fetchAs(tenant, {}, `/v2/projects/${p.projectId}/${family}/count`, { log_stream_id: p.logStreamId })).body.total_count;
    return {
      traces: await names("traces"),
      spans: await names("spans"),
      counts: [await total("traces"), await total("spans")],
      usage: (await fetchAs(tenant, {}, `/v2/projects/${p.projectId}/annotation/templates/${w.templateId}`)).body.usage_count,
      queue: (await fetchAs(tenant, {}, `/v2/annotation_queues/${w.queueId}/records/count`, {})).body,
    };
  }

  const partitionSeqs = async (projectId: string) => (await env.DB.prepare("SELECT seq FROM project_partitions WHERE project_id = ?1 ORDER BY seq").bind(projectId).all<{ seq: number }>()).results.map((r) => r.seq);

  it("drops the partition from the catalog, removes its rows and what derives from them, and reads as the record-by-record path", async () => {
    const split = await written(true);
    const single = await written(false);
    const outcome = await scheduleExpiry(env as unknown as Env, now * 1000);
    expect(outcome.partitions?.marked).toEqual([{ projectId: split.project.projectId, seq: 2, shard: "SHARD_1" }]);
    expect(outcome.partitions?.erased).toEqual([{ projectId: split.project.projectId, seq: 2, shard: "SHARD_1" }]);
    expect(outcome.partitions?.records).toBe(5);
    expect(await partitionSeqs(split.project.projectId)).toEqual([1, 3]);
    // The record-by-record expiry no longer goes to SHARD_1: nothing of the project is there.
    const mine = outcome.jobs.find((j) => j.organizationId === tenant.organizationId)!;
    expect(mine.shards).toEqual(["SHARD_0"]);
    expect((await waitForJob(tenant, mine.jobId)).job.status).toBe("completed");
    const id = split.project.projectId;
    expect(await count("SHARD_1", "SELECT count(*) AS n FROM records WHERE project_id = ?1", id)).toBe(0);
    expect(await count("SHARD_1", "SELECT count(*) AS n FROM shard_partitions WHERE project_id = ?1", id)).toBe(0);
    expect(await count("SHARD_1", "SELECT count(*) AS n FROM annotation_ratings WHERE project_id = ?1", id)).toBe(0);
    expect(await count("SHARD_1", "SELECT count(*) AS n FROM annotation_queue_entries WHERE project_id = ?1", id)).toBe(0);
    // The cells of the erased records' hours: the deletions marked those hours (reads scan marked
    // hours, so they are exact at once); once refreshed, the cells hold nothing of the partition.
    // Refreshed here rather than waited for: when the upkeep that the writes queued runs, before
    // or after the erasure, is the queue's timing (a clean run at load 5-9 caught the cells still
    // marked, not refreshed).
    await refreshMetricCells(db("SHARD_1"));
    expect(await count("SHARD_1", "SELECT count(*) AS n FROM metric_dirty_hours WHERE run_id IN (SELECT id FROM runs WHERE project_id = ?1)", id)).toBe(0);
    expect(await count("SHARD_1", "SELECT coalesce(sum(traces), 0) AS n FROM metric_cells WHERE run_id IN (SELECT id FROM runs WHERE project_id = ?1)", id)).toBe(0);
    const [a, b] = [await reads(split), await reads(single)];
    expect(a).toEqual(b);
    expect(a).toMatchObject({ traces: ["a-young", "c-young"], usage: 1, queue: { count: 1 } });
    // The next run finds nothing more.
    const next = await scheduleExpiry(env as unknown as Env, now * 1000);
    expect(next.partitions).toMatchObject({ marked: [], erased: [], records: 0, complete: true });
  });

  it("resumes after a run cut short between its steps and within its chunks, every read as at the end once dropped", async () => {
    const split = await written(true);
    const id = split.project.projectId;
    // Cut short after the mark: the catalog still lists the partition.
    const marked = await eraseExpiredPartitions(env as unknown as Env, now * 1000, { markOnly: true });
    expect(marked.marked).toEqual([{ projectId: id, seq: 2, shard: "SHARD_1" }]);
    expect(await partitionSeqs(id)).toEqual([1, 2, 3]);
    // Cut short by its budget: dropped from the catalog at once, two records gone of five.
    const partial = await eraseExpiredPartitions(env as unknown as Env, now * 1000, { chunkRecords: 2, maxChunks: 1 });
    expect(partial).toMatchObject({ marked: [], erased: [], records: 2, complete: false });
    expect(await partitionSeqs(id)).toEqual([1, 3]);
    expect(await count("SHARD_1", "SELECT count(*) AS n FROM records WHERE project_id = ?1", id)).toBe(3);
    clearPartitionCache();
    // No read sees the partition any more (counts outside the retention window included).
    const during = await reads(split);
    expect(during).toMatchObject({ traces: ["a-young", "c-young"], usage: 1, queue: { count: 1 } });
    // A redelivered run and the next finish it; once more is harmless.
    const [x, y] = await Promise.all([eraseExpiredPartitions(env as unknown as Env, now * 1000, { chunkRecords: 2 }), eraseExpiredPartitions(env as unknown as Env, now * 1000, { chunkRecords: 2 })]);
    expect(x.records + y.records).toBe(3);
    expect(await count("SHARD_1", "SELECT count(*) AS n FROM records WHERE project_id = ?1", id)).toBe(0);
    expect(await count("SHARD_1", "SELECT count(*) AS n FROM shard_partitions WHERE project_id = ?1", id)).toBe(0);
    expect(await eraseExpiredPartitions(env as unknown as Env, now * 1000)).toMatchObject({ marked: [], erased: [], records: 0, complete: true });
    expect(await reads(split)).toEqual(during);
  });

  it("finds a partition's newest record and walks its rows by the partition index, null seq included", async () => {
    for (const [name, sql] of Object.entries(PARTITION_ERASURE_SQL)) {
      const { results } = await db("SHARD_1").prepare(`EXPLAIN QUERY PLAN ${sql}`).bind(...[uuid(), 1, 2, 1].slice(0, Math.max(...[...sql.matchAll(/\?(\d+)/g)].map((m) => Number(m[1]))))).all<{ detail: string }>();
      const records = results.map((r) => r.detail).filter((d) => /\brecords\b/.test(d) && !/shard_partitions|shard_projects/.test(d));
      expect(records.length, name).toBeGreaterThan(0);
      for (const detail of records) expect(detail, `${name}: ${detail}`).toMatch(/USING (COVERING )?INDEX records_project_partition \(project_id=\? AND partition_seq(=\?| IS NULL)?|USING INTEGER PRIMARY KEY/);
    }
  });
});
