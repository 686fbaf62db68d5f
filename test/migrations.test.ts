/**
 * Migrations keep a deployed database's data: each migration that rebuilds tables is applied to
 * a database holding rows of the schema before it, and the rows must come through intact.
 */
import { applyD1Migrations, env } from "cloudflare:test";
import { describe, expect, it } from "vitest";

const migration = (tag: string) => {
  const index = env.TEST_MIGRATIONS.findIndex((m) => m.name.startsWith(tag));
  if (index < 0) throw new Error(`no migration ${tag}`);
  return index;
};

describe("0005: record ids per project, side rows by rid", () => {
  it("keeps every record, metadata, tag and metric row, and links side rows to their record", async () => {
    const db = env.MIGRATION_TEST_DB;
    await applyD1Migrations(db, env.TEST_MIGRATIONS.slice(0, migration("0005")));
    const [org, project, run] = ["org-1", "project-1", "run-1"];
    const records = [
      ["trace-1", "trace", "trace", null, "trace-1", null, '{"customer":"acme"}', '["a","b"]', '{"toxicity":0.5}'],
      ["span-1", "span", "llm", null, "trace-1", "trace-1", '{"k":"v"}', "[]", '{"num_input_tokens":3}'],
      ["session-1", "session", "session", "session-1", null, null, "{}", "[]", "{}"],
    ] as const;
    await db.batch([
      db.prepare("INSERT INTO organizations (id, name, created_at) VALUES (?, 'o', 0)").bind(org),
      db.prepare("INSERT INTO projects (id, organization_id, name, type, created_at, updated_at) VALUES (?, ?, 'p', 'gen_ai', 0, 0)").bind(project, org),
      db.prepare("INSERT INTO runs (id, organization_id, project_id, kind, name, created_at, updated_at) VALUES (?, ?, ?, 'log_stream', 'r', 0, 0)").bind(run, org, project),
      ...records.map(([id, family, type, session, trace, parent, metadata, tags, metrics], i) =>
        db
          .prepare(
            `INSERT INTO records (id, organization_id, project_id, run_id, record_type, type, name, created_at, session_id, trace_id, parent_id, user_metadata, tags, metrics)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          )
          .bind(id, org, project, run, family, type, `name-${i}`, 1000 + i, session, trace, parent, metadata, tags, metrics),
      ),
      db.prepare("INSERT INTO record_metadata (record_id, key, value, organization_id, run_id, record_type, created_at) VALUES ('trace-1', 'customer', 'acme', ?, ?, 'trace', 1000), ('span-1', 'k', 'v', ?, ?, 'span', 1001)").bind(org, run, org, run),
      db.prepare("INSERT INTO record_tags (record_id, tag, run_id, record_type, created_at) VALUES ('trace-1', 'a', ?, 'trace', 1000), ('trace-1', 'b', ?, 'trace', 1000)").bind(run, run),
      db.prepare("INSERT INTO record_metrics (record_id, name, value, run_id, record_type, created_at) VALUES ('trace-1', 'toxicity', 0.5, ?, 'trace', 1000), ('span-1', 'num_input_tokens', 3, ?, 'span', 1001)").bind(run, run),
    ]);
    const before = (await db.prepare("SELECT * FROM records ORDER BY id").all<Record<string, unknown>>()).results;

    await applyD1Migrations(db, env.TEST_MIGRATIONS);

    const after = (await db.prepare("SELECT * FROM records ORDER BY id").all<Record<string, unknown>>()).results;
    // Later migrations add columns (0009 family_key, 0012 derived_metrics: nothing derived yet).
    // 0025 (shard 0016) partition_seq: null, the project's first partition (no row rewritten).
    expect(
      after.map(({ rid: _rid, family_key: _familyKey, derived_metrics: derived, partition_seq: partition, ...rest }) => (expect(derived).toBe(0), expect(partition).toBeNull(), rest)),
    ).toEqual(before);
    // 0009: each record carries the key of its run's family.
    const families = (
      await db.prepare("SELECT r.id, f.run_id, f.record_type FROM records AS r JOIN run_families AS f ON f.key = r.family_key ORDER BY r.id").all()
    ).results;
    expect(families).toEqual(records.map(([id, family]) => ({ id, run_id: run, record_type: family })).sort((a, b) => a.id.localeCompare(b.id)));
    const joined = async (table: string, columns: string) =>
      (await db.prepare(`SELECT r.id, ${columns} FROM ${table} AS s JOIN records AS r ON r.rid = s.record_rid AND r.id = s.record_id ORDER BY 1, 2`).all()).results;
    expect(await joined("record_metadata", "s.key, s.value")).toEqual([
      { id: "span-1", key: "k", value: "v" },
      { id: "trace-1", key: "customer", value: "acme" },
    ]);
    expect(await joined("record_tags", "s.tag")).toEqual([
      { id: "trace-1", tag: "a" },
      { id: "trace-1", tag: "b" },
    ]);
    const metricRows = async () =>
      (
        await db
          .prepare("SELECT r.id, k.name, s.value FROM record_metrics AS s JOIN metric_keys AS k ON k.key = s.metric_key JOIN records AS r ON r.rid = s.record_rid AND r.id = s.record_id AND r.family_key = k.family_key ORDER BY 1, 2")
          .all()
      ).results;
    expect(await metricRows()).toEqual([
      { id: "span-1", name: "num_input_tokens", value: 3 },
      { id: "trace-1", name: "toxicity", value: 0.5 },
    ]);
    // 0009's triggers keep the metric rows equal to the JSON from then on.
    await db.prepare(`UPDATE records SET metrics = '{"num_input_tokens":4,"cost":0.25}' WHERE id = 'span-1'`).run();
    // (and 0013's roll-ups sum the llm span's tokens and cost into its trace)
    expect(await metricRows()).toEqual([
      { id: "span-1", name: "cost", value: 0.25 },
      { id: "span-1", name: "num_input_tokens", value: 4 },
      { id: "trace-1", name: "cost", value: 0.25 },
      { id: "trace-1", name: "num_input_tokens", value: 4 },
      { id: "trace-1", name: "toxicity", value: 0.5 },
    ]);
    // The cascade from records to side rows is in place, and so are the guard triggers.
    await db.prepare("DELETE FROM records WHERE id = 'trace-1'").run();
    expect((await db.prepare("SELECT count(*) AS n FROM record_tags").first<{ n: number }>())!.n).toBe(0);
    expect(await metricRows()).toEqual([
      { id: "span-1", name: "cost", value: 0.25 },
      { id: "span-1", name: "num_input_tokens", value: 4 },
    ]);
    const triggers = (await db.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger' ORDER BY name").all<{ name: string }>()).results;
    expect(triggers.map((t) => t.name)).toEqual([
      // Annotation queue entries (0017): the same guard and change log.
      "annotation_queue_entries_changes_while_exporting_delete",
      "annotation_queue_entries_changes_while_exporting_insert",
      "annotation_queue_entries_project_on_shard_insert",
      // Annotations (0012): guards and change log like the records', and created_at carried over.
      "annotation_ratings_changes_while_exporting_delete",
      "annotation_ratings_changes_while_exporting_insert",
      "annotation_ratings_changes_while_exporting_update",
      "annotation_ratings_follow_created_at",
      "annotation_ratings_project_on_shard_insert",
      "annotation_ratings_project_on_shard_update",
      "annotation_templates_changes_while_exporting_delete",
      "annotation_templates_changes_while_exporting_insert",
      "annotation_templates_changes_while_exporting_update",
      "annotation_templates_project_on_shard_insert",
      "annotation_templates_project_on_shard_update",
      "record_metrics_on_delete",
      "record_metrics_on_insert",
      "record_metrics_on_update",
      "record_patches_changes_while_exporting_delete",
      "record_patches_changes_while_exporting_insert",
      "record_patches_changes_while_exporting_update",
      "record_patches_project_on_shard_insert",
      "record_patches_project_on_shard_update",
      "record_tombstones_changes_while_exporting_delete",
      "record_tombstones_changes_while_exporting_insert",
      "records_changes_while_exporting_delete",
      "records_changes_while_exporting_insert",
      "records_changes_while_exporting_update",
      // Pre-aggregates (0018): cost when model and tokens meet, hours marked for the cells' refresh.
      "records_cost_when_known",
      "records_metric_cells_span_delete",
      "records_metric_cells_span_insert",
      "records_metric_cells_span_update",
      "records_metric_cells_trace_delete",
      "records_metric_cells_trace_insert",
      "records_metric_cells_trace_update",
      "records_ownership_guard",
      "records_partition_roots_delete",
      "records_partition_roots_insert",
      "records_partition_roots_session",
      "records_project_on_shard_insert",
      "records_project_on_shard_update",
      "records_rollup_session_insert",
      "records_rollup_span_delete",
      "records_rollup_span_insert",
      "records_rollup_span_update",
      "records_rollup_trace_delete",
      "records_rollup_trace_insert",
      "records_rollup_trace_update",
      "records_text_backfill_chunk",
      "records_text_catch_up",
      "records_text_on_delete",
      "records_text_on_reused_rid",
      "records_text_on_update",
      "run_columns_metric_name_limit",
      "runs_families",
      "write_refusals_parent_chain",
      "write_refusals_project_importing",
    ]);
  });

  it("the run's metric-name cap in the trigger is RECORD_LIMITS.maxMetricNamesPerRun", async () => {
    const { RECORD_LIMITS } = await import("../src/ingest/record-limits");
    const trigger = await env.DB.prepare("SELECT sql FROM sqlite_master WHERE name = 'run_columns_metric_name_limit'").first<{ sql: string }>();
    expect(trigger!.sql).toContain(`> ${RECORD_LIMITS.maxMetricNamesPerRun}`);
  });
});

describe("0025: time partitions", () => {
  // After the 0005 test (the test database is shared by the file and then fully migrated): the
  // migration's own backfill statement, run on projects that have no partition yet.
  it("gives every existing project one open partition where its records are, from its creation", async () => {
    const db = env.MIGRATION_TEST_DB;
    await applyD1Migrations(db, env.TEST_MIGRATIONS);
    const [, , migrated] = await db.batch<{ n: number }>([
      db.prepare("INSERT INTO organizations (id, name, created_at) VALUES ('org-p', 'o', 0)"),
      db.prepare("INSERT INTO projects (id, organization_id, name, type, created_at, updated_at, shard) VALUES ('p-old', 'org-p', 'a', 'gen_ai', 111, 111, NULL), ('p-sharded', 'org-p', 'b', 'gen_ai', 222, 222, 'SHARD_1')"),
      // project-1 of the 0005 test got its partition when 0025 ran; start the backfill afresh.
      db.prepare("SELECT count(*) AS n FROM project_partitions WHERE project_id = 'project-1' AND seq = 1 AND state = 'open'"),
      db.prepare("DELETE FROM project_partitions"),
    ]);
    expect(migrated!.results[0]!.n).toBe(1);
    const backfill = env.TEST_MIGRATIONS[migration("0025")]!.queries.find((q) => q.includes("INSERT INTO `project_partitions`") && q.includes("FROM `projects`"));
    expect(backfill).toBeDefined();
    await db.prepare(backfill!).run();
    const partitions = (
      await db.prepare("SELECT project_id, seq, shard, state, opened_at, closed_at, id FROM project_partitions WHERE project_id IN ('p-old', 'p-sharded') ORDER BY project_id").all<Record<string, unknown>>()
    ).results;
    expect(partitions.map(({ id: _id, ...rest }) => rest)).toEqual([
      { project_id: "p-old", seq: 1, shard: "DB", state: "open", opened_at: 111, closed_at: null },
      { project_id: "p-sharded", seq: 1, shard: "SHARD_1", state: "open", opened_at: 222, closed_at: null },
    ]);
    for (const p of partitions) expect(String(p.id)).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    // One open partition per project, enforced by the catalog itself.
    await expect(db.prepare("INSERT INTO project_partitions (id, project_id, seq, shard, state, opened_at) VALUES ('x', 'p-old', 2, 'DB', 'open', 1)").run()).rejects.toThrow(/UNIQUE/);
  });
});
