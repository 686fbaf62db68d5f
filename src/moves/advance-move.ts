/**
 * A move, step by step (docs/sharding.md, "Moving a project"). The catalog's row (move-rows.ts)
 * holds the phase, the step within it and its keyset cursor; each call of `moveStep` does one
 * bounded piece of work (one chunk: a read on the source, one atomic batch on the target) and
 * saves where it got to. Every step is idempotent: a step repeated after a crash, a lost answer
 * or a redelivered message writes the same rows again (copies replace the target's copy of the
 * same id; states are set with conditions), so nothing is lost or duplicated.
 *
 *   queued      validate; target `importing`, source `exporting` (from now on every change of the
 *               project on the source is logged)
 *   copying     runs, records (id order, through the ingest write path), held updates, tombstones
 *   catching_up replay the change log while the source still takes writes, until it is short
 *   frozen      source `frozen` (reads only; writes get project_not_on_shard: 503, then the
 *               target after the switch); drain the log; runs again; run columns; verify counts
 *               per run and kind; switch: target `active`, catalog `projects.shard`, source `gone`
 *   cleanup     delete the source's copy in chunks
 *   completed
 */
import { nowMicros } from "../db/client";
import type { Env } from "../env";
import { forgetPartitions } from "../partitions/partition-catalog";
import { forgetProjectRoute } from "../shards/project-routing";
import { CATALOG_SHARD, allRecordDatabases, shardConfig, shardDatabase } from "../shards/shard-config";
import { copyAnalyticsKey, copyIds, copyPatchesPage, copyRunColumnsPage, copyRunsPage, copyTemplates, copyTombstonesPage, nextRecordIds } from "./copy-chunks";
import { type MoveLimits, moveLimits } from "./move-limits";
import { type MoveChanges, type MoveRow, saveMove, saveMoveStatement } from "./move-rows";
import { changesLeft, replayChangesPage } from "./replay-changes";
import { type VerifyTotals, emptyTotals, verifyHeldRows, verifyRunsPage } from "./verify-copy";
import { MoveFailure, setState, stateOn } from "./shard-states";
import { checkPartitionMove, partitionPlacedOn, partitionSwitchStatement, registerMovedPartition, FORGET_PARTITIONS_ON_SOURCE } from "./partition-move";

/** A step's answer: what to save, or to wait (and try the same step again) this many seconds. */
export type StepResult = { save: MoveChanges } | { saved: MoveRow } | { wait: number; reason: string };

/** Verification that finds a difference drains the log and verifies again, this many times, then pauses. */
const MAX_VERIFY_ATTEMPTS = 3;


const OPEN_DELETION_ON_SOURCE = `
SELECT EXISTS (
  SELECT 1 FROM org_jobs AS j CROSS JOIN org_job_shards AS p ON p.job_id = j.id
  WHERE j.organization_id = ?1 AND j.status IN ('queued', 'running') AND p.shard = ?2 AND p.status IN ('queued', 'running')
) AS busy`;

/** Whether a deletion job of the organization still has work on the source (it must finish there first). */
async function deletionOpenOnSource(env: Env, move: MoveRow): Promise<boolean> {
  const row = await env.DB.prepare(OPEN_DELETION_ON_SOURCE).bind(move.organization_id, move.source).first<{ busy: number }>();
  return row?.busy === 1;
}

interface Sides {
  source: D1Database;
  target: D1Database;
  scope: { projectId: string; organizationId: string };
}

function sidesOf(env: Env, move: MoveRow): Sides {
  return {
    source: shardDatabase(env, move.source),
    target: shardDatabase(env, move.target),
    scope: { projectId: move.project_id, organizationId: move.organization_id },
  };
}

