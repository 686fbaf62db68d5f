/**
 * `npm run bench -- verify`: proves that the generator writes what ingestion writes. A small run
 * (2,000 records by default) is generated into one database by the bench's loader, and the same
 * sessions and traces are sent to `wrangler dev` of the service through POST /sessions and
 * POST /traces into a second database; then every row of records, record_metadata, record_tags,
 * record_metrics and run_columns must be identical in both (compared with EXCEPT both ways,
 * on every column). Also checks that the same seed generates the same records twice.
 */
import { createHash } from "node:crypto";
import { discardCopy, emptyDatabase, type Dataset } from "./dataset-cache";
import { expectStatus, timedJson } from "../lib/http-timing";
import { SERVICE_CONFIG } from "../lib/paths";
import { queryJson, runSqlite, sqlLiteral } from "../lib/sqlite-cli";
import { withDevServer } from "../lib/wrangler-dev";
import { BENCH_VARS } from "../search/search-bench";
import { planRun, sessionInput, traceInput } from "./synthetic-traces";
import { requestsFromWorker } from "./fast-generator";
import { TRACES_PER_REQUEST, writeRun } from "./write-run";

/** Every table ingestion writes, with the columns that identify a row. */
const TABLES = ["records", "record_metadata", "record_tags", "record_metrics", "run_columns"] as const;

/** Written by the same (compiled) generator that builds the cached datasets. */
async function generated(records: number, seed: number): Promise<Dataset> {
  const db = await emptyDatabase("verify-generated", seed);
  const { tenant } = db.manifest;
  const scope = { organizationId: tenant.organizationId, projectId: tenant.projectId, runId: tenant.logStreamId };
  await writeRun(db.sqliteFile, requestsFromWorker({ records, seed, scope }), []);
  return db;
}

async function ingested(records: number, seed: number): Promise<Dataset> {
  const db = await emptyDatabase("verify-ingested", seed);
  const { tenant } = db.manifest;
  const headers = { "Service-API-Key": tenant.apiKey };
  const plan = planRun(records, seed);
  await withDevServer({ name: "verify", config: SERVICE_CONFIG, persistTo: db.persistDir, vars: BENCH_VARS, readyPath: "/healthcheck" }, async (server) => {
    const base = `${server.baseUrl}/v2/projects/${tenant.projectId}`;
    for (let start = 0; start < plan.traces.length; start += TRACES_PER_REQUEST) {
      const planned = plan.traces.slice(start, start + TRACES_PER_REQUEST);
      for (const trace of planned) {
        const session = plan.sessions[trace.session]!;
        if (session.firstTrace !== trace.index) continue;
        expectStatus(await timedJson(`${base}/sessions`, { body: { log_stream_id: tenant.logStreamId, ...sessionInput(seed, session) }, headers }), 200, "POST sessions");
      }
      const traces = planned.map((trace) => traceInput(seed, trace, plan.sessions[trace.session]!));
      expectStatus(await timedJson(`${base}/traces`, { body: { log_stream_id: tenant.logStreamId, traces }, headers }), 200, "POST traces");
    }
  });
  return db;
}

async function differences(a: Dataset, b: Dataset): Promise<string[]> {
  const problems: string[] = [];
  await runSqlite(a.sqliteFile, "PRAGMA wal_checkpoint(TRUNCATE);\n");
  await runSqlite(b.sqliteFile, "PRAGMA wal_checkpoint(TRUNCATE);\n");
  for (const table of TABLES) {
    for (const [left, right, label] of [["main", "other", "only in the generated database"], ["other", "main", "only in the ingested database"]] as const) {
      const { stdout } = await runSqlite(
        a.sqliteFile,
        `ATTACH DATABASE ${sqlLiteral(b.sqliteFile)} AS other;\nSELECT count(*) FROM (SELECT * FROM ${left}.${table} EXCEPT SELECT * FROM ${right}.${table});\n`,
      );
      if (!/^\d+$/.test(stdout.trim())) throw new Error(`unexpected answer comparing ${table}: ${stdout}`);
      const n = Number(stdout.trim());
      if (n !== 0) problems.push(`${table}: ${n} rows ${label}`);
    }
  }
  return problems;
}

async function contentDigest(db: Dataset): Promise<string> {
  const { stdout } = await runSqlite(db.sqliteFile, TABLES.map((t) => `SELECT * FROM ${t} ORDER BY 1, 2, 3;`).join("\n") + "\n");
  return createHash("sha256").update(stdout).digest("hex");
}

export async function verifyDataset(records: number, seed: number): Promise<void> {
  console.log(`verify: ${records} records, seed ${seed}: generator vs. POST /sessions + POST /traces through wrangler dev`);
  const fromGenerator = await generated(records, seed);
  const again = await generated(records, seed);
  const fromService = await ingested(records, seed);
  try {
    const [counts] = await queryJson<Record<string, number>>(fromGenerator.sqliteFile, {
      sql: `SELECT (SELECT count(*) FROM records) AS records, (SELECT count(*) FROM record_metadata) AS metadata, (SELECT count(*) FROM record_tags) AS tags, (SELECT count(*) FROM record_metrics) AS metrics, (SELECT count(*) FROM run_columns) AS run_columns`,
      params: [],
    });
    console.log(`  generated: ${JSON.stringify(counts)}`);
    const problems = await differences(fromGenerator, fromService);
    if ((await contentDigest(fromGenerator)) !== (await contentDigest(again))) problems.push("the same seed generated different rows");
    if (problems.length > 0) throw new Error(`the generator does not write what ingestion writes:\n  ${problems.join("\n  ")}`);
    console.log("  identical: every row of records, record_metadata, record_tags, record_metrics and run_columns; and reproducible");
  } finally {
    for (const db of [fromGenerator, again, fromService]) discardCopy(db);
  }
}
