/**
 * Moving a closed partition to another shard online (contract section 13, docs/sharding.md
 * "Moving a partition"): a project with partitions on SHARD_0 (its home: partitions 1 and 3) and
 * SHARD_1 (partition 2, closed) moves partition 2 to the third database (DB), step by step,
 * against a twin project of one partition that receives the same writes with the same ids. At
 * every phase, and after steps repeated as a crash before their save would repeat them, after a
 * pause and its resumption, every compared read answers as the twin does: each record once, late
 * children, updates, ratings and deletions written during the move included. Then the refusals,
 * each changing nothing, and a move run to its end by the real queue.
 */
import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { runStatements } from "../src/admin/provisioning";
import type { Env } from "../src/env";
import { moveStep, pauseMove } from "../src/moves/advance-move";
import { partitionMoveRefusal } from "../src/moves/partition-move";
import { type MoveRow, saveMove } from "../src/moves/move-rows";
import { requestPartitionMoveStatement, resumeMoveStatement } from "../src/moves/move-requests";
import { type PartitionRow, clearPartitionCache, readPartitions, rememberPartitionRows } from "../src/partitions/partition-catalog";
import { moveTestSeam } from "../src/moves/move-limits";
import { clearProjectRoutes } from "../src/shards/project-routing";
import { deleteByMetadata, waitForJob } from "./deletion-fixtures";
import { move, runThroughQueue, stepUntil } from "./support/moves";
import { type PartitionedProject, fetchAs, ingestTraces, projectOn, rollTo, shardsOf } from "./support/partitioned-project";
import { type Tenant, createTenant } from "./support/tenants";

const T0 = Date.parse("2026-11-20T10:00:00Z");
const at = (minutes: number) => new Date(T0 + minutes * 60_000).toISOString();
const uuid = () => crypto.randomUUID();

interface Side {
  p: PartitionedProject;
  template: string;
}

let tenant: Tenant;
let split: Side;
let single: Side;
const TRACES = Array.from({ length: 10 }, () => uuid());
const SPANS = Array.from({ length: 10 }, () => uuid());
const SESSION = uuid();

function trace(i: number, extra: Record<string, unknown> = {}) {
  return {
    id: TRACES[i],
    name: `t${i}`,
    input: `question ${i}`,
    output: `answer ${i}`,
    created_at: at(i * 10),
    tags: [i % 2 ? "odd" : "even"],
    user_metadata: i === 8 ? { customer: "erase-me" } : { n: String(i) },
    ...(i === 3 || i === 4 ? { session_id: SESSION } : {}),
    spans: [{ id: SPANS[i], type: "llm", name: `llm${i}`, model: "gpt", created_at: at(i * 10 + 1), metrics: { num_input_tokens: i + 1, duration_ns: (i + 1) * 1000 } }],
    ...extra,
  };
}

async function makeSide(partitioned: boolean): Promise<Side> {
  const p = await projectOn(tenant, partitioned ? "SHARD_0" : "SHARD_1");
  const made = await fetchAs(tenant, {}, `/v2/projects/${p.projectId}/annotation/templates`, { name: "score", constraints: { annotation_type: "score", min: 1, max: 5 } });
  expect(made.status, JSON.stringify(made.body)).toBe(200);
  await ingestTraces(p, [0, 1, 2].map((i) => trace(i)));
  if (partitioned) await rollTo(p, "SHARD_1");
  // The session first: a trace whose session is stored nowhere is its own root only by its
  // session id, which the root lookup would not find (its late children would then go to the
  // open partition; seen while writing this test, left to the ingest's owners).
  const session = await fetchAs(tenant, {}, `/v2/projects/${p.projectId}/sessions`, { log_stream_id: p.logStreamId, id: SESSION, name: "s", created_at: at(29) });
  expect(session.status, JSON.stringify(session.body)).toBe(200);
  await ingestTraces(p, [3, 4, 5, 8].map((i) => trace(i)));
  if (partitioned) await rollTo(p, "SHARD_0");
  await ingestTraces(p, [6, 7].map((i) => trace(i)));
  const side = { p, template: made.body.id as string };
  await rateOn(side, 4, 4);
  return side;
}

