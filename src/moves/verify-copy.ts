/**
 * Verification before the switch (the project is frozen on the source, its change log drained):
 * the records per run and kind (session, trace, span), and their ratings and queue entries, on
 * both databases, a page of runs at a
 * time (served by records_family_id_order on both sides), then the project's held updates and
 * tombstones. A difference names the run and kind.
 */
export interface KindCounts {
  sessions: number;
  traces: number;
  spans: number;
}

export interface VerifyTotals {
  runs: number;
  source: KindCounts;
  target: KindCounts;
}

export const emptyTotals = (): VerifyTotals => ({
  runs: 0,
  source: { sessions: 0, traces: 0, spans: 0 },
  target: { sessions: 0, traces: 0, spans: 0 },
});

const COUNTS_OF_RUNS = `SELECT f.run_id, f.record_type, count(*) AS n
FROM run_families AS f CROSS JOIN records AS r ON r.family_key = f.key
WHERE f.run_id IN (SELECT value FROM json_each(?1)) GROUP BY f.run_id, f.record_type`;

/**
 * The ratings and the queue entries of the same runs' records (issue 20: a move carries them with
 * their records), reported as two more kinds; served by the primary keys, which lead with the
 * record's row key, so verifying stays a page of runs at a time.
 */
const ANNOTATIONS_OF_RUNS = `SELECT f.run_id, 'rating' AS record_type, count(*) AS n
FROM run_families AS f CROSS JOIN records AS r ON r.family_key = f.key CROSS JOIN annotation_ratings AS a ON a.record_rid = r.rid
WHERE f.run_id IN (SELECT value FROM json_each(?1)) GROUP BY f.run_id
UNION ALL
SELECT f.run_id, 'queue entry' AS record_type, count(*) AS n
FROM run_families AS f CROSS JOIN records AS r ON r.family_key = f.key CROSS JOIN annotation_queue_entries AS e ON e.record_rid = r.rid
WHERE f.run_id IN (SELECT value FROM json_each(?1)) GROUP BY f.run_id`;

interface CountRow {
  run_id: string;
  record_type: "session" | "trace" | "span" | "rating" | "queue entry";
  n: number;
}

const KIND = { session: "sessions", trace: "traces", span: "spans" } as const;

export interface VerifyPage {
  last: string | undefined;
  /** What differs on this page, if anything. */
  mismatch: string | undefined;
}

export async function verifyRunsPage(source: D1Database, target: D1Database, projectId: string, after: string, runsPerPage: number, totals: VerifyTotals): Promise<VerifyPage> {
  const { results: page } = await source
    .prepare("SELECT id FROM runs WHERE project_id = ?1 AND id > ?2 ORDER BY id LIMIT ?3")
    .bind(projectId, after, runsPerPage)
    .all<{ id: string }>();
  if (page.length === 0) return { last: undefined, mismatch: undefined };
  const ids = JSON.stringify(page.map((r) => r.id));
  const [here, there] = await Promise.all(
    [source, target].map(async (db) => {
      const [records, annotations] = await db.batch<CountRow>([db.prepare(COUNTS_OF_RUNS).bind(ids), db.prepare(ANNOTATIONS_OF_RUNS).bind(ids)]);
      return { results: [...records!.results, ...annotations!.results] };
    }),
  );
  const key = (row: CountRow) => `${row.run_id}/${row.record_type}`;
  const theirs = new Map(there!.results.map((row) => [key(row), row.n]));
  const ours = new Map(here!.results.map((row) => [key(row), row.n]));
  let mismatch: string | undefined;
  for (const k of new Set([...ours.keys(), ...theirs.keys()])) {
    if ((ours.get(k) ?? 0) !== (theirs.get(k) ?? 0)) {
      const [run, kind] = k.split("/");
      mismatch ??= `run ${run}: ${ours.get(k) ?? 0} ${kind === "queue entry" ? "queue entries" : `${kind}s`} on the source, ${theirs.get(k) ?? 0} on the target`;
    }
  }
  for (const row of here!.results) if (row.record_type in KIND) totals.source[KIND[row.record_type as keyof typeof KIND]] += row.n;
  for (const row of there!.results) if (row.record_type in KIND) totals.target[KIND[row.record_type as keyof typeof KIND]] += row.n;
  totals.runs += page.length;
  return { last: page[page.length - 1]!.id, mismatch };
}

const SIDE_COUNTS = `SELECT (SELECT count(*) FROM record_patches WHERE project_id = ?1) AS patches, (SELECT count(*) FROM record_tombstones WHERE project_id = ?1) AS tombstones`;

/** Held updates and tombstones of the project on both sides; a difference, if any. */
export async function verifyHeldRows(source: D1Database, target: D1Database, projectId: string): Promise<string | undefined> {
  const [here, there] = await Promise.all([source, target].map((db) => db.prepare(SIDE_COUNTS).bind(projectId).first<{ patches: number; tombstones: number }>()));
  if (here!.patches !== there!.patches) return `${here!.patches} held updates on the source, ${there!.patches} on the target`;
  if (here!.tombstones !== there!.tombstones) return `${here!.tombstones} tombstones on the source, ${there!.tombstones} on the target`;
  return undefined;
}
