/**
 * The metric rows as tests read them: record_metrics is keyed in search order by a per-database
 * metric key (docs/schema.md, "Storage per record"), so its rows are joined with their names
 * (metric_keys) and their run family (run_families) to read as (record_rid, record_id, name,
 * value, record_type, run_id). Use it where a table name goes: `FROM ${METRIC_ROWS} AS s`.
 */
export const METRIC_ROWS = `(SELECT m.record_rid, m.record_id, k.name, m.value, f.record_type, f.run_id
  FROM record_metrics AS m JOIN metric_keys AS k ON k.key = m.metric_key JOIN run_families AS f ON f.key = k.family_key)`;
