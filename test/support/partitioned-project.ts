/**
 * A project whose records span partitions on several shards, as tests of partition-aware paths
 * need one (docs/partitions.md): created pinned to a shard, then rolled by the operator's roll to
 * a partition on another shard between writes. Requests go through the worker's entry point with
 * some variables replaced, as `.dev.vars` would (DATA_SHARDS pins where a project or partition goes).
 */
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { expect } from "vitest";
import type { Env } from "../../src/env";
import worker from "../../src/index";
import { clearPartitionCache, readPartitions } from "../../src/partitions/partition-catalog";
import { rollPartition } from "../../src/partitions/roll-partition";
import type { Tenant } from "./tenants";

export interface PartitionedProject {
  tenant: Tenant;
  projectId: string;
  logStreamId: string;
}

/**
 * A request as `tenant`, with these variables replaced: its status, its JSON body (null if none)
 * and its text. Not support/worker-call.ts's callWorkerWith, whose body is "JSON if it parses":
 * a one-line JSONL export parses, and the export comparisons need its text.
 */
export async function fetchAs(tenant: Tenant, overrides: Record<string, string>, path: string, body?: unknown, method?: string) {
  const ctx = createExecutionContext();
  const response = await worker.fetch(
    new Request(`http://trace-store.test${path}`, {
      method: method ?? (body === undefined ? "GET" : "POST"),
      headers: { "content-type": "application/json", "Service-API-Key": tenant.apiKey },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
    { ...env, ...overrides } as Env,
    ctx,
  );
  await waitOnExecutionContext(ctx);
  const text = await response.text();
  let parsed: any = null;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON (an export's lines): `text` has it
  }
  return { status: response.status, body: parsed, text, headers: response.headers };
}

/** A project and its log stream, placed on `shard`. */
export async function projectOn(tenant: Tenant, shard: string, fields: Record<string, unknown> = {}): Promise<PartitionedProject> {
  const project = await fetchAs(tenant, { DATA_SHARDS: shard }, "/v2/projects", { name: `partitioned-${crypto.randomUUID()}`, type: "gen_ai", ...fields });
  expect(project.status, JSON.stringify(project.body)).toBe(200);
  const stream = await fetchAs(tenant, {}, `/v2/projects/${project.body.id}/log_streams`, { name: "default" });
  expect(stream.status, JSON.stringify(stream.body)).toBe(200);
  return { tenant, projectId: project.body.id, logStreamId: stream.body.id };
}

/** Writes traces to the project's log stream (each to its root's partition, new ones to the open one). */
export async function ingestTraces(p: PartitionedProject, traces: Record<string, unknown>[], extra: Record<string, unknown> = {}) {
  const answer = await fetchAs(p.tenant, {}, `/v2/projects/${p.projectId}/traces`, { log_stream_id: p.logStreamId, traces, ...extra });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer;
}

/** Closes the open partition and opens the next on `shard` (as `npm run admin -- roll-partition` does). */
export async function rollTo(p: PartitionedProject, shard: string): Promise<void> {
  const open = (await readPartitions(env as unknown as Env, p.projectId)).find((x) => x.state === "open");
  await rollPartition({ ...env, DATA_SHARDS: shard } as unknown as Env, p.tenant.organizationId, p.projectId, { expectOpen: open!.id, reason: "operator" });
  clearPartitionCache();
}

/** Each listed record's shard, wherever it is stored (undefined: nowhere). */
export async function shardsOf(p: PartitionedProject, ids: readonly string[]): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  for (const shard of ["DB", "SHARD_0", "SHARD_1"]) {
    const db = (env as unknown as Record<string, D1Database>)[shard]!;
    const { results } = await db
      .prepare("SELECT id FROM records WHERE project_id = ?1 AND id IN (SELECT value FROM json_each(?2))")
      .bind(p.projectId, JSON.stringify(ids))
      .all<{ id: string }>();
    for (const row of results) found.set(row.id, shard);
  }
  return found;
}
