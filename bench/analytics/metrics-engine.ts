/**
 * metrics/search at the engine (the SQL on the dataset's SQLite file, as docs/benchmarks.md's
 * "engine" reference): the statements the service runs for the window of the whole dataset,
 * scanned (no cells) and from the pre-aggregated cells (after the refresh), ungrouped at 1-hour
 * buckets and grouped by name, tags and a declared metadata key at 1-day buckets; and the time the
 * refresh takes to compute every hour's cells. Same run, same file, so the ratios compare.
 * `npx tsx bench/analytics/metrics-engine.ts [records] [dataset dir]` (the search bench's cached dataset).
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { copyDataset, type Dataset, discardCopy, ensureDataset, sqliteFileOf } from "../dataset/dataset-cache";
import { boundStatement, runSqlite, type SqlStatement } from "../lib/sqlite-cli";
import { aggregateStatement, type AggregateScope, type Bucketing, type GroupSpec, percentileStatement, type Statement } from "../../src/analytics/aggregate-records";
import { cellCoverage, cellStatements } from "../../src/analytics/preaggregated-read";
import { traceMetricsPlan } from "../../src/analytics/metrics-search";
import { HOUR_MICROS, REFRESH_STATEMENTS } from "../../src/analytics/metric-cells";

const SAMPLES = 3;

async function timed(file: string, statements: Statement[]): Promise<number> {
  const script = [".parameter init", ".timer on", ...statements.map((s) => boundStatement(s as SqlStatement))].join("\n");
  const runs: number[] = [];
  for (let i = 0; i < SAMPLES; i += 1) {
    const { stdout } = await runSqlite(file, `.output /dev/null\n${script}`);
    const times = [...stdout.matchAll(/Run Time: real ([\d.]+)/g)].map((m) => Number(m[1]));
    runs.push(times.reduce((a, b) => a + b, 0) * 1000);
  }
  return runs.sort((a, b) => a - b)[Math.floor(SAMPLES / 2)]!;
}

async function main() {
  const records = Number(process.argv[2] ?? 100_000);
  // A built dataset directory as the third argument (reads only: any dataset of the same generator will do).
  const given = process.argv[3];
  const source: Dataset = given
    ? { manifest: JSON.parse(readFileSync(path.join(given, "manifest.json"), "utf8")), persistDir: given, sqliteFile: sqliteFileOf(given) }
    : await ensureDataset(records, 1);
  const dataset = copyDataset(source, "metrics-engine");
  try {
    const file = dataset.sqliteFile;
    const runId = dataset.manifest.tenant.logStreamId;
    const key = "customer";
    await runSqlite(file, `INSERT OR REPLACE INTO metric_settings (project_id, metadata_key) VALUES ('${dataset.manifest.tenant.projectId}', '${key}');`);
    const startMicros = Math.floor(dataset.manifest.window.startMicros / HOUR_MICROS) * HOUR_MICROS;
    const endMicros = Math.min(startMicros + 30 * 24 * HOUR_MICROS, Math.ceil(dataset.manifest.window.endMicros / HOUR_MICROS) * HOUR_MICROS);
    const plan = traceMetricsPlan(new Set(["duration_ns", "num_input_tokens", "num_output_tokens", "num_total_tokens", "cost", "toxicity"]));
    const values = plan.values(startMicros);
    const scope: AggregateScope = { family: "trace", runId, fromMicros: startMicros, toMicros: endMicros, filter: { kind: "and", children: [] } };
    const whole: Bucketing = { startMicros, intervalMicros: endMicros - startMicros };
    const cases: { label: string; interval: number; group: GroupSpec; grouping: string }[] = [
      { label: "ungrouped, 1-hour buckets", interval: HOUR_MICROS, group: { kind: "none" }, grouping: "" },
      { label: "by name, 1-day buckets", interval: 24 * HOUR_MICROS, group: { kind: "column", storage: "name" }, grouping: "name" },
      { label: "by tags, 1-day buckets", interval: 24 * HOUR_MICROS, group: { kind: "tags" }, grouping: "tags" },
      { label: `by user_metadata.${key}, 1-day buckets`, interval: 24 * HOUR_MICROS, group: { kind: "metadata", key }, grouping: "metadata" },
    ];
    const scanOf = (buckets: Bucketing, group: GroupSpec) => [
      aggregateStatement(scope, whole, { kind: "none" }, null, values),
      percentileStatement(scope, whole, { kind: "none" }, null, values[3]!, [50, 90, 95, 99]),
      aggregateStatement(scope, buckets, group, null, values),
      percentileStatement(scope, buckets, group, null, values[3]!, [50, 90, 95, 99]),
    ];
    const scans = [];
    for (const c of cases) scans.push(await timed(file, scanOf({ startMicros, intervalMicros: c.interval }, c.group)));

    const dirty = await runSqlite(file, "SELECT count(*) FROM metric_dirty_hours;");
    const hours = Number(dirty.stdout.trim());
    const refreshStart = Date.now();
    await runSqlite(file, [".parameter init", `CREATE TEMP TABLE chunk AS SELECT json_group_array(json_array(run_id, hour)) AS j FROM metric_dirty_hours;`, ...REFRESH_STATEMENTS.map((s) => `DELETE FROM temp.sqlite_parameters; INSERT INTO temp.sqlite_parameters SELECT '?1', j FROM temp.chunk;\n${s};`)].join("\n"));
    const refreshMs = Date.now() - refreshStart;

    const rows: string[] = [];
    for (const [i, c] of cases.entries()) {
      const buckets: Bucketing = { startMicros, intervalMicros: c.interval };
      const none = new Set<number>();
      const coverage = cellCoverage(startMicros, endMicros, buckets, none);
      const wholeCoverage = cellCoverage(startMicros, endMicros, whole, none);
      const statements = [
        ...cellStatements({ ...scope, ranges: wholeCoverage.ranges }, whole, { kind: "none" }, { top: null, others: null }, values, plan.cells, runId, "", wholeCoverage).statements,
        ...cellStatements({ ...scope, ranges: coverage.ranges }, buckets, c.group, { top: null, others: null }, values, plan.cells, runId, c.grouping, coverage).statements,
      ];
      const cells = await timed(file, statements);
      rows.push(`| ${c.label} | ${scans[i]!.toFixed(1)} | ${cells.toFixed(1)} | ${(scans[i]! / cells).toFixed(1)}× |`);
    }
    console.log(`\n${records} records, window ${new Date(startMicros / 1000).toISOString()} + ${(endMicros - startMicros) / HOUR_MICROS} hours; refresh of ${hours} marked hours: ${refreshMs} ms (${(refreshMs / Math.max(1, hours)).toFixed(1)} ms an hour)\n`);
    console.log("| metrics/search, engine p50 of its statements | scan ms | cells ms | scan / cells |\n|---|---|---|---|");
    console.log(rows.join("\n"));
  } finally {
    discardCopy(dataset);
  }
}

await main();
