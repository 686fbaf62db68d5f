/// <reference types="node" />
/**
 * Backups of a shard with its text index (docs/sharding.md, "Backups"): `wrangler d1 export`
 * refuses the database as a whole (it holds a virtual table: miniflare's dumpSql says so, as
 * D1 does); `npm run admin -- export-shard`
 * exports its tables, and `import-shard` loads them into another migrated shard and rebuilds the
 * index, after which the index finds what the records hold and the derived rows (metric rows,
 * run families) are the source's.
 */
import { spawn } from "node:child_process";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closeLocalD1 } from "../../scripts/lib/local-d1";
import { REPO_ROOT, executeD1 } from "../../scripts/lib/wrangler";
import { migratedStateDir } from "./migrated-state";

let persistTo: string;
const target = () => ({ remote: false as const, persistTo });

function admin(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("npm", ["run", "--silent", "admin", "--", ...args, "--persist-to", persistTo], { cwd: REPO_ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

beforeAll(async () => {
  persistTo = await migratedStateDir("trace-store-backup-");
  // A project's run and records on SHARD_0, as ingestion leaves them (run families and metric
  // rows by trigger), then indexed as the cron's catch-up indexes them.
  await executeD1(
    `INSERT INTO shard_projects (project_id, organization_id, state, updated_at) VALUES ('p1', 'o1', 'active', 0);
     INSERT INTO runs (id, organization_id, project_id, kind, name, created_at, updated_at) VALUES ('run1', 'o1', 'p1', 'log_stream', 'default', 0, 0);
     WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300)
     INSERT INTO records (id, organization_id, project_id, run_id, record_type, type, name, created_at, input, output, metrics, family_key)
     SELECT printf('t-%04d', i), 'o1', 'p1', 'run1', 'trace', 'trace', 'trace ' || i, 1000 + i, 'order KX' || i || '-QV2 refund', 'it''s done', json_object('toxicity', i / 300.0),
       (SELECT key FROM run_families WHERE run_id = 'run1' AND record_type = 'trace') FROM n;
     UPDATE records_text_backfill SET indexed_through = (SELECT max(rid) FROM records) WHERE id = 1;`,
    target(),
    "SHARD_0",
  );
}, 480_000);

afterAll(async () => {
  // The test's own reads of the databases run in this process (scripts/lib/local-d1.ts).
  await closeLocalD1();
  if (persistTo) rmSync(persistTo, { recursive: true, force: true });
});

describe("shard backups with the text index", () => {
  it("export-shard and import-shard carry a shard with its index", async () => {
    const file = join(persistTo, "shard0.sql");

    const exported = await admin("export-shard", "--shard", "SHARD_0", "--output", file);
    expect(exported.code, exported.stderr).toBe(0);
    expect(JSON.parse(exported.stdout).tables).not.toContain("records_text");

    const imported = await admin("import-shard", "--shard", "SHARD_1", "--file", file);
    expect(imported.code, imported.stderr).toBe(0);
    expect(JSON.parse(imported.stdout)).toMatchObject({ shard: "SHARD_1", records: 300 });

    // Both shards read with the same statements: one result set per statement.
    const compared = [
      "SELECT rid, id, input, family_key FROM records ORDER BY rid",
      "SELECT * FROM record_metrics ORDER BY metric_key, value, record_id",
      "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' ORDER BY name",
      `SELECT rowid AS rid FROM records_text WHERE records_text MATCH '"x12" AND "-qv"' ORDER BY rowid`,
      "SELECT pending_through, indexed_through - (SELECT max(rid) FROM records) AS unindexed FROM records_text_backfill",
    ].join(";\n");
    const [source, copy] = await Promise.all(["SHARD_0", "SHARD_1"].map(async (b) => (await executeD1(compared, target(), b)).map((r) => r.results)));
    const [sourceRecords, sourceMetrics, sourceTriggers, found0] = source!;
    const [copiedRecords, copiedMetrics, copiedTriggers, found1, copiedBackfill] = copy!;
    expect(copiedRecords).toEqual(sourceRecords);
    expect(copiedMetrics).toEqual(sourceMetrics);
    expect(copiedTriggers).toEqual(sourceTriggers);
    // The rebuilt index finds what the records hold, like the source's.
    expect(found1).toEqual(found0);
    expect(found1!.length).toBeGreaterThan(0);
    expect(copiedBackfill).toEqual([{ pending_through: 0, unindexed: 0 }]);

    // Into a shard that already holds records: refused, nothing changed.
    const again = await admin("import-shard", "--shard", "SHARD_1", "--file", file);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already holds 300 records/);
  }, 300_000);
});
