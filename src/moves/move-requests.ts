/**
 * Asking for a move and reading its progress: plain statements (positional `?` only), run either
 * through the D1 binding (the worker, tests) or rendered to SQL for `wrangler d1 execute` (the
 * admin command line, `npm run admin -- move-project`, locally or with --remote), as
 * src/admin/provisioning.ts does for organizations and users.
 *
 * A requested move is a `project_moves` row in phase `queued` with `updated_at` 0: the
 * scheduled watchdog (every minute, src/moves/move-queue.ts) sends it its first message;
 * the command line also pokes the local worker's scheduled handler so a local move starts at
 * once. One open move per project (unique index project_moves_open).
 */
import type { Statement } from "../admin/provisioning";

/** Everything a move's status shows (the admin command prints it as JSON). */
export const MOVE_STATUS_COLUMNS =
  "id, project_id, organization_id, partition_id, source, target, phase, status, step, records_total, records_copied, changes_replayed, old_records_deleted, verified, error_message, created_at, updated_at, switched_at, finished_at";

export function requestMoveStatement(input: { moveId: string; projectId: string; target: string; nowMicros: number }): Statement {
  return {
    sql: `INSERT INTO project_moves (id, project_id, organization_id, source, target, phase, status, cursor, created_at, updated_at)
          SELECT ?, id, organization_id, coalesce(shard, 'DB'), ?, 'queued', 'running', '', ?, 0 FROM projects
          WHERE id = ? AND coalesce(shard, 'DB') <> ? RETURNING id, source`,
    params: [input.moveId, input.target, input.nowMicros, input.projectId, input.target],
  };
}

/**
 * A move of one closed partition (src/moves/partition-move.ts): asked for only while the
 * partition is still closed and not on the target; the one-open-move-per-project index refuses a
 * second move of the project, of any kind.
 */
export function requestPartitionMoveStatement(input: { moveId: string; projectId: string; partitionId: string; target: string; nowMicros: number }): Statement {
  return {
    sql: `INSERT INTO project_moves (id, project_id, organization_id, source, target, phase, status, cursor, created_at, updated_at, partition_id)
          SELECT ?, p.project_id, pr.organization_id, p.shard, ?, 'queued', 'running', '', ?, 0, p.id
          FROM project_partitions AS p JOIN projects AS pr ON pr.id = p.project_id
          WHERE p.id = ? AND p.project_id = ? AND p.state = 'closed' AND p.shard <> ? RETURNING id, source`,
    params: [input.moveId, input.target, input.nowMicros, input.partitionId, input.projectId, input.target],
  };
}

/** What the admin command checks a partition move against: the project's home and its partitions. */
export function partitionMoveContextStatements(projectId: string): Statement[] {
  return [
    { sql: "SELECT id, organization_id, coalesce(shard, 'DB') AS shard FROM projects WHERE id = ?", params: [projectId] },
    { sql: "SELECT id, seq, shard, state FROM project_partitions WHERE project_id = ? ORDER BY seq", params: [projectId] },
    { sql: "SELECT name, size_bytes FROM shards", params: [] },
  ];
}

/** A paused move runs again (the watchdog sends it a message at once). */
export function resumeMoveStatement(moveId: string): Statement {
  return {
    sql: "UPDATE project_moves SET status = 'running', error_message = NULL, updated_at = 0 WHERE id = ? AND status = 'paused' RETURNING id",
    params: [moveId],
  };
}

export function projectPlacementStatement(projectId: string): Statement {
  return { sql: "SELECT id, organization_id, name, coalesce(shard, 'DB') AS shard FROM projects WHERE id = ?", params: [projectId] };
}

export function openMoveStatement(projectId: string): Statement {
  return { sql: `SELECT ${MOVE_STATUS_COLUMNS} FROM project_moves WHERE project_id = ? AND phase NOT IN ('completed', 'failed')`, params: [projectId] };
}

export function moveStatusStatement(by: { moveId: string } | { projectId: string }): Statement {
  return "moveId" in by
    ? { sql: `SELECT ${MOVE_STATUS_COLUMNS} FROM project_moves WHERE id = ?`, params: [by.moveId] }
    : { sql: `SELECT ${MOVE_STATUS_COLUMNS} FROM project_moves WHERE project_id = ? ORDER BY created_at DESC LIMIT 1`, params: [by.projectId] };
}

/** The cron expression of the minutely watchdog (wrangler.toml [triggers]). */
export const MOVE_WATCHDOG_CRON = "* * * * *";