async function start(env: Env, move: MoveRow): Promise<StepResult> {
  if (!allRecordDatabases(env).includes(move.target)) {
    throw new MoveFailure(`${move.target} is not a data shard of this deployment (DATA_SHARDS, or ${CATALOG_SHARD})`);
  }
  // A partition's move (partition-move.ts) checks the partition; a project's, the project.
  const partition = move.partition_id ? await checkPartitionMove(env, move) : undefined;
  if (partition) {
    // A partition goes only where a new partition could: below the target's high-water mark, measured now.
    const measured = await shardDatabase(env, move.target).prepare("SELECT 1").run();
    const bytes = (measured.meta as { size_after?: number }).size_after ?? 0;
    const { highWaterBytes } = shardConfig(env);
    if (bytes >= highWaterBytes) throw new MoveFailure(`${move.target} is at its high-water mark (${bytes} of ${highWaterBytes} bytes): it takes no new partition`);
  }
  if (!partition) {
    const project = await env.DB.prepare(`SELECT coalesce(shard, '${CATALOG_SHARD}') AS shard FROM projects WHERE id = ?1`).bind(move.project_id).first<{ shard: string }>();
    if (!project) throw new MoveFailure("the project no longer exists");
    if (project.shard !== move.source) throw new MoveFailure(`the project is on ${project.shard}, not on ${move.source} any more`);
    if (move.target === move.source) throw new MoveFailure(`the project is already on ${move.target}`);
  }
  const { source, target, scope } = sidesOf(env, move);
  // The target first: if it cannot take the project, the source was never touched.
  await target
    .prepare(
      `INSERT INTO shard_projects (project_id, organization_id, state, updated_at) VALUES (?1, ?2, 'importing', ?3)
       ON CONFLICT (project_id) DO UPDATE SET state = 'importing', updated_at = excluded.updated_at WHERE shard_projects.state IN ('gone', 'importing')`,
    )
    .bind(scope.projectId, scope.organizationId, nowMicros())
    .run();
  const targetState = await stateOn(target, scope.projectId);
  if (targetState !== "importing") throw new MoveFailure(`${move.target} already holds the project (state ${targetState})`);
  if (partition) await registerMovedPartition(target, move, partition).run();
  const [, state, total] = await source.batch<{ state?: string; n?: number }>([
    setState(source, scope.projectId, "exporting", ["active", "exporting"]),
    source.prepare("SELECT state FROM shard_projects WHERE project_id = ?1").bind(scope.projectId),
    source.prepare("SELECT count(*) AS n FROM records WHERE project_id = ?1").bind(scope.projectId),
  ]);
  const sourceState = state!.results[0]?.state;
  if (sourceState !== "exporting") throw new MoveFailure(`${move.source} does not hold the project for writing (state ${sourceState ?? "none"})`);
  return { save: { phase: "copying", step: "runs", cursor: "", records_total: total!.results[0]?.n ?? 0 } };
}

async function copying(env: Env, move: MoveRow, limits: MoveLimits): Promise<StepResult> {
  const { source, target, scope } = sidesOf(env, move);
  switch (move.step) {
    case "runs": {
      // The project's annotation templates first (later changes come through the change log).
      if (move.cursor === "") {
        await copyTemplates(source, target, scope.projectId);
        await copyAnalyticsKey(env.DB, target, scope.projectId);
      }
      const last = await copyRunsPage(source, target, scope.projectId, move.cursor, limits.chunkRows);
      return { save: last === undefined ? { step: "records", cursor: "" } : { cursor: last } };
    }
    case "records": {
      const page = await nextRecordIds(source, scope.projectId, move.cursor, limits.chunkRecords, limits.chunkBytes);
      if (page.last === undefined) return { save: { step: "patches", cursor: "" } };
      const copied = await copyIds(source, target, scope, page.keys, false);
      return { save: { cursor: page.last, records_copied: move.records_copied + copied.records } };
    }
    case "patches": {
      const after = move.cursor === "" ? (["", ""] as [string, string]) : (JSON.parse(move.cursor) as [string, string]);
      const last = await copyPatchesPage(source, target, scope.projectId, after, limits.chunkRows);
      return { save: last === undefined ? { step: "tombstones", cursor: "" } : { cursor: JSON.stringify(last) } };
    }
    case "tombstones": {
      const last = await copyTombstonesPage(source, target, scope.projectId, move.cursor, limits.chunkRows);
      return { save: last === undefined ? { phase: "catching_up", step: "pass-1", cursor: "" } : { cursor: last } };
    }
    default:
      throw new Error(`move ${move.id}: unknown step ${move.step} of phase copying`);
  }
}

