/**
 * The catalog's row of a move (`project_moves`): loading it, and saving each step's result on
 * the condition that nobody else advanced the move meanwhile (the phase, step and cursor are
 * still the ones this step started from), so two deliveries of one message never both apply.
 */
import { nowMicros } from "../db/client";
import type { MovePhase } from "../db/schema";
import type { Env } from "../env";

export interface MoveRow {
  id: string;
  project_id: string;
  organization_id: string;
  source: string;
  target: string;
  phase: MovePhase;
  status: "running" | "paused";
  step: string | null;
  cursor: string;
  records_total: number | null;
  records_copied: number;
  changes_replayed: number;
  old_records_deleted: number;
  verified: string | null;
  error_message: string | null;
  message_seq: number;
  created_at: number;
  updated_at: number;
  switched_at: number | null;
  finished_at: number | null;
  /** The partition a partition move moves (src/moves/partition-move.ts); null: the whole project. */
  partition_id: string | null;
}

export type MoveChanges = Partial<
  Pick<
    MoveRow,
    "phase" | "status" | "step" | "cursor" | "records_total" | "records_copied" | "changes_replayed" | "old_records_deleted" | "verified" | "error_message" | "switched_at" | "finished_at"
  >
>;

export const TERMINAL_PHASES: readonly MovePhase[] = ["completed", "failed"];

export async function loadMove(env: Env, moveId: string): Promise<MoveRow | null> {
  return env.DB.prepare("SELECT * FROM project_moves WHERE id = ?1").bind(moveId).first<MoveRow>();
}

/** The statement that saves `changes` if the move is still where `move` says; RETURNING the row. */
export function saveMoveStatement(env: Env, move: MoveRow, changes: MoveChanges): D1PreparedStatement {
  const entries = Object.entries(changes);
  const sets = entries.map(([column], i) => `${column} = ?${i + 5}`);
  return env.DB.prepare(
    `UPDATE project_moves SET ${[...sets, "updated_at = ?4"].join(", ")}
     WHERE id = ?1 AND phase = ?2 AND coalesce(step, '') = ?3 AND cursor = ?${entries.length + 5} RETURNING *`,
  ).bind(move.id, move.phase, move.step ?? "", nowMicros(), ...entries.map(([, value]) => value ?? null), move.cursor);
}

/** Saves a step's result; null if another delivery advanced the move first. */
export async function saveMove(env: Env, move: MoveRow, changes: MoveChanges): Promise<MoveRow | null> {
  return saveMoveStatement(env, move, changes).first<MoveRow>();
}
