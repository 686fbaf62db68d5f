/**
 * Updates held on one shard for a record that lands on another (docs/partitions.md, "Held
 * updates"; contract section 13: an update, held patches included, goes to its root's partition).
 *
 * A PATCH of a record stored nowhere yet is held on the open partition's shard
 * (streaming-patches.ts): that is where a new record goes. Two records do not go there:
 * - a child whose root is in a partition on another shard (a late span of an old trace, a new
 *   trace of an old session): it is written to its root's shard;
 * - a record that arrives after the open partition rolled to another shard.
 * Both are writes whose roots are looked up on the project's other shards (root-partitions.ts),
 * so in that same parallel round trip the held updates of the write's records are read on every
 * shard of the project. A held update found on a shard other than its record's destination is
 * carried into the destination's write batch (inserted into its `record_patches`, merged with one
 * held there, newer fields winning), where the batch's own held-update statements apply it and
 * forget it, atomically with the record. Once the writes succeeded, the carried rows are deleted
 * where they were found (only those not updated since: a newer update that arrived meanwhile is
 * held for the next write). A write that fails carries nothing away: the held rows stay and the
 * retry finds them again.
 *
 * A project on one shard, or a write of new roots only, never looks: no round trip is added.
 */
import type { Env } from "../env";
import { shardDatabase } from "../shards/shard-config";

/** A `record_patches` row, as read and carried. */
export interface HeldRow {
  record_id: string;
  run_id: string;
  organization_id: string;
  project_id: string;
  record_type: string;
  input: string | null;
  input_is_json: number | null;
  output: string | null;
  output_is_json: number | null;
  status_code: number | null;
  tags: string | null;
  is_complete: number | null;
  duration_ns: number | null;
  created_at: number;
  updated_at: number;
  redacted_input: string | null;
  redacted_output: string | null;
}

const COLUMNS = [
  "record_id", "run_id", "organization_id", "project_id", "record_type", "input", "input_is_json", "output", "output_is_json",
  "status_code", "tags", "is_complete", "duration_ns", "created_at", "updated_at", "redacted_input", "redacted_output",
] as const satisfies readonly (keyof HeldRow)[];

/**
 * The held updates of the record ids in ?1 for the run ?2: driven by the run's index
 * (`record_patches_run`), as the ingest batch's own lookup (streaming-patches.ts).
 */
export const HELD_OF_RECORDS = `SELECT ${COLUMNS.join(", ")} FROM record_patches WHERE run_id = ?2 AND +record_id IN (SELECT value FROM json_each(?1))`;

/** The carried row is not older than the one held here. */
const NEWER = "excluded.updated_at >= record_patches.updated_at";
const takes = (col: string) => `excluded.${col} IS NOT NULL AND (record_patches.${col} IS NULL OR ${NEWER})`;
const field = (col: string) => `${col} = CASE WHEN ${takes(col)} THEN excluded.${col} ELSE record_patches.${col} END`;
/** A column that moves with another (a content's flag, its masked copy). */
const follows = (col: string, leader: string) => `${col} = CASE WHEN ${takes(leader)} THEN excluded.${col} ELSE record_patches.${col} END`;

/**
 * Inserts the carried rows (JSON array in ?1) into this shard's held updates; one already held
 * here for the same record merges field by field, the newer winning (the PATCH merge rules:
 * an absent field never erases, `is_complete` never goes back to false).
 */
const ADOPT = `
INSERT INTO record_patches (${COLUMNS.join(", ")})
SELECT ${COLUMNS.map((c) => `value ->> '$.${c}'`).join(", ")} FROM json_each(?1) WHERE true
ON CONFLICT (record_id, run_id) DO UPDATE SET
  ${field("input")}, ${follows("input_is_json", "input")}, ${follows("redacted_input", "input")},
  ${field("output")}, ${follows("output_is_json", "output")}, ${follows("redacted_output", "output")},
  ${field("status_code")}, ${field("tags")}, ${field("duration_ns")},
  is_complete = CASE WHEN excluded.is_complete IS NULL THEN record_patches.is_complete
                     ELSE max(excluded.is_complete, coalesce(record_patches.is_complete, 0)) END,
  created_at = min(record_patches.created_at, excluded.created_at),
  updated_at = max(record_patches.updated_at, excluded.updated_at)`;

/** Deletes carried rows ([record_id, run_id, updated_at] triples in ?1) not updated since they were read. */
const RELEASE = `
DELETE FROM record_patches WHERE rowid IN (
  SELECT p.rowid FROM json_each(?1) AS c
  JOIN record_patches AS p ON p.record_id = c.value ->> 0 AND p.run_id = c.value ->> 1
  WHERE p.updated_at <= c.value ->> 2)`;

/** The statement reading the held updates of these records, for a lookup batch. */
export function heldOfRecordsStatement(db: D1Database, recordIds: readonly string[], runId: string): D1PreparedStatement {
  return db.prepare(HELD_OF_RECORDS).bind(JSON.stringify(recordIds), runId);
}

/** Statements to put before a write batch's held-update statements: the rows carried in from other shards. */
export function adoptHeldStatements(db: D1Database, rows: readonly HeldRow[]): D1PreparedStatement[] {
  return rows.length === 0 ? [] : [db.prepare(ADOPT).bind(JSON.stringify(rows))];
}

/** Rows carried away from a shard, to delete there once the writes that applied them succeeded. */
export interface HeldRelease {
  shard: string;
  rows: HeldRow[];
}

/** Deletes the carried rows where they were held, each shard in parallel (one round trip). */
export async function releaseHeld(env: Env, releases: readonly HeldRelease[]): Promise<void> {
  await Promise.all(
    releases
      .filter((r) => r.rows.length > 0)
      .map((r) =>
        shardDatabase(env, r.shard)
          .prepare(RELEASE)
          .bind(JSON.stringify(r.rows.map((row) => [row.record_id, row.run_id, row.updated_at])))
          .run(),
      ),
  );
}