async function catchingUp(env: Env, move: MoveRow, limits: MoveLimits): Promise<StepResult> {
  const { source, target, scope } = sidesOf(env, move);
  const pass = Number(/^pass-(\d+)$/.exec(move.step ?? "")?.[1] ?? 1);
  const page = await replayChangesPage(source, target, scope, move.cursor, { rows: limits.chunkRecords, bytes: limits.chunkBytes });
  if (page.last !== undefined) return { save: { cursor: page.last, changes_replayed: move.changes_replayed + page.replayed } };
  // A pass is over: freeze once what is left is short (the frozen drain is then brief), or
  // after a few passes whatever the writers do.
  const left = await changesLeft(source, scope.projectId);
  if (left > limits.freezeBelowChanges && pass < limits.maxCatchUpPasses) return { save: { step: `pass-${pass + 1}`, cursor: "" } };
  // A deletion still working on the source finishes there first (docs/sharding.md): its part on
  // the target, which the move is still filling, may be over already.
  if (await deletionOpenOnSource(env, move)) return { wait: 2, reason: "a deletion job of the organization is still running on the source" };
  await setState(source, scope.projectId, "frozen", ["exporting", "frozen"]).run();
  forgetProjectRoute(scope.projectId);
  return { save: { phase: "frozen", step: "drain", cursor: "" } };
}

function totalsOf(move: MoveRow): VerifyTotals & { attempts: number } {
  const parsed = move.verified ? (JSON.parse(move.verified) as VerifyTotals & { attempts?: number }) : undefined;
  return { ...emptyTotals(), ...parsed, attempts: parsed?.attempts ?? 0 };
}

async function frozen(env: Env, move: MoveRow, limits: MoveLimits): Promise<StepResult> {
  const { source, target, scope } = sidesOf(env, move);
  switch (move.step) {
    case "drain": {
      const page = await replayChangesPage(source, target, scope, move.cursor, { rows: limits.chunkRecords, bytes: limits.chunkBytes });
      if (page.last !== undefined) return { save: { cursor: page.last, changes_replayed: move.changes_replayed + page.replayed } };
      // Deletions go on while frozen and are logged: drain until a pass finds nothing.
      if ((await changesLeft(source, scope.projectId)) > 0) return { save: { cursor: "" } };
      return { save: { step: "runs", cursor: "" } };
    }
    case "runs": {
      // Runs created while the records were copied.
      const last = await copyRunsPage(source, target, scope.projectId, move.cursor, limits.chunkRows);
      return { save: last === undefined ? { step: "columns", cursor: "" } : { cursor: last } };
    }
    case "columns": {
      const last = await copyRunColumnsPage(source, target, scope.projectId, move.cursor, Math.max(1, Math.floor(limits.verifyRuns / 5)));
      if (last !== undefined) return { save: { cursor: last } };
      const attempts = totalsOf(move).attempts;
      return { save: { step: "verify", cursor: "", verified: JSON.stringify({ ...emptyTotals(), attempts }) } };
    }
    case "verify": {
      const totals = totalsOf(move);
      const page = await verifyRunsPage(source, target, scope.projectId, move.cursor, limits.verifyRuns, totals);
      const mismatch = page.mismatch ?? (page.last === undefined ? await verifyHeldRows(source, target, scope.projectId) : undefined);
      if (mismatch) {
        const attempts = totals.attempts + 1;
        const message = `verification found a difference: ${mismatch}`;
        if (attempts >= MAX_VERIFY_ATTEMPTS) throw new VerificationFailed(message);
        return { save: { step: "drain", cursor: "", error_message: message, verified: JSON.stringify({ ...emptyTotals(), attempts }) } };
      }
      if (page.last !== undefined) return { save: { cursor: page.last, verified: JSON.stringify(totals) } };
      return { save: { step: "switch", cursor: "", verified: JSON.stringify(totals), error_message: null } };
    }
    case "switch":
      return switchOver(env, move);
    default:
      throw new Error(`move ${move.id}: unknown step ${move.step} of phase frozen`);
  }
}

/** A project's switch in the catalog: its shard, and its partitions on the source with it. */
function projectSwitchStatements(env: Env, move: MoveRow): D1PreparedStatement[] {
  const scope = { projectId: move.project_id, organizationId: move.organization_id };
  return [
    env.DB.prepare(
      `UPDATE projects SET shard = ?2 WHERE id = ?1 AND coalesce(shard, '${CATALOG_SHARD}') = ?3
         AND NOT EXISTS (SELECT 1 FROM org_jobs AS j CROSS JOIN org_job_shards AS p ON p.job_id = j.id
                         WHERE j.organization_id = ?4 AND j.status IN ('queued', 'running') AND p.shard = ?3 AND p.status IN ('queued', 'running'))`,
    ).bind(scope.projectId, move.target, move.source, scope.organizationId),
    // The project's partitions on the source move with it (docs/partitions.md), in the same
    // transaction and on the same condition (the project's shard changed just above).
    env.DB.prepare(
      `UPDATE project_partitions SET shard = ?2 WHERE project_id = ?1 AND shard = ?3
         AND EXISTS (SELECT 1 FROM projects WHERE id = ?1 AND coalesce(shard, '${CATALOG_SHARD}') = ?2)`,
    ).bind(scope.projectId, move.target, move.source),
  ];
}

