/**
 * The partitions bench's two deployments of the search bench's records (issue 32, item 4), each a
 * `wrangler dev` persist directory whose SQLite files are written straight by the sqlite3 shell
 * with the service's own ingestion statements (bench/dataset/write-run.ts), not through the API:
 *
 * - **partitioned**: the project's roots (its sessions: every generated trace has one) in their
 *   time order, cut into PARTITIONS partitions of equal root counts, each root's whole tree in its
 *   root's partition whatever the children's times (a session's traces run for hours past the
 *   next root); partitions 1 and 2 on the catalog database `DB` (the project's own shard, as for a
 *   project created before sharding), 3 and 4 on `SHARD_0`; 4 is open.
 * - **single**: the same records in one open partition on `DB`.
 *
 * The rows are those the service keeps (src/partitions/*, migrations 0025 and shard 0016): the
 * catalog's `project_partitions` (seq, shard, open/closed, opened_at = the partition's first
 * root, closed_at = the next one's opening), each shard's `shard_partitions` row made before its
 * records so that the triggers count the roots, and on `SHARD_0` the project's registration
 * (`shard_projects`) and its log stream's copy (`runs`), as a roll and `ensureRun` write them.
 * Then each file is finished as the cron would leave it (text index caught up, the declared
 * metadata key's metric cells refreshed), by the service's own statements, as the search
 * dataset is (bench/dataset/steady-state.ts). Annotations are not made: annotation reads do not
 * span partitions yet (docs/partitions.md), so the annotation shapes are not compared.
 *
 * Cached under bench/data/datasets/partitions-<records>-seed<seed>-<key>, keyed like the search
 * dataset (records, seed, migrations, generator sources).
 */
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { catchUpTextIndex, refreshMetricCells } from "../dataset/steady-state";
import { mergeBatches } from "../../src/ingest/merge-batches";
import { type RecordBatch, sessionRows, traceRows } from "../../src/ingest/record-rows";
import type { IngestTrace } from "../../src/ingest/ingest-schemas";
import { type BenchTenant, benchTenantStatements } from "../dataset/bench-tenant";
import { datasetKey, type DatasetManifest } from "../dataset/dataset-cache";
import { planRun, type RunPlan, sessionInput, traceInput, WINDOW_END_MICROS, WINDOW_MICROS } from "../dataset/synthetic-traces";
import { RARE_WORD } from "../dataset/text-corpus";
import { checkpoint, ingestContext, recordCounts, requestSql, type RequestSql, type RunScope, TRACES_PER_REQUEST, writeRun } from "../dataset/write-run";
import { DATASET_CACHE_DIR, REPO_ROOT, SERVICE_CONFIG } from "../lib/paths";
import { SeededRandom } from "../lib/seeded-random";
import { ensureSqlite3, queryJson, type SqlStatement } from "../lib/sqlite-cli";
import { DELETION_KEY, DELETION_VALUE } from "../dataset/synthetic-traces";

export const PARTITIONS = 4;
/** Partitions 1..SPLIT on DB (the project's shard), the rest on SHARD_0. */
const SPLIT = 2;

export interface PartitionRow {
  id: string;
  seq: number;
  shard: "DB" | "SHARD_0";
  openedAt: number;
  closedAt: number | null;
  roots: number;
}

export interface Deployment {
  label: "partitioned" | "single";
  persistDir: string;
  /** SQLite file per binding that holds records. */
  files: Partial<Record<"DB" | "SHARD_0", string>>;
  partitions: PartitionRow[];
}

export interface PartitionDatasets {
  manifest: DatasetManifest;
  partitioned: Deployment;
  single: Deployment;
  /** A session (root) of partition 2 and one of partition 4 (the open one): the late-child targets. */
  roots: { twoBack: string; open: string };
}

const D1_DIR = (persistDir: string) => path.join(persistDir, "v3", "d1", "miniflare-D1DatabaseObject");
const sqliteFiles = (persistDir: string) => (existsSync(D1_DIR(persistDir)) ? readdirSync(D1_DIR(persistDir)).filter((n) => n.endsWith(".sqlite") && n !== "metadata.sqlite") : []);