const both = async (write: (side: Side) => Promise<unknown>) => {
  for (const side of [single, split]) await write(side);
};

async function rateOn(side: Side, i: number, value: number) {
  const answer = await fetchAs(tenant, {}, `/v2/projects/${side.p.projectId}/annotation/templates/${side.template}/records/${TRACES[i]}/rating`, { rating: { annotation_type: "score", value } }, "PUT");
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
}

const lateSpan = (side: Side, parent: number, id: string) =>
  fetchAs(tenant, {}, `/v2/projects/${side.p.projectId}/traces`, { log_stream_id: side.p.logStreamId, traces: [{ ...trace(parent), spans: [{ id, type: "tool", name: `late-${id.slice(0, 4)}`, created_at: at(500) }] }] });

async function patchOutput(side: Side, i: number, output: string) {
  const answer = await fetchAs(tenant, {}, `/v2/projects/${side.p.projectId}/traces/${TRACES[i]}`, { log_stream_id: side.p.logStreamId, output }, "PATCH");
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
}

/** Every compared read of a side, its own ids replaced. */
async function reads(side: Side): Promise<unknown> {
  const base = `/v2/projects/${side.p.projectId}`;
  const out: Record<string, unknown> = {};
  const searches: [string, Record<string, unknown>][] = [
    ["traces/partial_search", {}],
    ["traces/partial_search", { sort: { column_id: "name", ascending: true } }],
    ["spans/partial_search", {}],
    ["sessions/partial_search", {}],
  ];
  for (const [route, body] of searches) {
    const seen: unknown[] = [];
    let token: number | null = 0;
    for (let guard = 0; token !== null && guard < 30; guard++) {
      const page = await fetchAs(tenant, {}, `${base}/${route}`, { log_stream_id: side.p.logStreamId, ...body, limit: 3, starting_token: token });
      expect(page.status, JSON.stringify(page.body)).toBe(200);
      seen.push(...page.body.records.map((r: Record<string, unknown>) => [r.id, r.name, r.output ?? null, r.annotations ?? null]));
      token = page.body.next_starting_token;
    }
    out[`${route} ${JSON.stringify(body)}`] = seen;
  }
  for (const family of ["traces", "spans", "sessions"]) {
    const answer = await fetchAs(tenant, {}, `${base}/${family}/count`, { log_stream_id: side.p.logStreamId });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    out[`${family} count`] = answer.body.total_count;
  }
  const window = { start_time: at(-60), end_time: at(24 * 60) };
  const metrics = await fetchAs(tenant, {}, `${base}/metrics/search`, { log_stream_id: side.p.logStreamId, ...window, interval: 60, group_by: "name" });
  expect(metrics.status, JSON.stringify(metrics.body)).toBe(200);
  out.metrics = metrics.body;
  const exported = await fetchAs(tenant, {}, `${base}/export_records`, { log_stream_id: side.p.logStreamId, root_type: "trace", export_format: "jsonl" });
  expect(exported.status, exported.text.slice(0, 300)).toBe(200);
  out.exported = exported.text.replace(/"updated_at":"[^"]*"/g, '"updated_at":"T"');
  const rating = await fetchAs(tenant, {}, `${base}/annotation/templates/${side.template}/records/${TRACES[3]}/rating`);
  out.rating = [rating.status, rating.body?.rating ?? null];
  const text = JSON.stringify(out).replaceAll(side.p.projectId, "P").replaceAll(side.p.logStreamId, "R").replaceAll(side.template, "TPL");
  return JSON.parse(text);
}

async function expectSameReads(when: string) {
  // Each check as a fresh isolate would see it, and once more from warm caches (below).
  clearPartitionCache();
  clearProjectRoutes();
  expect(await reads(split), when).toEqual(await reads(single));
  expect(await reads(split), `${when} (warm caches)`).toEqual(await reads(single));
}

