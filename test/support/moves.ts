/**
 * Helpers of the move tests: asking for a move as the admin command does, driving it step by
 * step (or through the real queue), and a project's whole stored state on its database, in a
 * form that two databases can be compared by (no rowids).
 */
import { env } from "cloudflare:test";
import { runStatements } from "../../src/admin/provisioning";
import type { Env } from "../../src/env";
import { type AdvanceOutcome, moveStep } from "../../src/moves/advance-move";
import { type MoveRow, loadMove, saveMove } from "../../src/moves/move-rows";
import { requestMoveStatement } from "../../src/moves/move-requests";
import { sendMoveMessage } from "../../src/moves/move-queue";
import { METRIC_ROWS } from "./metric-rows";

export const SHARDS = ["SHARD_0", "SHARD_1"] as const;

export async function shardOf(projectId: string): Promise<string> {
  const row = await env.DB.prepare("SELECT coalesce(shard, 'DB') AS shard FROM projects WHERE id = ?").bind(projectId).first<{ shard: string }>();
  return row!.shard;
}

export const otherShard = (shard: string) => (shard === "SHARD_0" ? "SHARD_1" : "SHARD_0");

export const dbOf = (name: string) => (env as unknown as Record<string, D1Database>)[name]!;

/** Asks for a move as `npm run admin -- move-project` does; answers the move's id. */
export async function requestMove(projectId: string, target: string): Promise<string> {
  const moveId = crypto.randomUUID();
  const [inserted] = await runStatements(env.DB, [requestMoveStatement({ moveId, projectId, target, nowMicros: Date.now() * 1000 })]);
  if (inserted !== 1) throw new Error(`move of ${projectId} to ${target} not created`);
  return moveId;
}

export async function move(moveId: string): Promise<MoveRow> {
  return (await loadMove(env, moveId))!;
}

/**
 * Runs single steps (each saved as the consumer saves it) until `until` holds or the move is
 * over; `on` (default: the test's env) supplies the bindings, so a test can inject faults.
 */
export async function stepUntil(moveId: string, until: (m: MoveRow) => boolean = () => false, on: () => Env = () => env as Env, maxSteps = 5_000): Promise<MoveRow> {
  let current = await move(moveId);
  for (let i = 0; i < maxSteps; i++) {
    if (until(current) || current.phase === "completed" || current.phase === "failed" || current.status === "paused") return current;
    const result = await moveStep(on(), current);
    if ("wait" in result) throw new Error(`move waits: ${result.reason}`);
    current = "saved" in result ? result.saved : ((await saveMove(env as Env, current, result.save)) ?? (await move(moveId)));
  }
  throw new Error(`move ${moveId} did not finish in ${maxSteps} steps (at ${current.phase}/${current.step})`);
}

/** Starts the move through the real queue and waits until it is over. */
export async function runThroughQueue(moveId: string, timeoutMs = 30_000, send = true): Promise<MoveRow> {
  const current = await move(moveId);
  if (send) await sendMoveMessage(env as Env, moveId, current.message_seq);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const now = await move(moveId);
    if (now.phase === "completed" || now.phase === "failed" || now.status === "paused") return now;
    if (Date.now() > deadline) throw new Error(`move ${moveId} still ${now.phase}/${now.step} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export type { AdvanceOutcome };

type Row = Record<string, unknown>;

export type ProjectState = Record<
  "records" | "record_metadata" | "record_tags" | "record_metrics" | "record_patches" | "record_tombstones" | "runs" | "run_columns",
  Row[]
>;

/** The project's stored state on one database: everything but rowids, in key order. */
export async function projectState(db: D1Database, projectId: string): Promise<ProjectState> {
  const all = async (sql: string) => (await db.prepare(sql).bind(projectId).all<Row>()).results;
  // Row keys (rid) and family keys are local to each database: not part of the state.
  const records = (await all("SELECT * FROM records WHERE project_id = ?1 ORDER BY id")).map(({ rid: _rid, family_key: _family, ...rest }) => rest);
  const side = (table: string, key: string) =>
    all(`SELECT s.* FROM ${table} AS s JOIN records AS r ON r.rid = s.record_rid WHERE r.project_id = ?1 ORDER BY s.record_id, s.${key}`).then((rows) =>
      rows.map(({ record_rid: _r, family_key: _family, ...rest }) => rest),
    );
  return {
    records,
    record_metadata: await side("record_metadata", "key"),
    record_tags: await side("record_tags", "tag"),
    record_metrics: await side(METRIC_ROWS, "name"),
    record_patches: await all("SELECT * FROM record_patches WHERE project_id = ?1 ORDER BY record_id, run_id"),
    record_tombstones: await all("SELECT * FROM record_tombstones WHERE project_id = ?1 ORDER BY record_id"),
    runs: await all("SELECT * FROM runs WHERE project_id = ?1 ORDER BY id"),
    run_columns: await all("SELECT c.* FROM run_columns AS c JOIN runs AS r ON r.id = c.run_id WHERE r.project_id = ?1 ORDER BY c.run_id, c.record_type, c.column_id"),
  };
}

export async function stateOnShard(db: D1Database, projectId: string): Promise<string | undefined> {
  return (await db.prepare("SELECT state FROM shard_projects WHERE project_id = ?").bind(projectId).first<{ state: string }>())?.state;
}