/** Verification failed repeatedly: the move is paused (the source takes writes again). */
export class VerificationFailed extends Error {}

/**
 * The switch: target `active`, then the catalog names the target (on the condition that no
 * deletion job of the organization is still open on the source, checked in the same statement),
 * then the source is `gone`. Until the catalog changes, writes still go to the frozen source and
 * get a 503; after it, a stale route is refused by the source and re-routed to the target.
 */
async function switchOver(env: Env, move: MoveRow): Promise<StepResult> {
  const { source, target, scope } = sidesOf(env, move);
  if ((await changesLeft(source, scope.projectId)) > 0) return { save: { step: "drain", cursor: "" } };
  if (await deletionOpenOnSource(env, move)) return { wait: 2, reason: "a deletion job of the organization is still running on the source" };
  await setState(target, scope.projectId, "active", ["importing", "active"]).run();
  const now = nowMicros();
  // One catalog batch: the placement and the move's phase change together or not at all.
  const placement = move.partition_id ? [partitionSwitchStatement(env, move)] : projectSwitchStatements(env, move);
  const placed = move.partition_id ? partitionPlacedOn : `EXISTS (SELECT 1 FROM projects WHERE id = ?3 AND coalesce(shard, '${CATALOG_SHARD}') = ?4)`;
  const results = await env.DB.batch<MoveRow>([
    ...placement,
    env.DB.prepare(
      `UPDATE project_moves SET phase = 'cleanup', step = 'settle', cursor = '', switched_at = ?2, updated_at = ?2
       WHERE id = ?1 AND phase = 'frozen' AND step = 'switch' AND ${placed} RETURNING *`,
    ).bind(move.id, now, scope.projectId, move.target, ...(move.partition_id ? [move.partition_id] : [])),
  ]);
  const saved = results[results.length - 1];
  const switched = saved!.results[0];
  if (!switched) {
    // A deletion job started in between: the target must not be read or deleted from as the
    // project's home before that job finishes on the source.
    await setState(target, scope.projectId, "importing", ["active"]).run();
    const reason = "a deletion job of the organization is still running on the source";
    return { wait: 2, reason: move.partition_id ? `${reason}, or another partition of the project came to the source or the target` : reason };
  }
  forgetProjectRoute(scope.projectId);
  forgetPartitions(scope.projectId);
  return { saved: switched };
}

// RETURNING counts the records themselves: D1's meta.changes also counts the side rows the
// cascade deletes with them.
const DELETE_OLD_RECORDS = "DELETE FROM records WHERE rid IN (SELECT rid FROM records WHERE project_id = ?1 LIMIT ?2) RETURNING rid";

/** What else of the project the source holds, deleted a bounded number of rows at a time. */
const DELETE_OLD_REST = (sourceIsCatalog: boolean) => [
  "DELETE FROM record_patches WHERE rowid IN (SELECT rowid FROM record_patches WHERE project_id = ?1 LIMIT ?2)",
  // Ratings went with their records (ON DELETE CASCADE); the templates are left.
  "DELETE FROM annotation_templates WHERE id IN (SELECT id FROM annotation_templates WHERE project_id = ?1 LIMIT ?2)",
  // The shard's copy of the declared analytics key (one row; the catalog's original stays).
  "DELETE FROM metric_settings WHERE project_id = ?1 AND ?2 > 0",
  "DELETE FROM record_tombstones WHERE project_id = ?1 AND record_id IN (SELECT record_id FROM record_tombstones WHERE project_id = ?1 LIMIT ?2)",
  "DELETE FROM shard_project_changes WHERE project_id = ?1 AND record_id IN (SELECT record_id FROM shard_project_changes WHERE project_id = ?1 LIMIT ?2)",
  "DELETE FROM run_columns WHERE rowid IN (SELECT rowid FROM run_columns WHERE run_id IN (SELECT id FROM runs WHERE project_id = ?1) LIMIT ?2)",
  // The catalog's runs are the runs themselves, not a copy: they stay.
  // A partition's root counts (a partition moves only from a shard holding nothing else of the project).
  FORGET_PARTITIONS_ON_SOURCE,
  ...(sourceIsCatalog ? [] : ["DELETE FROM runs WHERE id IN (SELECT id FROM runs WHERE project_id = ?1 AND NOT EXISTS (SELECT 1 FROM run_columns WHERE run_id = runs.id) LIMIT ?2)"]),
];

