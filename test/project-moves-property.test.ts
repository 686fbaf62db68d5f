/**
 * The move property (issue 10, point 5): whatever fails, whatever is delivered twice, whatever a
 * client writes meanwhile, and however often the move is paused and resumed, the moved project
 * ends exactly as a twin project that never moved and got the same writes: nothing lost, nothing
 * duplicated, nothing left on the source.
 *
 * Each case seeds a project and its twin alike (record ids are per project, so both use the same
 * ids), asks for a move, and runs its steps; at generated steps it
 * - injects a D1 failure (test/support/faulty-d1.ts) into the source, the target or the catalog:
 *   the call lost before the database, the answer lost after it, or a statement failing inside
 *   a batch; the step is then run again from the move's saved state, as a redelivered message;
 * - runs a step twice from the same saved state (a message redelivered after its work but before
 *   its result was saved);
 * - pauses the move (as the dead-letter consumer does) and resumes it;
 * - has the client write to both projects: new traces, updates of existing ones, held updates,
 *   a deletion by metadata. A write the moved project refuses with a 503 (frozen) is retried by
 *   the client after the move, and the twin gets it at that moment too.
 */
import { env } from "cloudflare:test";
import fc from "fast-check";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Env } from "../src/env";
import { moveStep, pauseMove } from "../src/moves/advance-move";
import { moveTestSeam } from "../src/moves/move-limits";
import { type MoveRow, saveMove } from "../src/moves/move-rows";
import { createRun, type Run } from "./deletion-fixtures";
import { call } from "./support/client";
import { type FaultMode, faultyD1 } from "./support/faulty-d1";
import { rememberProjectRoute } from "../src/shards/project-routing";
import { dbOf, move, otherShard, projectState, requestMove, shardOf, stateOnShard, stepUntil } from "./support/moves";
import { type Tenant, createTenant } from "./support/tenants";
import { catchUpTextIndexesEverywhere, textIndexDifferencesEverywhere } from "./support/text-index";

let tenant: Tenant;

beforeAll(async () => {
  tenant = await createTenant("admin");
});

afterEach(() => {
  for (const key of Object.keys(moveTestSeam)) delete moveTestSeam[key as keyof typeof moveTestSeam];
});

const ID_POOL = 6;

type ClientOp =
  | { kind: "trace"; id: number; value: number; spans: number }
  | { kind: "patch"; id: number; output: string }
  | { kind: "erase"; value: number };

interface Case {
  seed: { id: number; value: number; spans: number }[];
  ops: { at: number; op: ClientOp }[];
  faults: { at: number; db: "source" | "target" | "DB"; k: number; mode: FaultMode }[];
  twice: number[];
  pauses: number[];
  chunk: number;
}

const traceOp = fc.record({ kind: fc.constant("trace" as const), id: fc.nat(ID_POOL - 1), value: fc.nat(2), spans: fc.nat(2) });
const clientOp: fc.Arbitrary<ClientOp> = fc.oneof(
  traceOp,
  fc.record({ kind: fc.constant("patch" as const), id: fc.nat(ID_POOL + 2), output: fc.constantFrom("late", "later") }),
  fc.record({ kind: fc.constant("erase" as const), value: fc.nat(2) }),
);

const cases: fc.Arbitrary<Case> = fc.record({
  seed: fc.array(fc.record({ id: fc.nat(ID_POOL - 1), value: fc.nat(2), spans: fc.nat(2) }), { minLength: 1, maxLength: 5 }),
  ops: fc.array(fc.record({ at: fc.nat(40), op: clientOp }), { maxLength: 5 }),
  faults: fc.array(fc.record({ at: fc.nat(40), db: fc.constantFrom("source" as const, "target" as const, "DB" as const), k: fc.integer({ min: 1, max: 6 }), mode: fc.constantFrom<FaultMode>("before", "after", "inside") }), {
    maxLength: 4,
  }),
  twice: fc.array(fc.nat(40), { maxLength: 3 }),
  pauses: fc.array(fc.nat(40), { maxLength: 1 }),
  chunk: fc.integer({ min: 1, max: 3 }),
});

/** Ids of the case's records: fixed per index, the same in both projects. */
function idsOf(salt: string) {
  const memo = new Map<string, string>();
  return (what: string) => {
    if (!memo.has(what)) memo.set(what, crypto.randomUUID());
    return memo.get(what)!;
  };
  void salt;
}

