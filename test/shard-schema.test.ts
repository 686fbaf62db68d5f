/**
 * A data shard and the catalog carry the same record tables (the catalog serves as a shard for
 * projects placed before sharding, and for a one-database deployment): same columns, indexes and
 * triggers. The shard's migrations (migrations/shard/) are written by hand beside the catalog's
 * (migrations/, generated from src/db/schema.ts); this test is what keeps them in step.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";

const SHARD_TABLES = [
  "runs",
  "write_refusals",
  "run_families",
  "records",
  "record_metadata",
  "record_tags",
  "record_metrics",
  "metric_keys",
  "run_columns",
  "record_patches",
  "record_tombstones",
  "shard_projects",
  "shard_jobs",
  "shard_project_changes",
  "shard_partitions",
  "records_text_backfill",
  "rollup_backfill",
  "annotation_templates",
  "annotation_ratings",
  "annotation_queue_entries",
  "metric_cells",
  "metric_cell_values",
  "metric_cell_bins",
  "metric_cell_sessions",
  "metric_dirty_hours",
  "metric_settings",
  "metric_cell_backfill",
  "metric_day_cells",
  "metric_day_cell_values",
  "metric_day_cell_bins",
  "metric_day_cell_sessions",
  "span_model_prices",
  "upkeep_state",
  "evaluation_results",
  "evaluation_intake",
];

/** The text index (migration 0016) and the tables FTS5 keeps it in. */
const TEXT_INDEX_TABLES = ["records_text", "records_text_config", "records_text_data", "records_text_idx"];

async function describeTable(db: D1Database, table: string) {
  const columns = await db.prepare(`SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_info(?1) ORDER BY cid`).bind(table).all();
  const indexes = await db.prepare(`SELECT name, "unique", partial FROM pragma_index_list(?1) WHERE origin <> 'pk' ORDER BY name`).bind(table).all<{ name: string }>();
  const indexColumns: Record<string, unknown> = {};
  for (const index of indexes.results) {
    indexColumns[index.name] = (await db.prepare("SELECT name FROM pragma_index_info(?1) ORDER BY seqno").bind(index.name).all()).results;
  }
  const withoutRowid = await db.prepare("SELECT sql LIKE '%WITHOUT ROWID%' AS w FROM sqlite_master WHERE type = 'table' AND name = ?1").bind(table).first<{ w: number }>();
  return { columns: columns.results, indexes: indexes.results, indexColumns, withoutRowid: withoutRowid?.w };
}

const normalized = (sql: string) => sql.replace(/[`"]/g, "").replace(/\s+/g, " ").trim();

describe("the shard schema", () => {
  for (const table of SHARD_TABLES) {
    it(`${table} is the same on a shard and in the catalog`, async () => {
      expect(await describeTable(env.SHARD_0, table)).toEqual(await describeTable(env.DB, table));
    });
  }

  it("has the catalog's record triggers, word for word", async () => {
    const triggers = async (db: D1Database) =>
      (await db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' ORDER BY name").all<{ name: string; sql: string }>()).results.map((t) => ({
        name: t.name,
        sql: normalized(t.sql),
      }));
    expect(await triggers(env.SHARD_0)).toEqual(await triggers(env.DB));
  });

  it("holds no catalog table", async () => {
    const tables = await env.SHARD_0.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'd1_%' AND name NOT LIKE '_cf_%' AND name NOT LIKE 'sqlite_%' ORDER BY name").all<{ name: string }>();
    expect(tables.results.map((t) => t.name).sort()).toEqual([...SHARD_TABLES, ...TEXT_INDEX_TABLES].sort());
  });

  it("has the catalog's text index, declared word for word", async () => {
    const declared = async (db: D1Database) =>
      (await db.prepare("SELECT name, sql FROM sqlite_master WHERE name = 'records_text'").all<{ name: string; sql: string }>()).results.map((t) => normalized(t.sql));
    expect(await declared(env.SHARD_0)).toEqual(await declared(env.DB));
    expect(await declared(env.DB)).toHaveLength(1);
  });
});