async function cleanup(env: Env, move: MoveRow, limits: MoveLimits): Promise<StepResult> {
  const { source, target, scope } = sidesOf(env, move);
  switch (move.step) {
    case "settle": {
      // Repeated after a crash right after the catalog switched: both are conditional.
      await target.batch([setState(target, scope.projectId, "active", ["importing", "active"])]);
      await copyAnalyticsKey(env.DB, target, scope.projectId);
      await source.batch([setState(source, scope.projectId, "gone", ["frozen", "exporting", "active", "gone"])]);
      return { save: { step: "records", cursor: "" } };
    }
    case "records": {
      // Reads check the project's state in the same batch, and the source's is `gone`: no read
      // can see the copy shrink, so it goes at once rather than after the routes' cache TTL.
      const { results } = await source.prepare(DELETE_OLD_RECORDS).bind(scope.projectId, limits.cleanupRecords).all();
      const deleted = results.length;
      if (deleted === 0) return { save: { step: "rest", cursor: "" } };
      return { save: { old_records_deleted: move.old_records_deleted + deleted, cursor: String(move.old_records_deleted + deleted) } };
    }
    case "rest": {
      const results = await source.batch(DELETE_OLD_REST(move.source === CATALOG_SHARD).map((sql) => source.prepare(sql).bind(scope.projectId, limits.chunkRows)));
      const deleted = results.reduce((sum, r) => sum + r.meta.changes, 0);
      if (deleted > 0) return { save: { cursor: String(Number(move.cursor || 0) + deleted) } };
      return { save: { phase: "completed", step: null, cursor: "", finished_at: nowMicros() } };
    }
    default:
      throw new Error(`move ${move.id}: unknown step ${move.step} of phase cleanup`);
  }
}

/** One bounded step of the move; a move that cannot start at all is failed with the reason. */
export async function moveStep(env: Env, move: MoveRow, limits: MoveLimits = moveLimits()): Promise<StepResult> {
  try {
    switch (move.phase) {
      case "queued":
        return await start(env, move);
      case "copying":
        return await copying(env, move, limits);
      case "catching_up":
        return await catchingUp(env, move, limits);
      case "frozen":
        return await frozen(env, move, limits);
      case "cleanup":
        return await cleanup(env, move, limits);
      default:
        return { save: {} };
    }
  } catch (error) {
    if (error instanceof MoveFailure) return { save: { phase: "failed", error_message: `The move did not start: ${error.message}`, finished_at: nowMicros() } };
    throw error;
  }
}

export interface AdvanceOutcome {
  move: MoveRow | null;
  /** Seconds to wait before the next step, if the move waits for something. */
  wait?: number;
  steps: number;
}

const isOver = (move: MoveRow) => move.phase === "completed" || move.phase === "failed" || move.status === "paused";

/**
 * Runs steps until the move is over, waits for something, another delivery advanced it, or the
 * budget (wall time, D1 calls: about four per step) is spent.
 */
export async function advanceMove(env: Env, start: MoveRow, limits: MoveLimits = moveLimits()): Promise<AdvanceOutcome> {
  const began = Date.now();
  let move: MoveRow | null = start;
  let steps = 0;
  while (move && !isOver(move) && Date.now() - began < limits.messageMillis && steps * 4 < limits.messageCalls) {
    const result = await moveStep(env, move, limits);
    steps += 1;
    if ("wait" in result) return { move, wait: result.wait, steps };
    move = "saved" in result ? result.saved : await saveMove(env, move, result.save);
  }
  return { move, steps };
}

/**
 * Stops a move that keeps failing: `paused`, with the reason. A frozen source takes writes again
 * (back to `exporting`, its changes still logged, the move resumes from the catch-up); a move past
 * the switch only has its old copy left to delete, and resumes there.
 */
export async function pauseMove(env: Env, move: MoveRow, reason: string): Promise<void> {
  const changes: MoveChanges = { status: "paused", error_message: reason };
  if (move.phase === "frozen") {
    await setState(shardDatabase(env, move.source), move.project_id, "exporting", ["frozen"]).run();
    await setState(shardDatabase(env, move.target), move.project_id, "importing", ["active"]).run();
    Object.assign(changes, { phase: "catching_up", step: "pass-1", cursor: "" });
  }
  await env.DB.batch([saveMoveStatement(env, move, changes)]);
}