async function requestPartitionMove(side: Side, seq: number, target: string): Promise<string> {
  const partition = (await readPartitions(env as unknown as Env, side.p.projectId)).find((p) => p.seq === seq)!;
  const moveId = uuid();
  const [inserted] = await runStatements(env.DB, [requestPartitionMoveStatement({ moveId, projectId: side.p.projectId, partitionId: partition.id, target, nowMicros: Date.now() * 1000 })]);
  if (inserted !== 1) throw new Error(`move of partition ${seq} to ${target} not created`);
  return moveId;
}

/** Runs the move's current step and throws its result away: a crash after the step's work, before its save. */
async function stepLost(moveId: string): Promise<MoveRow> {
  const current = await move(moveId);
  const result = await moveStep(env as Env, current);
  if ("wait" in result) throw new Error(`move waits: ${result.reason}`);
  return move(moveId);
}

/** One step, saved. */
async function stepSaved(moveId: string): Promise<MoveRow> {
  const current = await move(moveId);
  const result = await moveStep(env as Env, current);
  if ("wait" in result) throw new Error(`move waits: ${result.reason}`);
  return "saved" in result ? result.saved : (await saveMove(env as Env, current, result.save))!;
}

beforeAll(async () => {
  tenant = await createTenant("admin");
  single = await makeSide(false);
  split = await makeSide(true);
});

