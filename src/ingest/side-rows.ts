/**
 * The side rows of a record (`record_metadata`, `record_tags`: the indexed copies of its
 * `user_metadata` and `tags` JSON) are always derived from the record as stored: every write
 * that changes those fields clears the rows of the records it reached and derives them anew, in
 * the same batch. Whatever order merged writes arrive in, the rows equal the JSON. (Metric rows,
 * `record_metrics`, keyed in search order with no key by record, follow the `metrics` JSON by
 * triggers instead: migration 0009, docs/schema.md "Storage per record".)
 */

export type SideTable = "record_metadata" | "record_tags";

/** INSERT ... SELECT of each table's rows from `r`, the stored record. */
const DERIVE: Record<SideTable, { columns: string; select: string; source: string; where: string; conflict: string }> = {
  record_metadata: {
    columns: "record_rid, record_id, key, value, family_key, created_at",
    select: "r.rid, r.id, m.key, m.value, r.family_key, r.created_at",
    source: "json_each(r.user_metadata) AS m",
    where: "m.type = 'text'",
    conflict: "",
  },
  record_tags: {
    columns: "record_rid, record_id, tag, family_key, created_at",
    select: "r.rid, r.id, m.value, r.family_key, r.created_at",
    source: "json_each(r.tags) AS m",
    where: "m.type = 'text'",
    // A tag listed twice is one row.
    conflict: "OR IGNORE",
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
