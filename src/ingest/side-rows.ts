/**
 * The side rows of a record (`record_metadata`, `record_tags`, `record_metrics`: the indexed
 * copies of its `user_metadata`, `tags` and `metrics` JSON) are always derived from the record
 * as stored: every write that changes those fields clears the rows of the records it reached and
 * derives them anew, in the same batch. Whatever order merged writes arrive in, the rows equal
 * the JSON.
 */

export type SideTable = "record_metadata" | "record_tags" | "record_metrics";

/** INSERT ... SELECT of each table's rows from `r`, the stored record. */
const DERIVE: Record<SideTable, { columns: string; select: string; source: string; where: string; conflict: string }> = {
  record_metadata: {
    columns: "record_rid, record_id, key, value, organization_id, run_id, record_type, created_at",
    select: "r.rid, r.id, m.key, m.value, r.organization_id, r.run_id, r.record_type, r.created_at",
    source: "json_each(r.user_metadata) AS m",
    where: "m.type = 'text'",
    conflict: "",
  },
  record_tags: {
    columns: "record_rid, record_id, tag, run_id, record_type, created_at",
    select: "r.rid, r.id, m.value, r.run_id, r.record_type, r.created_at",
    source: "json_each(r.tags) AS m",
    where: "m.type = 'text'",
    // A tag listed twice is one row.
    conflict: "OR IGNORE",
  },
  record_metrics: {
    columns: "record_rid, record_id, name, value, run_id, record_type, created_at",
    select: "r.rid, r.id, m.key, m.value, r.run_id, r.record_type, r.created_at",
    source: "json_each(r.metrics) AS m",
    where: "m.type IN ('integer', 'real')",
    conflict: "",
  },
};

/**
 * SQL that rebuilds the side rows of the records selected as `records AS r` by the FROM clause
 * `from` and the condition `where` (e.g. `records AS r` and `r.project_id = ?2 AND r.id IN ...`).
 */
export function rebuildSideRows(reached: { from: string; where: string }, tables: readonly SideTable[]): string[] {
  const { from, where } = reached;
  return [
    ...tables.map((table) => `DELETE FROM ${table} WHERE record_rid IN (SELECT r.rid FROM ${from} WHERE ${where})`),
    ...tables.map((table) => {
      const d = DERIVE[table];
      return `INSERT ${d.conflict} INTO ${table} (${d.columns}) SELECT ${d.select} FROM ${from}, ${d.source} WHERE ${where} AND ${d.where}`;
    }),
  ];
}
