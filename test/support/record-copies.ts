/**
 * A backlog in seconds, not an ingest: copies of one stored record, inserted by SQL straight into
 * its database in batches of 1,000 (the records' triggers run, so they mark metric hours and sit
 * above the text index's watermark, as ingested records would). Each copy is a root trace of its
 * own (a new random id, `trace_id` = `id`), `spacingMs` after the previous one.
 */
export async function copyRecordBySql(db: D1Database, copy: { projectId: string; sourceId: string; copies: number; spacingMs: number }): Promise<void> {
  const columns = (await db.prepare("SELECT name FROM pragma_table_info('records') WHERE name NOT IN ('rid', 'id', 'trace_id', 'created_at', 'updated_at')").all<{ name: string }>()).results.map((r) => r.name);
  const randomUuid = "lower(printf('%s-%s-4%s-a%s-%s', hex(randomblob(4)), hex(randomblob(2)), substr(hex(randomblob(2)), 2), substr(hex(randomblob(2)), 2), hex(randomblob(6))))";
  const per = 1_000;
  for (let from = 0; from < copy.copies; from += per) {
    await db
      .prepare(
        `WITH RECURSIVE n(i) AS (SELECT ?2 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?3),
           c AS MATERIALIZED (SELECT ${randomUuid} AS nid, n.i FROM n)
         INSERT INTO records (id, trace_id, created_at, updated_at, ${columns.join(", ")})
         SELECT c.nid, c.nid, s.created_at + c.i * ?4, s.created_at + c.i * ?4, ${columns.map((col) => `s.${col}`).join(", ")}
         FROM records AS s, c WHERE s.id = ?5 AND s.project_id = ?1`,
      )
      .bind(copy.projectId, from + 1, Math.min(from + per, copy.copies) + 1, copy.spacingMs, copy.sourceId)
      .run();
  }
}