describe("moving a closed partition", () => {
  it("moves online: every read answers as the twin at every phase, writes during the move arrive, a repeated step, a pause and a resume change nothing", async () => {
    const partitions = await readPartitions(env as unknown as Env, split.p.projectId);
    expect(partitions.map((p) => [p.seq, p.shard, p.state])).toEqual([
      [1, "SHARD_0", "closed"],
      [2, "SHARD_1", "closed"],
      [3, "SHARD_0", "open"],
    ]);
    await expectSameReads("before the move");
    const moveId = await requestPartitionMove(split, 2, "DB");
    moveTestSeam.chunkRecords = 2;
    moveTestSeam.chunkRows = 2;

    // Copying: the target's copy grows; nobody reads it.
    let m = await stepUntil(moveId, (x) => x.phase === "copying" && x.step === "records");
    await stepLost(moveId);
    m = await stepSaved(moveId);
    expect(m.records_copied).toBeGreaterThan(0);
    await expectSameReads("while copying");

    // Writes while the source exports: logged on the source, carried over.
    const late = uuid();
    await both(async (side) => expect((await lateSpan(side, 3, late)).status).toBe(200));
    await both((side) => patchOutput(side, 5, "patched while copying"));
    await both((side) => rateOn(side, 3, 2));
    const erased = await deleteByMetadata(tenant, { metadata_key: "customer", metadata_value: "erase-me" }, "?immediate=true");
    expect(erased.status, JSON.stringify(erased.body)).toBe(200);
    if (erased.body.job_id) expect((await waitForJob(tenant, erased.body.job_id)).job.status).toBe("completed");
    await expectSameReads("after writes during the copy");

    m = await stepUntil(moveId, (x) => x.phase === "catching_up");
    await stepLost(moveId);
    m = await stepUntil(moveId, (x) => x.phase === "frozen" && x.step === "verify");
    await expectSameReads("frozen");
    // Frozen: the partition's writes wait (503, Retry-After), the other partitions' do not.
    const refused = await lateSpan(split, 4, uuid());
    expect(refused.status, JSON.stringify(refused.body)).toBe(503);
    const openLate = uuid();
    await both(async (side) => expect((await lateSpan(side, 6, openLate)).status).toBe(200));

    // A pause (the dead-letter consumer's): the source takes writes again, logged; then resumed.
    await pauseMove(env as Env, m, "test pause");
    expect(await move(moveId)).toMatchObject({ status: "paused", phase: "catching_up" });
    const afterPause = uuid();
    await both(async (side) => expect((await lateSpan(side, 4, afterPause)).status).toBe(200));
    await expectSameReads("paused");
    await runStatements(env.DB, [resumeMoveStatement(moveId)]);

    m = await stepUntil(moveId, (x) => x.phase === "frozen" && x.step === "switch");
    const before = (await env.DB.prepare("SELECT id, project_id, seq, shard, state, opened_at, closed_at FROM project_partitions WHERE project_id = ?1 ORDER BY seq").bind(split.p.projectId).all<PartitionRow>()).results;
    m = await stepUntil(moveId, (x) => x.phase === "cleanup" && x.step === "records");
    expect(m.error_message).toBeNull();
    await expectSameReads("switched, old copy still on the source");
    // An isolate that still lists the partition on the source (its 4 s cache): its reads and
    // writes there are refused (the source is gone) and re-routed to the target.
    rememberPartitionRows(split.p.projectId, before);
    expect(await reads(split), "stale partitions").toEqual(await reads(single));
    const stale = uuid();
    rememberPartitionRows(split.p.projectId, before);
    for (const side of [split, single]) expect((await lateSpan(side, 5, stale)).status).toBe(200);
    expect((await shardsOf(split.p, [stale])).get(stale)).toBe("DB");
    await expectSameReads("after a stale write");
    await stepLost(moveId);
    m = await stepSaved(moveId);
    await expectSameReads("cleanup under way");
    m = await stepUntil(moveId);
    expect(m).toMatchObject({ phase: "completed", status: "running", error_message: null, partition_id: partitions[1]!.id });
    await expectSameReads("after the move");

    // Where everything is now: partition 2 on DB, nothing of the project left on SHARD_1.
    const now = await readPartitions(env as unknown as Env, split.p.projectId);
    expect(now.map((p) => [p.seq, p.shard, p.state])).toEqual([
      [1, "SHARD_0", "closed"],
      [2, "DB", "closed"],
      [3, "SHARD_0", "open"],
    ]);
    const where = await shardsOf(split.p, [TRACES[3]!, TRACES[4]!, TRACES[5]!, late, afterPause, TRACES[0]!, TRACES[6]!]);
    expect(Object.fromEntries(where)).toEqual({
      [TRACES[3]!]: "DB",
      [TRACES[4]!]: "DB",
      [TRACES[5]!]: "DB",
      [late]: "DB",
      [afterPause]: "DB",
      [TRACES[0]!]: "SHARD_0",
      [TRACES[6]!]: "SHARD_0",
    });
    const left = await (env as unknown as Record<string, D1Database>).SHARD_1!.prepare(
      "SELECT (SELECT count(*) FROM records WHERE project_id = ?1) + (SELECT count(*) FROM shard_partitions WHERE project_id = ?1) + (SELECT count(*) FROM record_patches WHERE project_id = ?1) AS n",
    )
      .bind(split.p.projectId)
      .first<{ n: number }>();
    expect(left!.n).toBe(0);
    // Usage lists the partition on its new shard with its records and roots.
    const usage = await fetchAs(tenant, {}, `/v2/projects/${split.p.projectId}/usage`);
    expect(usage.status, JSON.stringify(usage.body)).toBe(200);
    const moved = usage.body.partitions.find((p: { partition_id: string }) => p.partition_id === partitions[1]!.id);
    expect(moved).toMatchObject({ shard: "DB", state: "closed", roots: 2 });
    // After the move: a late child of a moved root goes to it on its new shard.
    const after = uuid();
    await both(async (side) => expect((await lateSpan(side, 5, after)).status).toBe(200));
    expect((await shardsOf(split.p, [after])).get(after)).toBe("DB");
    await expectSameReads("a write after the move");
    delete moveTestSeam.chunkRecords;
    delete moveTestSeam.chunkRows;
  }, 180_000);

  it("refuses, at its first step and changing nothing: the project's own shard as source or target, a target past its high-water mark; the open partition cannot be asked for", async () => {
    const p = await projectOn(tenant, "SHARD_0");
    await ingestTraces(p, [trace(0)]);
    await rollTo(p, "SHARD_1");
    await ingestTraces(p, [{ ...trace(1), id: uuid(), spans: [] }]);
    await rollTo(p, "SHARD_0");
    const side = { p, template: "" };
    const cases: [number, string, RegExp, Record<string, string>?][] = [
      [2, "SHARD_0", /project's own shard/],
      [1, "SHARD_1", /project's own shard.*move-project/],
      [2, "DB", /high-water mark/, { SHARD_HIGH_WATER_BYTES: "1" }],
    ];
    for (const [seq, target, message, overrides] of cases) {
      const before = await readPartitions(env as unknown as Env, p.projectId);
      const moveId = await requestPartitionMove(side, seq, target);
      const done = await stepUntil(moveId, () => false, () => ({ ...env, ...(overrides ?? {}) }) as Env);
      expect(done.phase, `${seq} -> ${target}`).toBe("failed");
      expect(done.error_message).toMatch(message);
      expect(await readPartitions(env as unknown as Env, p.projectId)).toEqual(before);
      const states = await (env as unknown as Record<string, D1Database>)[target]!.prepare("SELECT state FROM shard_projects WHERE project_id = ?1").bind(p.projectId).first<{ state: string }>();
      expect(states?.state ?? null, `${target} untouched`).toBe(target === "DB" ? null : "active");
    }
    // The open partition cannot even be asked for (the request inserts nothing).
    const partitions = await readPartitions(env as unknown as Env, p.projectId);
    const [inserted] = await runStatements(env.DB, [requestPartitionMoveStatement({ moveId: uuid(), projectId: p.projectId, partitionId: partitions[1]!.id, target: "SHARD_1", nowMicros: Date.now() * 1000 })]);
    expect(inserted).toBe(0);
  }, 60_000);

  it("runs to its end through the real queue; a second move of the project and a roll onto its shards wait for it", async () => {
    const p = await projectOn(tenant, "SHARD_0");
    await ingestTraces(p, [trace(0)]);
    await rollTo(p, "SHARD_1");
    const id = uuid();
    await ingestTraces(p, [{ ...trace(1), id, spans: [] }]);
    await rollTo(p, "SHARD_0");
    const side = { p, template: "" };
    const moveId = await requestPartitionMove(side, 2, "DB");
    await expect(requestPartitionMove(side, 1, "DB")).rejects.toThrow(/UNIQUE|not created/);
    // A roll onto the move's target (or source) while the move is asked for is a no-op: the copy there would be read.
    const before = await readPartitions(env as unknown as Env, p.projectId);
    await rollTo(p, "DB");
    await rollTo(p, "SHARD_1");
    expect(await readPartitions(env as unknown as Env, p.projectId)).toEqual(before);
    const done = await runThroughQueue(moveId);
    expect(done).toMatchObject({ phase: "completed", error_message: null, records_copied: 1, old_records_deleted: 1 });
    expect((await shardsOf(p, [id])).get(id)).toBe("DB");
  }, 60_000);

  it("names why a partition cannot go, for every case the admin command and the first step refuse", () => {
    const parts = [
      { id: "p1", seq: 1, shard: "SHARD_0", state: "closed" as const },
      { id: "p2", seq: 2, shard: "SHARD_1", state: "closed" as const },
      { id: "p3", seq: 3, shard: "SHARD_1", state: "closed" as const },
      { id: "p4", seq: 4, shard: "SHARD_2", state: "closed" as const },
      { id: "p5", seq: 5, shard: "SHARD_0", state: "open" as const },
    ];
    const why = (seq: number, target: string) => partitionMoveRefusal({ projectId: "P", home: "SHARD_0", partitions: parts, partition: parts[seq - 1]!, target });
    expect(why(5, "SHARD_3")).toMatch(/partition 5 \(p5\) is the project's open partition.*roll-partition --project P/);
    expect(why(4, "SHARD_2")).toMatch(/already on SHARD_2/);
    expect(why(1, "SHARD_3")).toMatch(/SHARD_0, the project's own shard.*move-project/);
    expect(why(4, "SHARD_0")).toMatch(/SHARD_0 is the project's own shard/);
    expect(why(2, "SHARD_3")).toMatch(/shares SHARD_1 with partition 3/);
    expect(why(4, "SHARD_1")).toMatch(/SHARD_1 holds partition 2, 3 of the project/);
    expect(why(4, "SHARD_3")).toBeUndefined();
  });
});
