/**
 * A project's state on one database (`shard_projects.state`: active, exporting, frozen,
 * importing, gone), as a move sets and reads it (docs/sharding.md, "Phases"), and the error that
 * fails a move at its first step. Shared by the moves of a project and of a partition.
 */
import { nowMicros } from "../db/client";

/** A move that cannot start: failed with the reason, nothing changed. */
export class MoveFailure extends Error {}

/** Sets the project's state on `db` if it is one of `from` (conditional, so repeating it is harmless). */
export const setState = (db: D1Database, projectId: string, state: string, from: readonly string[]) =>
  db
    .prepare(`UPDATE shard_projects SET state = ?2, updated_at = ?3 WHERE project_id = ?1 AND state IN (SELECT value FROM json_each(?4))`)
    .bind(projectId, state, nowMicros(), JSON.stringify(from));

export const stateOn = async (db: D1Database, projectId: string) =>
  (await db.prepare("SELECT state FROM shard_projects WHERE project_id = ?1").bind(projectId).first<{ state: string }>())?.state;
