/**
 * The roll-up backfill (contract, section 9, "derived data, one rule"): records written before
 * the roll-up triggers existed (migration 0013) get their trace and session sums here, a bounded
 * window of rids at a time, resumable: `rollup_backfill` keeps how far each family got on each
 * database, and every window's recomputation and its progress are one atomic batch. Traces go
 * first (their updates recompute their sessions through the triggers), then sessions (those whose
 * traces all had their own values). A recomputation is the triggers' own (a sum over the
 * children as stored), so running a window twice, or over records the triggers already keep,
 * changes nothing. Until it is done, such older parents lack their roll-ups (docs/analytics.md).
 * Records of a project this database does not hold for writing (a move's source) are skipped, as
 * the triggers skip them: the move's copy rebuilds them on its target.
 */
import { DERIVED_KEYS } from "../ingest/derived-metrics";

/** Rids per window: at most this many rows read to find the window's parents. */
export const BACKFILL_WINDOW = 5_000;
/** Windows per database per run: a small share of an invocation's 1,000 D1 queries. */
export const BACKFILL_MAX_BATCHES = 20;

const CHILDREN = {
  trace: "c.trace_id = records.id AND c.record_type = 'span' AND c.type = 'llm' AND +c.project_id = records.project_id AND +c.run_id = records.run_id",
  session: "c.session_id = records.id AND c.record_type = 'trace' AND +c.project_id = records.project_id AND +c.run_id = records.run_id",
} as const;

type Family = keyof typeof CHILDREN;

const own = (key: string, bit: number) => `(records.metrics ->> '$.${key}' IS NOT NULL AND (records.derived_metrics & ${bit}) = 0)`;

/** The parents of family in rids (?1, ?2], recomputed from their children. */
function recompute(family: Family): string {
  const of = (aggregate: "count" | "sum", key: string) => `(SELECT ${aggregate}(c.metrics ->> '$.${key}') FROM records AS c WHERE ${CHILDREN[family]})`;
  const values = DERIVED_KEYS.map(([key, bit]) => `'${key}', CASE WHEN ${own(key, bit)} THEN records.metrics ->> '$.${key}' WHEN ${of("count", key)} > 0 THEN ${of("sum", key)} END`);
  const bits = DERIVED_KEYS.map(([key, bit]) => `CASE WHEN NOT ${own(key, bit)} AND ${of("count", key)} > 0 THEN ${bit} ELSE 0 END`);
  return `UPDATE records SET metrics = json_patch(records.metrics, json_object(${values.join(", ")})), derived_metrics = ${bits.join(" | ")}
    WHERE rid > ?1 AND rid <= ?2 AND record_type = '${family}' AND NOT (${DERIVED_KEYS.map(([key, bit]) => own(key, bit)).join(" AND ")})
      AND EXISTS (SELECT 1 FROM shard_projects AS sp WHERE sp.project_id = records.project_id AND sp.state IN ('active', 'exporting', 'importing'))`;
}

const PRESENT_COLUMNS = `INSERT INTO run_columns (run_id, record_type, column_id)
  SELECT DISTINCT p.run_id, p.record_type, 'metrics/' || d.key
  FROM records AS p, json_each('${JSON.stringify(Object.fromEntries(DERIVED_KEYS))}') AS d
  WHERE p.rid > ?1 AND p.rid <= ?2 AND p.record_type = ?3 AND (p.derived_metrics & d.value) <> 0
    AND NOT EXISTS (SELECT 1 FROM run_columns AS rc WHERE rc.run_id = p.run_id AND rc.record_type = p.record_type AND rc.column_id = 'metrics/' || d.key)`;

const ADVANCE = "UPDATE rollup_backfill SET after_rid = ?2 WHERE family = ?3 AND after_rid = ?1";

export interface BackfillOutcome {
  windows: number;
  complete: boolean;
}

/** Runs up to `maxBatches` windows on one database; `complete` when nothing is left. */
export async function backfillRollups(db: D1Database, maxBatches: number = BACKFILL_MAX_BATCHES, window: number = BACKFILL_WINDOW): Promise<BackfillOutcome> {
  let windows = 0;
  for (const family of ["trace", "session"] as const) {
    let progress = await db.prepare("SELECT after_rid, until_rid FROM rollup_backfill WHERE family = ?1").bind(family).first<{ after_rid: number; until_rid: number }>();
    while (progress && progress.after_rid < progress.until_rid) {
      if (windows >= maxBatches) return { windows, complete: false };
      const to = Math.min(progress.after_rid + window, progress.until_rid);
      const bounds = [progress.after_rid, to, family] as const;
      await db.batch([
        db.prepare(recompute(family)).bind(...bounds.slice(0, 2)),
        db.prepare(PRESENT_COLUMNS).bind(...bounds),
        db.prepare(ADVANCE).bind(...bounds),
      ]);
      windows += 1;
      progress = { after_rid: to, until_rid: progress.until_rid };
    }
  }
  return { windows, complete: true };
}
