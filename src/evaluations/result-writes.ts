/**
 * Writing scorer results (contract section 15, "Results"), exactly once per (record, scorer
 * version) under redelivery: the result row is an upsert that never replaces a final result
 * (`success` or `error`) of the same version, and never one of another version unless a
 * backfill asks; the record's `metrics.<name>` and `metric_info.<name>` are then copied from the
 * stored rows, every scorer's at once (one update per record), in the same batch, so a second delivery that computed something else (a judge
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

/**
 * Copies the stored results of the given (record, scorer) pairs onto their records in ONE update
 * per record (issue 34, item 6: a record is rewritten once per chunk, not once per scorer; each
 * rewrite of a record is its whole row plus its metric rows and marks by trigger, and it competes
 * with ingest for the database's one writer). ?2 is `[[record_id, {name: scorer_id, ...}], ...]`.
 * `metrics.<name>` is set from a result with a value (one without leaves the key as it was, as a
 * `json_set` per scorer did); `metric_info.<name>` is replaced whole by the stored `info` (a
 * merge patch would merge nested objects and drop their nulls, so the object is rebuilt: the
 * record's other entries as they are, then the results'). A record that already carries every
 * one of these results is not rewritten (a redelivery writes no record). CROSS JOIN keeps the
 * order: the pairs drive, each result found by its primary key (else the planner may scan the
 * project's results).
 */
const COPY_TO_RECORDS = `
UPDATE records SET
  metrics = CASE WHEN s.vals = '{}' THEN records.metrics ELSE json_patch(records.metrics, s.vals) END,
  metric_info = (SELECT json_group_object(m.key, json(m.j)) FROM (
      SELECT e.key, CASE e.type WHEN 'text' THEN json_quote(e.value) WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'null' ELSE e.value END AS j
      FROM json_each(coalesce(records.metric_info, '{}')) AS e WHERE json_type(s.infos, '$."' || e.key || '"') IS NULL
      UNION ALL
      SELECT i.key, i.value FROM json_each(s.infos) AS i) AS m)
FROM (
  SELECT er.record_id, json_group_object(n.key, er.value) FILTER (WHERE er.value IS NOT NULL) AS vals, json_group_object(n.key, json(er.info)) AS infos
  FROM json_each(?2) AS w CROSS JOIN json_each(w.value, '$[1]') AS n
  CROSS JOIN evaluation_results AS er ON er.project_id = ?1 AND er.record_id = w.value ->> 0 AND er.scorer_id = n.value
  GROUP BY er.record_id) AS s
WHERE records.project_id = ?1 AND records.id = s.record_id
  AND EXISTS (SELECT 1 FROM json_each(s.infos) AS i WHERE (records.metric_info -> ('$."' || i.key || '"')) IS NOT i.value)`;

const PRESENT_COLUMNS = `INSERT OR IGNORE INTO run_columns (run_id, record_type, column_id) SELECT value ->> 0, value ->> 1, value ->> 2 FROM json_each(?1)`;

/** The statements that store these outcomes on the project's database (one batch: atomic). */
export function resultStatements(db: D1Database, projectId: string, outcomes: ScoreOutcome[], now: number, options: { backfill?: boolean } = {}): D1PreparedStatement[] {
  if (outcomes.length === 0) return [];
  const statements: D1PreparedStatement[] = [];
  const rows = outcomes.map((o) => JSON.stringify([o.recordId, o.scorerId, o.versionId, o.runId, o.status, o.value, JSON.stringify(o.info), o.reason, o.status === "pending" ? (o.dueAt ?? now) : null]));
  for (const chunk of jsonArraysBySize(rows)) statements.push(db.prepare(upsert(options.backfill ?? false)).bind(projectId, now, chunk));
  // A record's scorers travel together (one element), so no record is split over two updates.
  const byRecord = new Map<string, Record<string, string>>();
  for (const o of outcomes) {
    const scorers = byRecord.get(o.recordId) ?? {};
    scorers[o.scorerName] = o.scorerId;
    byRecord.set(o.recordId, scorers);
  }
  for (const chunk of jsonArraysBySize([...byRecord].map((entry) => JSON.stringify(entry)))) statements.push(db.prepare(COPY_TO_RECORDS).bind(projectId, chunk));
  const columns = new Set(outcomes.filter((o) => o.value !== null).map((o) => JSON.stringify([o.runId, o.recordType, `metrics/${o.scorerName}`])));
  if (columns.size > 0) statements.push(db.prepare(PRESENT_COLUMNS).bind(`[${[...columns].join(",")}]`));
  return statements;
}
