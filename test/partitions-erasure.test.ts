/**
 * Erasure of a project whose partitions span shards (contract section 13; docs/partitions.md):
 * deletion by metadata, deletion by filter (its dry run too) and retention's expiry reach every
 * record wherever its partition is, and nothing else.
 */
import { env } from "cloudflare:test";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Env } from "../src/env";
import { clearPartitionCache } from "../src/partitions/partition-catalog";
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
