/**
 * The dry run of a deletion by filter: the matching records (up to DRY_RUN_CAP) and everything
 * below them, counted in one statement over the search's compiled selection: a session's traces
 * and spans, a trace's spans, a span's spans at any depth (each once, however many matching
 * ancestors it has; the walk stops at MAX_CHAIN_DEPTH levels, as the deletion's does).
 */
import type { RecordFamily } from "../columns/standard-columns";
import type { DeletionCounts } from "../deletion/deletion-job-types";
import { MAX_CHAIN_DEPTH } from "../ingest/write-guards";
import type { CompiledStatement } from "../search/compile-search-query";

/** Matching records counted at most, as the count routes (search/count-routes.ts). */
export const DRY_RUN_CAP = 10_000;

/** ?1 the selection's value pack, ?2 the cap + 1 (to know it was reached), ?3 the run. */
const COUNTS: Record<RecordFamily, (selection: string) => string> = {
  session: (selection) => `
WITH roots AS MATERIALIZED (SELECT id FROM (${selection}) LIMIT ?2)
SELECT (SELECT count(*) FROM roots) AS roots,
  (SELECT count(*) FROM roots CROSS JOIN records AS t ON t.session_id = roots.id AND t.record_type = 'trace' AND +t.run_id = ?3) AS traces,
  (SELECT count(*) FROM roots CROSS JOIN records AS s ON s.session_id = roots.id AND s.record_type = 'span' AND +s.run_id = ?3) AS spans`,
  trace: (selection) => `
WITH roots AS MATERIALIZED (SELECT id FROM (${selection}) LIMIT ?2)
SELECT (SELECT count(*) FROM roots) AS roots, 0 AS traces,
  (SELECT count(*) FROM roots CROSS JOIN records AS s ON s.trace_id = roots.id AND s.record_type = 'span' AND +s.run_id = ?3) AS spans`,
  span: (selection) => `
WITH RECURSIVE roots AS MATERIALIZED (SELECT id FROM (${selection}) LIMIT ?2),
below(id, depth) AS (
  SELECT id, 0 FROM roots
  UNION
  SELECT c.id, below.depth + 1 FROM below
  CROSS JOIN records AS c ON c.parent_id = below.id AND +c.run_id = ?3 AND +c.record_type = 'span'
  WHERE below.depth < ${MAX_CHAIN_DEPTH}
)
SELECT (SELECT count(*) FROM roots) AS roots, 0 AS traces, (SELECT count(DISTINCT id) FROM below) AS spans`,
};

interface CountRow {
  roots: number;
  traces: number;
  spans: number;
}

export async function countFilterDeletion(
  db: D1Database,
  family: RecordFamily,
  selection: CompiledStatement,
  runId: string,
): Promise<{ counts: DeletionCounts; exact: boolean }> {
  const row = await db.prepare(COUNTS[family](selection.sql)).bind(selection.params[0], DRY_RUN_CAP + 1, runId).first<CountRow>();
  const roots = Math.min(row?.roots ?? 0, DRY_RUN_CAP);
  const exact = (row?.roots ?? 0) <= DRY_RUN_CAP;
  const counts: DeletionCounts = {
    sessions: family === "session" ? roots : 0,
    traces: family === "trace" ? roots : (row?.traces ?? 0),
    spans: row?.spans ?? 0,
  };
  // A span root is counted among the spans below the roots (its walk starts at itself).
  return { counts, exact };
}

/**
 * The dry runs of the shards holding the project's partitions, added: the sum is exact when every
 * part was (each counts at most DRY_RUN_CAP matching roots); a root and all below it are in one
 * partition, so no record is counted twice.
 */
export function addCounts(parts: readonly { answer: { counts: DeletionCounts; exact: boolean } }[]): { counts: DeletionCounts; exact: boolean } {
  const counts: DeletionCounts = { sessions: 0, traces: 0, spans: 0 };
  let exact = true;
  for (const { answer } of parts) {
    counts.sessions += answer.counts.sessions;
    counts.traces += answer.counts.traces;
    counts.spans += answer.counts.spans;
    exact &&= answer.exact;
  }
  return { counts, exact };
}