/** One client write to one project; answers its HTTP status. */
async function apply(run: Run, op: ClientOp, id: (what: string) => string, values: string[]): Promise<number> {
  if (op.kind === "trace") {
    const traceId = id(`trace-${op.id}`);
    const body = {
      log_stream_id: run.logStreamId,
      traces: [
        {
          id: traceId,
          name: `trace-${op.id}`,
          input: `in-${op.value}`,
          output: `out-${op.value}`,
          created_at: "2026-11-20T10:00:00Z",
          user_metadata: { v: values[op.value]! },
          tags: [`tag-${op.value}`],
          metrics: { score: op.value },
          spans: Array.from({ length: op.spans }, (_, i) => ({ id: id(`span-${op.id}-${i}`), type: "llm", name: `span-${i}`, created_at: "2026-11-20T10:00:01Z" })),
        },
      ],
    };
    return (await call(`/v2/projects/${run.projectId}/traces`, { as: tenant, body })).status;
  }
  if (op.kind === "patch") {
    const traceId = op.id < ID_POOL ? id(`trace-${op.id}`) : id(`pending-${op.id}`);
    return (await call(`/v2/projects/${run.projectId}/traces/${traceId}`, { as: tenant, method: "PATCH", body: { log_stream_id: run.logStreamId, output: op.output } })).status;
  }
  return (await call(`/v2/org-jobs/delete-by-metadata?immediate=true`, { as: tenant, body: { metadata_key: "v", metadata_value: values[op.value]! } })).status;
}

/** A project's state without what differs between two projects by construction. */
function normalized(state: Record<string, Record<string, unknown>[]>) {
  const strip = (row: Record<string, unknown>) => {
    const { project_id: _p, run_id: _r, id: _i, created_at: _c, updated_at: _u, deleted_at: _d, ...rest } = row;
    // Runs differ by id; every other table keeps its record id.
    return "kind" in row ? rest : { ...rest, id: row.id };
  };
  return Object.fromEntries(Object.entries(state).map(([table, rows]) => [table, rows.map(strip).map((r) => JSON.stringify(r)).sort()]));
}

