/**
 * Writing scorer results (contract section 15, "Results"), exactly once per (record, scorer
 * version) under redelivery: the result row is an upsert that never replaces a final result
 * (`success` or `error`) of the same version, and never one of another version unless a
 * backfill asks; the record's `metrics.<name>` and `metric_info.<name>` are then copied from the
 * stored row, in the same batch, so a second delivery that computed something else (a judge
 * answering differently) writes what the first stored. The record's metric rows and metric-cell
 * marks follow by their triggers (a write like any other); `run_columns` lists the metric.
 */
import { jsonArraysBySize } from "../ingest/write-records";

export type ResultStatus = "pending" | "success" | "error" | "not_applicable";

export interface ScoreOutcome {
  recordId: string;
  recordType: string;
  scorerId: string;
  scorerName: string;
  versionId: string;
  runId: string;
  status: ResultStatus;
  value: number | null;
  /** `metric_info.<name>` (status_type, value, explanation, message, judge, ...). */
  info: Record<string, unknown>;
  reason: string | null;
  /** A pending result: when it is to be scored again (microseconds; the cron's sweep picks it up if no message does). */
  dueAt?: number | null;
}

/** Statuses a later delivery (or an update of the record) may replace. */
const REPLACEABLE = "('pending', 'not_applicable')";

const upsert = (backfill: boolean) => `
INSERT INTO evaluation_results (project_id, record_id, scorer_id, version_id, run_id, status, value, info, reason, attempts, updated_at, due_at)
SELECT ?1, value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6, value ->> 7, 1, ?2, value ->> 8 FROM json_each(?3) WHERE true
ON CONFLICT (project_id, record_id, scorer_id) DO UPDATE SET version_id = excluded.version_id, status = excluded.status, value = excluded.value,
  info = excluded.info, reason = excluded.reason, attempts = evaluation_results.attempts + 1, updated_at = excluded.updated_at, due_at = excluded.due_at
WHERE evaluation_results.status IN ${REPLACEABLE}${backfill ? " OR evaluation_results.version_id <> excluded.version_id" : ""}`;

/** Copies one scorer's stored results onto its records (only those that differ: an unchanged record is not rewritten). */
const copyToRecords = (name: string) => `
UPDATE records SET
  metrics = CASE WHEN er.value IS NULL THEN records.metrics ELSE json_set(records.metrics, '$.${name}', er.value) END,
  metric_info = json_set(coalesce(records.metric_info, '{}'), '$.${name}', json(er.info))
FROM evaluation_results AS er
WHERE er.project_id = ?1 AND er.scorer_id = ?2 AND er.record_id IN (SELECT value FROM json_each(?3))
  AND records.project_id = ?1 AND records.id = er.record_id
  AND (records.metric_info -> '$.${name}') IS NOT json(er.info)`;

const PRESENT_COLUMNS = `INSERT OR IGNORE INTO run_columns (run_id, record_type, column_id) SELECT value ->> 0, value ->> 1, value ->> 2 FROM json_each(?1)`;

/** The statements that store these outcomes on the project's database (one batch: atomic). */
export function resultStatements(db: D1Database, projectId: string, outcomes: ScoreOutcome[], now: number, options: { backfill?: boolean } = {}): D1PreparedStatement[] {
  if (outcomes.length === 0) return [];
  const statements: D1PreparedStatement[] = [];
  const rows = outcomes.map((o) => JSON.stringify([o.recordId, o.scorerId, o.versionId, o.runId, o.status, o.value, JSON.stringify(o.info), o.reason, o.status === "pending" ? (o.dueAt ?? now) : null]));
  for (const chunk of jsonArraysBySize(rows)) statements.push(db.prepare(upsert(options.backfill ?? false)).bind(projectId, now, chunk));
  const byScorer = new Map<string, { name: string; ids: string[] }>();
  for (const o of outcomes) {
    const entry = byScorer.get(o.scorerId) ?? { name: o.scorerName, ids: [] };
    entry.ids.push(o.recordId);
    byScorer.set(o.scorerId, entry);
  }
  for (const [scorerId, { name, ids }] of byScorer) {
    for (const chunk of jsonArraysBySize(ids.map((id) => JSON.stringify(id)))) statements.push(db.prepare(copyToRecords(name)).bind(projectId, scorerId, chunk));
  }
  const columns = new Set(outcomes.filter((o) => o.value !== null).map((o) => JSON.stringify([o.runId, o.recordType, `metrics/${o.scorerName}`])));
  if (columns.size > 0) statements.push(db.prepare(PRESENT_COLUMNS).bind(`[${[...columns].join(",")}]`));
  return statements;
}
