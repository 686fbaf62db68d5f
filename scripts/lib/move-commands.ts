/// <reference types="node" />
/**
 * `npm run admin -- move-project` and `move-status` (docs/sharding.md, "Moving a project"): the
 * move is asked for in the catalog, through executeD1 like every admin command
 * (src/moves/move-requests.ts); the worker runs it through its move queue. Its first
 * message comes from the worker's minutely cron; for a local database the command also runs the
 * local worker's scheduled handler (`GET --url/__scheduled`, which `npm start`'s wrangler dev
 * serves with --test-scheduled; `--url` defaults to npm start's http://127.0.0.1:8787), so the
 * move starts at once. `--wait` polls until the move is over.
 */
import { type Statement, renderSql } from "../../src/admin/provisioning";
import { MOVE_WATCHDOG_CRON, moveStatusStatement, openMoveStatement, projectPlacementStatement, requestMoveStatement, resumeMoveStatement } from "../../src/moves/move-requests";
import { AdminError } from "./admin-commands";
import { type D1Target, d1Bindings, executeD1 } from "./wrangler";

type Row = Record<string, unknown>;

export async function rows(statement: Statement, target: D1Target): Promise<Row[]> {
  const [result] = await executeD1(renderSql([statement]), target);
  return result?.results ?? [];
}

const iso = (micros: unknown) => (typeof micros === "number" && micros > 0 ? new Date(Math.floor(micros / 1000)).toISOString() : null);

/** A move's row as the commands print it. */
export function moveReport(row: Row) {
  return {
    move_id: row.id,
    project_id: row.project_id,
    ...(row.partition_id ? { partition_id: row.partition_id } : {}),
    source: row.source,
    target: row.target,
    phase: row.phase,
    status: row.status,
    step: row.step ?? null,
    progress: {
      records_total: row.records_total ?? null,
      records_copied: row.records_copied,
      changes_replayed: row.changes_replayed,
      old_records_deleted: row.old_records_deleted,
    },
    verified: typeof row.verified === "string" ? JSON.parse(row.verified) : null,
    error_message: row.error_message ?? null,
    created_at: iso(row.created_at),
    switched_at: iso(row.switched_at),
    finished_at: iso(row.finished_at),
  };
}

export interface MoveOptions {
  projectId: string;
  to: string;
  /** The local worker to poke (local databases only). */
  url: string;
  wait: boolean;
  timeoutSeconds: number;
}

/** Asks the local worker to run its scheduled handler now (it sends the move its first message). */
export async function poke(url: string): Promise<string> {
  try {
    const response = await fetch(`${url}/__scheduled?cron=${encodeURIComponent(MOVE_WATCHDOG_CRON)}`, { signal: AbortSignal.timeout(30_000) });
    if (response.ok) return `started by the worker at ${url}`;
    return `the worker at ${url} answered ${response.status}: the move starts when the worker's cron next runs`;
  } catch {
    return `no worker answered at ${url}: the move starts when the service runs (npm start) and its cron runs`;
  }
}

/** How often a local move still queued is started again (a poke lost on a busy machine). */
const REPOKE_MS = 15_000;

export async function waitUntilOver(moveId: string, target: D1Target, timeoutSeconds: number, repoke?: () => Promise<unknown>): Promise<Row> {
  const deadline = Date.now() + timeoutSeconds * 1000;
  let poked = Date.now();
  for (;;) {
    const [row] = await rows(moveStatusStatement({ moveId }), target);
    if (!row) throw new AdminError(`move ${moveId} disappeared`);
    if (row.phase === "completed" || row.phase === "failed" || row.status === "paused") return row;
    // A local worker may not have sent the move its first message: the first poke was not answered
    // in time (a loaded machine), or its catalog write met this command's read (SQLITE_BUSY; the
    // watchdog then leaves the move due, src/moves/move-queue.ts), and a local wrangler dev runs no
    // cron of its own: poke it again while the move is still queued. A move that has its message
    // is not sent another (the watchdog only sends to a due move).
    if (repoke && row.phase === "queued" && Date.now() - poked > REPOKE_MS) {
      poked = Date.now();
      await repoke();
    }
    if (Date.now() > deadline) throw new AdminError(`move ${moveId} is still ${row.phase}${row.step ? `/${row.step}` : ""} after ${timeoutSeconds} s (it goes on; see move-status)`);
    // Every 2 s: locally each read is this process's workerd opening the catalog's SQLite file
    // beside the worker's own, and a write of the worker that meets it fails with SQLITE_BUSY (the
    // move's message is then retried with backoff); a deployed D1 has no such second writer.
    await new Promise((r) => setTimeout(r, 2_000));
  }
}

export async function moveProjectCommand(options: MoveOptions, target: D1Target) {
  const bindings = d1Bindings();
  if (!bindings.includes(options.to)) {
    throw new AdminError(`unknown shard ${JSON.stringify(options.to)}: the databases of wrangler.toml are ${bindings.join(", ")}`);
  }
  const [project] = await rows(projectPlacementStatement(options.projectId), target);
  if (!project) throw new AdminError(`project ${options.projectId} not found`);
  const [open] = await rows(openMoveStatement(options.projectId), target);
  let moveId: string;
  let resumed = false;
  if (open) {
    if (open.partition_id) {
      throw new AdminError(
        `project ${options.projectId} has a ${open.status === "paused" ? "paused " : ""}move of its partition ${open.partition_id} (move ${open.id}, ${open.source} -> ${open.target}, ${open.phase}): see npm run admin -- move-status --project ${options.projectId}${open.status === "paused" ? "; move-partition resumes it" : ""}`,
      );
    }
    if (open.status !== "paused") {
      throw new AdminError(
        `project ${options.projectId} is already moving (move ${open.id}, ${open.source} -> ${open.target}, ${open.phase}): see npm run admin -- move-status --project ${options.projectId}`,
      );
    }
    if (open.target !== options.to) {
      throw new AdminError(`project ${options.projectId} has a paused move to ${open.target} (move ${open.id}): run move-project --to ${open.target} to resume it`);
    }
    await rows(resumeMoveStatement(String(open.id)), target);
    moveId = String(open.id);
    resumed = true;
  } else {
    if (project.shard === options.to) throw new AdminError(`project ${options.projectId} is already on ${options.to}`);
    moveId = crypto.randomUUID();
    let inserted: Row[];
    try {
      inserted = await rows(requestMoveStatement({ moveId, projectId: options.projectId, target: options.to, nowMicros: Date.now() * 1000 }), target);
    } catch (error) {
      if (/UNIQUE constraint failed: project_moves/.test(String(error))) throw new AdminError(`project ${options.projectId} is already moving: see move-status`);
      throw error;
    }
    if (inserted.length !== 1) throw new AdminError(`the move was not created (the project moved meanwhile?): see move-status`);
  }
  const started = target.remote ? "the deployed worker's minutely cron starts it" : await poke(options.url);
  const row = options.wait ? await waitUntilOver(moveId, target, options.timeoutSeconds, target.remote ? undefined : () => poke(options.url)) : (await rows(moveStatusStatement({ moveId }), target))[0]!;
  return { ...moveReport(row), resumed, started };
}

export async function moveStatusCommand(by: { moveId: string } | { projectId: string }, target: D1Target) {
  const [row] = await rows(moveStatusStatement(by), target);
  if (!row) throw new AdminError("moveId" in by ? `move ${by.moveId} not found` : `project ${by.projectId} has never been moved`);
  return moveReport(row);
}