describe("moving a project, with failures, redeliveries, pauses and concurrent writes", () => {
  it("ends exactly as a twin that never moved, with nothing left on the source", async () => {
    let round = 0;
    await fc.assert(
      fc.asyncProperty(cases, async (c) => {
        round += 1;
        moveTestSeam.chunkRecords = c.chunk;
        moveTestSeam.chunkRows = c.chunk;
        moveTestSeam.verifyRuns = c.chunk;
        moveTestSeam.freezeBelowChanges = 1;
        const values = [0, 1, 2].map((i) => `r${round}-${crypto.randomUUID().slice(0, 8)}-${i}`);
        const id = idsOf(String(round));
        const moved = await createRun(tenant);
        const twin = await createRun(tenant);
        for (const s of c.seed) {
          for (const run of [moved, twin]) expect(await apply(run, { kind: "trace", ...s }, id, values)).toBe(200);
        }
        // Every other round the seed is indexed before the move (the cron's catch-up ran), so the
        // move's cleanup and the writes during it meet indexed records too.
        if (round % 2 === 0) await catchUpTextIndexesEverywhere();
        const source = await shardOf(moved.projectId);
        const target = otherShard(source);
        const moveId = await requestMove(moved.projectId, target);

        const deferred: ClientOp[] = [];
        const clientWrites = async (step: number) => {
          for (const { op } of c.ops.filter((o) => o.at === step)) {
            if (deferred.length > 0) {
              deferred.push(op);
              continue;
            }
            const status = await apply(moved, op, id, values);
            if (status === 503) {
              deferred.push(op);
              continue;
            }
            expect(status).toBe(200);
            expect(await apply(twin, op, id, values)).toBe(200);
          }
        };

        let current: MoveRow = await move(moveId);
        let waited = 0;
        for (let step = 0; current.phase !== "completed"; step++) {
          expect(step, `move stuck at ${current.phase}/${current.step}`).toBeLessThan(2_000);
          await clientWrites(step);
          if (c.pauses.includes(step) && current.status === "running") {
            await pauseMove(env as Env, current, "paused by the test");
            await env.DB.prepare("UPDATE project_moves SET status = 'running' WHERE id = ?").bind(moveId).run();
            current = await move(moveId);
          }
          const fault = c.faults.find((f) => f.at === step);
          let on = env as Env;
          if (fault) {
            const binding = fault.db === "source" ? source : fault.db === "target" ? target : "DB";
            on = { ...(env as Env), [binding]: faultyD1(dbOf(binding), fault.k, fault.mode).db } as Env;
          }
          try {
            if (c.twice.includes(step)) {
              // The first delivery's work is done, its result never saved.
              await moveStep(env as Env, current);
            }
            const result = await moveStep(on, current);
            if ("wait" in result) {
              waited += 1;
              expect(waited).toBeLessThan(200);
              await new Promise((r) => setTimeout(r, 50));
            } else if (!("saved" in result)) {
              await saveMove(env as Env, current, result.save);
            }
          } catch (error) {
            // A failed step: the message is delivered again, from the saved state.
            if (!fault) throw error;
          }
          current = await move(moveId);
          expect(current.phase, current.error_message ?? "").not.toBe("failed");
        }
        for (const op of deferred) {
          expect(await apply(moved, op, id, values)).toBe(200);
          expect(await apply(twin, op, id, values)).toBe(200);
        }
        for (const { op } of c.ops.filter((o) => o.at >= 2_000)) void op;

        expect(await shardOf(moved.projectId)).toBe(target);
        const [movedState, twinState, left] = await Promise.all([
          projectState(dbOf(target), moved.projectId),
          projectState(dbOf(await shardOf(twin.projectId)), twin.projectId),
          projectState(dbOf(source), moved.projectId),
        ]);
        expect(normalized(movedState)).toEqual(normalized(twinState));
        expect(Object.values(left).flat()).toEqual([]);
        // The text index follows every write and removal (migration 0016).
        expect(await textIndexDifferencesEverywhere()).toEqual([]);
      }),
      { numRuns: 20 },
    );
  }, 240_000);

  it("a move back (A to B, then B to A) within the route cache: a write routed by the stale route to A while A is importing goes to B (or a 503), and is never lost", async () => {
    const run = await createRun(tenant);
    const values = ["stale-0", "stale-1", "stale-2"];
    const id = idsOf("stale");
    const first = { kind: "trace" as const, id: 0, value: 0, spans: 1 };
    expect(await apply(run, first, id, values)).toBe(200);
    const a = await shardOf(run.projectId);
    const b = otherShard(a);
    const { body: project } = await call(`/v2/projects/${run.projectId}`, { as: tenant });
    // An isolate that learnt the route before the first move and keeps it for five minutes.
    const staleRoute = () =>
      rememberProjectRoute({ projectId: run.projectId, organizationId: tenant.organizationId, projectName: project.name, shard: a, retentionDays: null });

    expect((await stepUntil(await requestMove(run.projectId, b))).phase).toBe("completed");
    const back = await requestMove(run.projectId, a);
    const copying = await stepUntil(back, (m) => m.phase === "copying");
    expect(copying.phase).toBe("copying");
    expect(await stateOnShard(dbOf(a), run.projectId)).toBe("importing");

    staleRoute();
    const late = { kind: "trace" as const, id: 1, value: 1, spans: 2 };
    const status = await apply(run, late, id, values);
    expect([200, 503]).toContain(status);
    expect((await stepUntil(back)).phase).toBe("completed");
    if (status === 503) {
      staleRoute();
      expect(await apply(run, late, id, values)).toBe(200);
    }
    // Both writes are on A, readable, and nothing is left on B.
    const state = await projectState(dbOf(a), run.projectId);
    const ids = new Set(Object.values(state).flat().map((row) => row.id));
    for (const what of ["trace-0", "span-0-0", "trace-1", "span-1-0", "span-1-1"]) expect(ids.has(id(what)), what).toBe(true);
    const lookup = await call(`/v2/projects/${run.projectId}/traces/${id("trace-1")}`, { as: tenant });
    expect(lookup.status, JSON.stringify(lookup.body)).toBe(200);
    expect(Object.values(await projectState(dbOf(b), run.projectId)).flat()).toEqual([]);
  }, 120_000);
});