/** Applies a binding's migrations (wrangler.toml's migrations_dir) and returns its new SQLite file. */
function migrate(persistDir: string, binding: "DB" | "SHARD_0" | "SHARD_1"): string {
  mkdirSync(persistDir, { recursive: true });
  const before = new Set(sqliteFiles(persistDir));
  const apply = () =>
    spawnSync(
      path.join(REPO_ROOT, "node_modules", ".bin", "wrangler"),
      ["d1", "migrations", "apply", binding, "--local", "--config", SERVICE_CONFIG, "--persist-to", persistDir],
      { cwd: REPO_ROOT, encoding: "utf8", env: { ...process.env, CI: "true", WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" } },
    );
  // Once more on failure: at high load a local apply has failed once with workerd's "false == true"
  // on a migration that applied cleanly the next time (each applied migration is recorded, so the
  // retry continues where the first stopped).
  let result = apply();
  if (result.status !== 0) result = apply();
  if (result.status !== 0) throw new Error(`wrangler d1 migrations apply ${binding} failed:\n${result.stdout}\n${result.stderr}`);
  const added = sqliteFiles(persistDir).filter((n) => !before.has(n));
  if (added.length !== 1) throw new Error(`expected one new SQLite file for ${binding}, found ${added.length}`);
  return path.join(D1_DIR(persistDir), added[0]!);
}

/** Each session's partition (1..PARTITIONS) by the sessions' creation order, equal root counts. */
export function sessionPartitions(plan: RunPlan, partitions: number): number[] {
  const order = [...plan.sessions].sort((a, b) => a.createdAt - b.createdAt || a.index - b.index);
  const of = new Array<number>(plan.sessions.length);
  order.forEach((session, rank) => {
    of[session.index] = Math.floor((rank * partitions) / order.length) + 1;
  });
  return of;
}

/** The requests that write partition `seq`'s roots and their whole trees, in creation order. */
function* partitionRequests(plan: RunPlan, seed: number, scope: RunScope, partitionOf: number[], seq: number): Generator<RequestSql> {
  const ctx = ingestContext(scope, null, seq);
  let sessions: RecordBatch[] = [];
  let traces: IngestTrace[] = [];
  const flush = function* () {
    if (traces.length > 0) yield requestSql(mergeBatches([...sessions, traceRows(traces, ctx)]), scope);
    sessions = [];
    traces = [];
  };
  for (const trace of plan.traces) {
    if (partitionOf[trace.session] !== seq) continue;
    const session = plan.sessions[trace.session]!;
    if (session.firstTrace === trace.index) sessions.push(sessionRows(sessionInput(seed, session), ctx));
    traces.push(traceInput(seed, trace, session));
    if (traces.length === TRACES_PER_REQUEST) yield* flush();
  }
  yield* flush();
}

function* concat<T>(...parts: Iterable<T>[]): Generator<T> {
  for (const part of parts) yield* part;
}

/** The cron's state on a loaded file, as the search dataset gets it: text index caught up, the declared key's cells refreshed. */
async function finishFile(file: string, tenant: BenchTenant, atMicros: number): Promise<void> {
  await catchUpTextIndex(file);
  await refreshMetricCells(file, tenant, atMicros);
  await checkpoint(file);
}

const partitionStatements = (tenant: BenchTenant, rows: PartitionRow[]): SqlStatement[] =>
  rows.map((p) => ({
    sql: "INSERT INTO project_partitions (id, project_id, seq, shard, state, opened_at, closed_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
    params: [p.id, tenant.projectId, p.seq, p.shard, p.closedAt === null ? "open" : "closed", p.openedAt, p.closedAt],
  }));

const shardPartitionStatements = (tenant: BenchTenant, rows: PartitionRow[]): SqlStatement[] =>
  rows.map((p) => ({ sql: "INSERT INTO shard_partitions (project_id, seq, partition_id, roots) VALUES (?, ?, ?, 0)", params: [tenant.projectId, p.seq, p.id] }));

/** Bytes of a SQLite file (and its WAL, if any). */
export function fileBytes(file: string): number {
  return [file, `${file}-wal`].filter(existsSync).reduce((sum, f) => sum + statSync(f).size, 0);
}

async function build(records: number, seed: number, key: string, target: string): Promise<PartitionDatasets> {
  ensureSqlite3();
  const building = `${target}.building-${process.pid}`;
  rmSync(building, { recursive: true, force: true });
  const started = Date.now();
  const plan = planRun(records, seed);
  const partitionOf = sessionPartitions(plan, PARTITIONS);
  const r = new SeededRandom(seed, 0x54454e54);
  const projectCreatedAt = WINDOW_END_MICROS - WINDOW_MICROS - 3_600_000_000;
  const { tenant, statements: tenantStatements } = await benchTenantStatements(r, projectCreatedAt);
  const scope = { organizationId: tenant.organizationId, projectId: tenant.projectId, runId: tenant.logStreamId };
  // The log stream's row and the project's registration, as ensureRun and a roll copy them to a shard.
  const logStreamRow = tenantStatements.find((s) => /insert into "runs"/i.test(s.sql))!;
  const registration = tenantStatements.find((s) => s.sql.startsWith("INSERT INTO shard_projects"))!;

  // A partition opens with its first root (the first partition with the project).
  const firstRoot = new Array<number>(PARTITIONS + 1).fill(Number.POSITIVE_INFINITY);
  const rootsIn = new Array<number>(PARTITIONS + 1).fill(0);
  for (const session of plan.sessions) {
    const seq = partitionOf[session.index]!;
    firstRoot[seq] = Math.min(firstRoot[seq]!, session.createdAt);
    rootsIn[seq]! += 1;
  }
  const ids = Array.from({ length: PARTITIONS + 1 }, () => r.uuid());
  const partitioned: PartitionRow[] = [];
  for (let seq = 1; seq <= PARTITIONS; seq += 1) {
    partitioned.push({
      id: ids[seq]!,
      seq,
      shard: seq <= SPLIT ? "DB" : "SHARD_0",
      openedAt: seq === 1 ? projectCreatedAt : firstRoot[seq]!,
      closedAt: seq === PARTITIONS ? null : firstRoot[seq + 1]!,
      roots: rootsIn[seq]!,
    });
  }
  const single: PartitionRow[] = [{ id: ids[0]!, seq: 1, shard: "DB", openedAt: projectCreatedAt, closedAt: null, roots: plan.sessions.length }];

  const progress = (label: string) => {
    let reported = 0;
    return (done: number) => {
      if (done - reported >= 100_000) {
        reported = done;
        process.stdout.write(`  ${label}: ${done.toLocaleString("en-US")} records (${((Date.now() - started) / 1000).toFixed(0)} s)\n`);
      }
    };
  };

  // The empty databases, migrated once (a local apply takes up to a minute a binding at load), then copied.
  const template = path.join(building, "migrated");
  const names = { DB: path.basename(migrate(template, "DB")), SHARD_0: path.basename(migrate(template, "SHARD_0")) };
  migrate(template, "SHARD_1");
  const deployments: Deployment[] = [];
  for (const [label, rows] of [["single", single], ["partitioned", partitioned]] as const) {
    const persistDir = path.join(building, label);
    cpSync(template, persistDir, { recursive: true });
    const db = path.join(D1_DIR(persistDir), names.DB);
    const shard0 = path.join(D1_DIR(persistDir), names.SHARD_0);
    const onDb = rows.filter((p) => p.shard === "DB");
    const onShard0 = rows.filter((p) => p.shard === "SHARD_0");
    await writeRun(
      db,
      concat(...onDb.map((p) => partitionRequests(plan, seed, scope, label === "single" ? new Array<number>(plan.sessions.length).fill(1) : partitionOf, p.seq))),
      [...tenantStatements, ...partitionStatements(tenant, rows), ...shardPartitionStatements(tenant, onDb)],
      progress(`${label} DB`),
    );
    await checkpoint(db);
    const files: Deployment["files"] = { DB: db };
    if (onShard0.length > 0) {
      await writeRun(
        shard0,
        concat(...onShard0.map((p) => partitionRequests(plan, seed, scope, partitionOf, p.seq))),
        [logStreamRow, registration, ...shardPartitionStatements(tenant, onShard0)],
        progress(`${label} SHARD_0`),
      );
      await checkpoint(shard0);
      files.SHARD_0 = shard0;
    }
    // The counts the triggers kept must be the roots written (what the service's own writes leave).
    for (const [binding, file] of Object.entries(files)) {
      const kept = await queryJson<{ seq: number; roots: number }>(file!, { sql: "SELECT seq, roots FROM shard_partitions WHERE project_id = ?1 ORDER BY seq", params: [tenant.projectId] });
      for (const row of kept) {
        const expected = rows.find((p) => p.seq === row.seq)!.roots;
        if (row.roots !== expected) throw new Error(`${label} ${binding}: partition ${row.seq} counts ${row.roots} roots, ${expected} written`);
      }
    }
    for (const file of Object.values(files)) await finishFile(file!, tenant, WINDOW_END_MICROS);
    deployments.push({ label, persistDir: path.join(target, label), files: {}, partitions: rows });
    console.log(`  ${label} loaded and finished (${((Date.now() - started) / 1000).toFixed(0)} s)`);
  }

  // Every record once, in both deployments.
  const totals = await Promise.all(
    deployments.map(async (d) => {
      const sum: Record<string, number> = {};
      for (const name of sqliteFiles(path.join(building, d.label))) {
        const counts = await recordCounts(path.join(D1_DIR(path.join(building, d.label)), name), tenant.logStreamId);
        for (const [type, n] of Object.entries(counts)) sum[type] = (sum[type] ?? 0) + n;
      }
      return sum;
    }),
  );
  const expected = { session: plan.counts.sessions, trace: plan.counts.traces, span: plan.counts.spans };
  for (const [i, sum] of totals.entries()) {
    for (const [type, n] of Object.entries(expected)) if (sum[type] !== n) throw new Error(`${deployments[i]!.label}: ${sum[type]} ${type} rows, expected ${n}`);
  }
  const sessionOf = (seq: number) => plan.sessions.filter((s) => partitionOf[s.index] === seq).sort((a, b) => a.createdAt - b.createdAt)[0]!.id;
  const manifest: DatasetManifest = {
    key,
    records,
    seed,
    tenant,
    counts: totals[0]!,
    window: { startMicros: WINDOW_END_MICROS - WINDOW_MICROS, endMicros: WINDOW_END_MICROS },
    rareWord: RARE_WORD,
    deletion: { key: DELETION_KEY, value: DELETION_VALUE },
    generatedAt: new Date().toISOString(),
    generationSeconds: (Date.now() - started) / 1000,
  };
  const meta = { manifest, partitions: { partitioned, single }, roots: { twoBack: sessionOf(PARTITIONS - 2), open: sessionOf(PARTITIONS) } };
  rmSync(template, { recursive: true, force: true });
  writeFileSync(path.join(building, "manifest.json"), `${JSON.stringify(meta, null, 2)}\n`);
  renameSync(building, target);
  return load(target);
}

interface Meta {
  manifest: DatasetManifest;
  partitions: { partitioned: PartitionRow[]; single: PartitionRow[] };
  roots: PartitionDatasets["roots"];
}

/** The files of a deployment by binding: the DB file is the one with the catalog's tables. */
function deploymentOf(dir: string, label: Deployment["label"], partitions: PartitionRow[]): Deployment {
  const persistDir = path.join(dir, label);
  const files: Deployment["files"] = {};
  for (const name of sqliteFiles(persistDir)) {
    const file = path.join(D1_DIR(persistDir), name);
    const check = spawnSync("sqlite3", [file, "SELECT (SELECT count(*) FROM sqlite_master WHERE name = 'project_partitions'), (SELECT count(*) FROM records)"], { encoding: "utf8" });
    const [catalog, records] = check.stdout.trim().split("|").map(Number);
    if (catalog) files.DB = file;
    else if (records) files.SHARD_0 = file;
  }
  return { label, persistDir, files, partitions };
}

function load(dir: string): PartitionDatasets {
  const meta = JSON.parse(readFileSync(path.join(dir, "manifest.json"), "utf8")) as Meta;
  return { manifest: meta.manifest, partitioned: deploymentOf(dir, "partitioned", meta.partitions.partitioned), single: deploymentOf(dir, "single", meta.partitions.single), roots: meta.roots };
}

/** The two deployments of `records` records: from the cache, or built now. */
export async function ensurePartitionDatasets(records: number, seed: number): Promise<PartitionDatasets> {
  const key = datasetKey(records, seed);
  const target = path.join(DATASET_CACHE_DIR, `partitions-${records}-seed${seed}-${key}`);
  if (existsSync(path.join(target, "manifest.json"))) return load(target);
  mkdirSync(DATASET_CACHE_DIR, { recursive: true });
  console.log(`building the partitions bench's ${records.toLocaleString("en-US")}-record deployments (seed ${seed}, key ${key})`);
  return build(records, seed, key, target);
}
