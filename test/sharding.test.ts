/**
 * Records on several D1 databases (docs/sharding.md): placement, routing, full shards, fan-out
 * of organization-wide deletion, read-your-writes bookmarks, and that one project's requests
 * reach its own shard only.
 */
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import type { Env } from "../src/env";
import { type D1Call, observeD1 } from "../src/http/d1-round-trips";
import worker from "../src/index";
import { pickShard } from "../src/shards/placement";
import { clearProjectRoutes } from "../src/shards/project-routing";
import { forgetShardSizes } from "../src/shards/shard-sizes";
import { createRun, getJob, waitForJob, type Run } from "./deletion-fixtures";
import { call } from "./support/client";
import { recordsOf } from "./support/record-dbs";
import { type Tenant, createTenant } from "./support/tenants";

const uuid = () => crypto.randomUUID();
const SHARDS = ["SHARD_0", "SHARD_1"] as const;

let tenant: Tenant;

beforeAll(async () => {
  tenant = await createTenant("admin");
});

/** A request through the worker's entry point with some bindings or variables replaced. */
async function fetchWith(overrides: Partial<Env> & Record<string, unknown>, path: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}) {
  const ctx = createExecutionContext();
  const response = await worker.fetch(
    new Request(`http://trace-store.test${path}`, {
      method: init.method ?? (init.body === undefined ? "GET" : "POST"),
      headers: { "content-type": "application/json", "Service-API-Key": tenant.apiKey, ...init.headers },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    }),
    { ...env, ...overrides } as Env,
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return { status: response.status, body: (await response.json().catch(() => null)) as any, headers: response.headers };
}

async function shardOf(projectId: string): Promise<string> {
  const row = await env.DB.prepare("SELECT shard FROM projects WHERE id = ?").bind(projectId).first<{ shard: string | null }>();
  return row?.shard ?? "DB";
}

async function sizeOf(shard: string): Promise<number> {
  const result = await (env as unknown as Record<string, D1Database>)[shard]!.prepare("SELECT 1").run();
  return (result.meta as { size_after: number }).size_after;
}

describe("placement", () => {
  it("picks the shard with the most room below the mark, then the one with fewer projects, then the first", () => {
    const s = (name: string, sizeBytes: number, projects = 0) => ({ name, sizeBytes, projects });
    expect(pickShard([s("A", 500), s("B", 100)], 1000)).toBe("B");
    expect(pickShard([s("A", 100, 3), s("B", 100, 1)], 1000)).toBe("B");
    expect(pickShard([s("A", 100), s("B", 100)], 1000)).toBe("A");
    expect(pickShard([s("A", 1000), s("B", 2000)], 1000)).toBeUndefined();
    expect(pickShard([s("A", 999), s("B", 2000)], 1000)).toBe("A");
  });

  it("places projects on every configured shard, and registers each where it lives", async () => {
    const placed = new Set<string>();
    for (let i = 0; i < 6 && placed.size < 2; i++) {
      const run = await createRun(tenant);
      // Data grows the shard the project landed on, so the next project goes elsewhere.
      await call(`/v2/projects/${run.projectId}/traces`, { as: tenant, body: { log_stream_id: run.logStreamId, traces: [{ name: "grow", input: "x".repeat(200_000) }] } });
      const shard = await shardOf(run.projectId);
      placed.add(shard);
      const registered = await (await recordsOf(run.projectId)).prepare("SELECT state FROM shard_projects WHERE project_id = ?").bind(run.projectId).first<{ state: string }>();
      expect(registered).toEqual({ state: "active" });
    }
    expect([...placed].sort()).toEqual([...SHARDS]);
  });

  it("skips a shard at or above its high-water mark", async () => {
    // Grow one shard well past the other, then set the mark between them.
    const run = await createRun(tenant);
    await call(`/v2/projects/${run.projectId}/traces`, { as: tenant, body: { log_stream_id: run.logStreamId, traces: [{ name: "grow", input: "y".repeat(1_500_000) }] } });
    const [a, b] = await Promise.all(SHARDS.map(sizeOf));
    const smaller = a! <= b! ? "SHARD_0" : "SHARD_1";
    const mark = Math.min(a!, b!) + 1;
    expect(Math.max(a!, b!)).toBeGreaterThanOrEqual(mark);
    for (let i = 0; i < 3; i++) {
      const created = await fetchWith({ SHARD_HIGH_WATER_BYTES: String(mark) }, "/v2/projects", { body: { name: `marked-${uuid()}` } });
      expect(created.status).toBe(200);
      expect(await shardOf(created.body.id)).toBe(smaller);
    }
  });

  it("refuses a new project with a 507 when every shard is at its mark, and creates nothing", async () => {
    const name = `nowhere-${uuid()}`;
    const refused = await fetchWith({ SHARD_HIGH_WATER_BYTES: "1" }, "/v2/projects", { body: { name } });
    expect(refused.status).toBe(507);
    expect(refused.body.detail).toMatch(/high-water mark/);
    const listed = await call(`/v2/projects?project_name=${name}`, { as: tenant });
    expect(listed.body).toEqual([]);
  });
});

describe("a full shard", () => {
  it("refuses ingest into its projects with a 507 and writes nothing; reads still work", async () => {
    const run = await createRun(tenant);
    const ingest = (overrides: Record<string, unknown>, name: string) =>
      fetchWith(overrides, `/v2/projects/${run.projectId}/traces`, { body: { log_stream_id: run.logStreamId, traces: [{ name }] } });
    expect((await ingest({}, "before")).status).toBe(200);
    const full = await ingest({ SHARD_HARD_LIMIT_BYTES: "1" }, "after");
    expect(full.status).toBe(507);
    expect(full.body.detail).toMatch(/full/);
    const found = await call(`/v2/projects/${run.projectId}/traces/partial_search`, { as: tenant, body: { log_stream_id: run.logStreamId } });
    expect(found.status).toBe(200);
    expect(found.body.records.map((r: { name: string }) => r.name)).toEqual(["before"]);
  });
});

describe("routing", () => {
  let run: Run;
  let traceId: string;

  beforeAll(async () => {
    run = await createRun(tenant);
    traceId = uuid();
    await call(`/v2/projects/${run.projectId}/traces`, { as: tenant, body: { log_stream_id: run.logStreamId, traces: [{ id: traceId, name: "routed", spans: [{ type: "llm" }] }] } });
  });

  /** The request with every D1 binding observed; answers which databases it reached. */
  async function databasesReached(path: string, init: { method?: string; body?: unknown } = {}): Promise<{ status: number; reached: Set<string> }> {
    const reached = new Set<string>();
    const overrides: Record<string, D1Database> = {};
    for (const name of ["DB", ...SHARDS]) {
      overrides[name] = observeD1((env as unknown as Record<string, D1Database>)[name]!, (_call: D1Call) => reached.add(name));
    }
    const response = await fetchWith(overrides, path, init);
    return { status: response.status, reached };
  }

  it("a record lookup, a search and the columns reach the project's shard and no other", async () => {
    const home = await shardOf(run.projectId);
    const other = SHARDS.find((s) => s !== home)!;
    for (const [path, init] of [
      [`/v2/projects/${run.projectId}/traces/${traceId}`, {}],
      [`/v2/projects/${run.projectId}/traces/partial_search`, { body: { log_stream_id: run.logStreamId } }],
      [`/v2/projects/${run.projectId}/spans/available_columns`, { body: { log_stream_id: run.logStreamId } }],
      [`/v2/projects/${run.projectId}/traces`, { body: { log_stream_id: run.logStreamId, traces: [{ name: "more" }] } }],
    ] as const) {
      const { status, reached } = await databasesReached(path, init);
      expect(status, path).toBe(200);
      expect(reached.has(home), path).toBe(true);
      expect(reached.has(other), path).toBe(false);
    }
  });

  it("with a warm route, a search is one round trip, to the shard", async () => {
    await databasesReached(`/v2/projects/${run.projectId}/traces/partial_search`, { body: { log_stream_id: run.logStreamId } });
    const { reached } = await databasesReached(`/v2/projects/${run.projectId}/traces/partial_search`, { body: { log_stream_id: run.logStreamId } });
    expect([...reached]).toEqual([await shardOf(run.projectId)]);
  });

  it("answers with a bookmark, and a bookmark sent back reads at least that fresh", async () => {
    const write = await fetchWith({}, `/v2/projects/${run.projectId}/traces`, { body: { log_stream_id: run.logStreamId, traces: [{ name: "bookmarked" }] } });
    const bookmark = write.headers.get("x-d1-bookmark");
    expect(bookmark).toMatch(new RegExp(`^${await shardOf(run.projectId)}:.+`));
    const read = await fetchWith({}, `/v2/projects/${run.projectId}/traces/partial_search`, {
      body: { log_stream_id: run.logStreamId, filters: [{ type: "text", column_id: "name", operator: "eq", value: "bookmarked" }] },
      headers: { "x-d1-bookmark": bookmark! },
    });
    expect(read.status).toBe(200);
    expect(read.body.records).toHaveLength(1);
    expect(read.headers.get("x-d1-bookmark")).toMatch(/^SHARD_\d:.+/);
  });

  it("ignores a bookmark of another shard, or one that is not a bookmark at all", async () => {
    for (const bookmark of ["SHARD_9:0000", "nonsense", `${await shardOf(run.projectId)}:not-a-real-bookmark`, ":", "x".repeat(2000)]) {
      const read = await fetchWith({}, `/v2/projects/${run.projectId}/traces/partial_search`, {
        body: { log_stream_id: run.logStreamId },
        headers: { "x-d1-bookmark": bookmark },
      });
      expect(read.status, bookmark.slice(0, 40)).toBe(200);
    }
  });

  it("a stale route (the project's shard changed under the cache) is detected on the shard and followed", async () => {
    const moving = await createRun(tenant);
    await call(`/v2/projects/${moving.projectId}/traces`, { as: tenant, body: { log_stream_id: moving.logStreamId, traces: [{ name: "first" }] } });
    const home = await shardOf(moving.projectId);
    const other = SHARDS.find((s) => s !== home)!;
    const otherDb = (env as unknown as Record<string, D1Database>)[other]!;
    // Hand the project to the other shard by hand (what a move's switch does), leaving the
    // worker's cached route pointing at the old one.
    await env.DB.prepare("UPDATE projects SET shard = ? WHERE id = ?").bind(other, moving.projectId).run();
    // The switch moves the project's partitions on the source with it (docs/partitions.md).
    await env.DB.prepare("UPDATE project_partitions SET shard = ? WHERE project_id = ?").bind(other, moving.projectId).run();
    await (env as unknown as Record<string, D1Database>)[home]!.prepare("UPDATE shard_projects SET state = 'gone' WHERE project_id = ?").bind(moving.projectId).run();
    await otherDb.prepare("INSERT INTO shard_projects (project_id, organization_id, state, updated_at) VALUES (?, ?, 'active', 0)").bind(moving.projectId, tenant.organizationId).run();
    const written = await call(`/v2/projects/${moving.projectId}/traces`, { as: tenant, body: { log_stream_id: moving.logStreamId, traces: [{ name: "after the switch" }] } });
    expect(written.status).toBe(200);
    const there = await otherDb.prepare("SELECT name FROM records WHERE project_id = ?").bind(moving.projectId).all<{ name: string }>();
    expect(there.results.map((r) => r.name)).toEqual(["after the switch"]);
    const search = await call(`/v2/projects/${moving.projectId}/traces/partial_search`, { as: tenant, body: { log_stream_id: moving.logStreamId } });
    expect(search.body.records.map((r: { name: string }) => r.name)).toEqual(["after the switch"]);
    clearProjectRoutes();
    forgetShardSizes();
  });
});

describe("organization-wide deletion across shards", () => {
  it("deletes in every project of the organization on every shard, one job summed over its parts, and touches no other organization", async () => {
    const admin = await createTenant("admin");
    const other = await createTenant("admin");
    const value = `everywhere-${uuid()}`;
    const runs: Run[] = [];
    // Enough projects that both shards hold some (placement alternates as data lands).
    const onShard = new Set<string>();
    for (let i = 0; i < 10 && onShard.size < 2; i++) {
      const run = await createRun(admin);
      await call(`/v2/projects/${run.projectId}/traces`, {
        as: admin,
        body: { log_stream_id: run.logStreamId, traces: [{ name: "match", user_metadata: { user: value }, input: "x".repeat(900_000), spans: [{ type: "llm" }] }, { name: "keep" }] },
      });
      runs.push(run);
      onShard.add(await shardOf(run.projectId));
    }
    expect([...onShard].sort()).toEqual([...SHARDS]);
    const theirs = await createRun(other);
    await call(`/v2/projects/${theirs.projectId}/traces`, { as: other, body: { log_stream_id: theirs.logStreamId, traces: [{ name: "match", user_metadata: { user: value } }] } });

    const dryRun = await call("/v2/org-jobs/delete-by-metadata?dry_run=true", { as: admin, body: { metadata_key: "user", metadata_value: value } });
    expect(dryRun.body.would_delete).toEqual({ sessions: 0, traces: runs.length, spans: runs.length });

    const queued = await call("/v2/org-jobs/delete-by-metadata", { as: admin, body: { metadata_key: "user", metadata_value: value } });
    const { job } = await waitForJob(admin, queued.body.job_id);
    expect(job.status).toBe("completed");
    expect(job.progress).toEqual({ sessions_deleted: 0, traces_deleted: runs.length, spans_deleted: runs.length });
    for (const run of runs) {
      const left = await call(`/v2/projects/${run.projectId}/traces/partial_search`, { as: admin, body: { log_stream_id: run.logStreamId } });
      expect(left.body.records.map((r: { name: string }) => r.name)).toEqual(["keep"]);
    }
    const untouched = await call(`/v2/projects/${theirs.projectId}/traces/partial_search`, { as: other, body: { log_stream_id: theirs.logStreamId } });
    expect(untouched.body.records).toHaveLength(1);
    expect((await getJob(admin, queued.body.job_id)).status).toBe("completed");
  });
});
