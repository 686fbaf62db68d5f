/**
 * Generated datasets, cached: a dataset is a wrangler persist directory (the local D1 that
 * `wrangler dev --persist-to <dir>` serves), its records loaded then finished in the cron's
 * steady state (steady-state.ts: text index, metric cells, annotations), plus a manifest, kept under bench/data/datasets and
 * keyed by (records, seed, migrations, generator): a rerun with the same key reuses it, a change
 * to the migrations or to the code of the generator or of the ingestion row builders (comments
 * aside) makes a new one (and the stale datasets of the same size and seed are removed, they
 * take gigabytes).
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import ts from "typescript";
import { DATASET_CACHE_DIR, MIGRATIONS_DIR, REPO_ROOT, SCRATCH_DIR, SERVICE_CONFIG } from "../lib/paths";
import { SeededRandom } from "../lib/seeded-random";
import { ensureSqlite3 } from "../lib/sqlite-cli";
import { type BenchTenant, benchTenantStatements } from "./bench-tenant";
import { requestsFromWorker } from "./fast-generator";
import { DELETION_KEY, DELETION_VALUE, planRun, WINDOW_END_MICROS, WINDOW_MICROS } from "./synthetic-traces";
import { finishDataset, type SteadyState } from "./steady-state";
import { RARE_WORD } from "./text-corpus";
import { checkpoint, recordCounts, writeRun } from "./write-run";

export interface DatasetManifest {
  key: string;
  records: number;
  seed: number;
  tenant: BenchTenant;
  counts: Record<string, number>;
  window: { startMicros: number; endMicros: number };
  rareWord: string;
  deletion: { key: string; value: string };
  generatedAt: string;
  generationSeconds: number;
  /** What the finishing step left (absent on an empty database): the template ids the shapes name. */
  steadyState?: SteadyState;
}

export interface Dataset {
  manifest: DatasetManifest;
  /** The persist directory to give `wrangler dev --persist-to`. */
  persistDir: string;
  /** The D1 database's SQLite file inside it. */
  sqliteFile: string;
}

/** The files whose content decides what a dataset contains. */
const GENERATOR_SOURCES = [
  "bench/dataset/synthetic-traces.ts",
  "bench/dataset/text-corpus.ts",
  "bench/dataset/write-run.ts",
  "bench/dataset/bench-tenant.ts",
  "bench/lib/seeded-random.ts",
  "src/ingest/record-rows.ts",
  "src/ingest/write-records.ts",
  "src/ingest/timestamps.ts",
  "src/columns/standard-columns.ts",
  // The finishing step (the cron's catch-up and refresh, the rating and template writes).
  "bench/dataset/steady-state.ts",
  "src/text-index/backfill.ts",
  "src/analytics/metric-cells.ts",
  "src/annotations/rating-store.ts",
  "src/annotations/rating-values.ts",
  "src/annotations/template-store.ts",
];

function contentHash(files: string[], text: (file: string) => string = (file) => readFileSync(file, "utf8")): string {
  const hash = createHash("sha256");
  for (const file of files) {
    hash.update(path.relative(REPO_ROOT, file));
    hash.update("\u0000");
    hash.update(text(file));
    hash.update("\u0000");
  }
  return hash.digest("hex");
}

/** A source's code without its comments and layout: editing a comment keeps the cache. */
function codeOf(file: string): string {
  return ts.transpileModule(readFileSync(file, "utf8"), { compilerOptions: { removeComments: true, target: ts.ScriptTarget.ES2022 } }).outputText;
}

export function migrationsHash(): string {
  const files = readdirSync(MIGRATIONS_DIR)
    .filter((name) => name.endsWith(".sql"))
    .sort()
    .map((name) => path.join(MIGRATIONS_DIR, name));
  return contentHash(files);
}

export function datasetKey(records: number, seed: number): string {
  const hash = createHash("sha256");
  hash.update(JSON.stringify({ records, seed, migrations: migrationsHash(), generator: contentHash(GENERATOR_SOURCES.map((f) => path.join(REPO_ROOT, f)), codeOf) }));
  return hash.digest("hex").slice(0, 16);
}

/** The D1 SQLite file of a persist directory (the one database both worker configs bind). */
export function sqliteFileOf(persistDir: string): string {
  const dir = path.join(persistDir, "v3", "d1", "miniflare-D1DatabaseObject");
  const files = existsSync(dir) ? readdirSync(dir).filter((name) => name.endsWith(".sqlite") && name !== "metadata.sqlite") : [];
  if (files.length !== 1) throw new Error(`expected one D1 database in ${dir}, found ${files.length}`);
  return path.join(dir, files[0]!);
}

/** Applies the migrations to a new persist directory, as `wrangler d1 migrations apply` does. */
export function applyMigrations(persistDir: string): void {
  mkdirSync(persistDir, { recursive: true });
  const result = spawnSync(
    path.join(REPO_ROOT, "node_modules", ".bin", "wrangler"),
    ["d1", "migrations", "apply", "DB", "--local", "--config", SERVICE_CONFIG, "--persist-to", persistDir],
    { cwd: REPO_ROOT, encoding: "utf8", env: { ...process.env, CI: "true", WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" } },
  );
  if (result.status !== 0) throw new Error(`wrangler d1 migrations apply failed:\n${result.stdout}\n${result.stderr}`);
}

function dirName(records: number, seed: number, key: string): string {
  return `${records}-seed${seed}-${key}`;
}

function load(dir: string): Dataset {
  const manifest = JSON.parse(readFileSync(path.join(dir, "manifest.json"), "utf8")) as DatasetManifest;
  return { manifest, persistDir: dir, sqliteFile: sqliteFileOf(dir) };
}

async function generate(records: number, seed: number, key: string, target: string): Promise<Dataset> {
  ensureSqlite3();
  const building = `${target}.building-${process.pid}`;
  rmSync(building, { recursive: true, force: true });
  const started = Date.now();
  applyMigrations(building);
  const file = sqliteFileOf(building);
  const r = new SeededRandom(seed, 0x54454e54);
  const { tenant, statements } = await benchTenantStatements(r, WINDOW_END_MICROS - WINDOW_MICROS - 3_600_000_000);
  const scope = { organizationId: tenant.organizationId, projectId: tenant.projectId, runId: tenant.logStreamId };
  const plan = planRun(records, seed);
  let reported = 0;
  const written = await writeRun(file, requestsFromWorker({ records, seed, scope }), statements, (done) => {
    if (done - reported >= 100_000) {
      reported = done;
      process.stdout.write(`  ${done.toLocaleString("en-US")} / ${records.toLocaleString("en-US")} records (${((Date.now() - started) / 1000).toFixed(0)} s)\n`);
    }
  });
  await checkpoint(file);
  const counts = await recordCounts(file, tenant.logStreamId);
  const expected = { session: plan.counts.sessions, trace: plan.counts.traces, span: plan.counts.spans };
  for (const [type, n] of Object.entries(expected)) {
    if (counts[type] !== n) throw new Error(`dataset check failed: ${type} ${counts[type]} rows, expected ${n}`);
  }
  const steadyState = await finishDataset(file, new SeededRandom(seed, 0x53544154), tenant, written.records, WINDOW_END_MICROS);
  await checkpoint(file);
  const manifest: DatasetManifest = {
    key,
    records: written.records,
    seed,
    tenant,
    counts,
    window: { startMicros: WINDOW_END_MICROS - WINDOW_MICROS, endMicros: WINDOW_END_MICROS },
    rareWord: RARE_WORD,
    deletion: { key: DELETION_KEY, value: DELETION_VALUE },
    generatedAt: new Date().toISOString(),
    generationSeconds: (Date.now() - started) / 1000,
    steadyState,
  };
  writeFileSync(path.join(building, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  try {
    renameSync(building, target);
  } catch (error) {
    // Another bench process finished the same dataset first: keep its copy.
    if (!existsSync(path.join(target, "manifest.json"))) throw error;
    rmSync(building, { recursive: true, force: true });
  }
  return load(target);
}

/** The dataset of `records` records and `seed`: from the cache, or generated now. */
export async function ensureDataset(records: number, seed: number): Promise<Dataset> {
  const key = datasetKey(records, seed);
  const target = path.join(DATASET_CACHE_DIR, dirName(records, seed, key));
  if (existsSync(path.join(target, "manifest.json"))) return load(target);
  mkdirSync(DATASET_CACHE_DIR, { recursive: true });
  console.log(`generating the ${records.toLocaleString("en-US")}-record dataset (seed ${seed}, key ${key})`);
  const dataset = await generate(records, seed, key, target);
  console.log(`  done in ${dataset.manifest.generationSeconds.toFixed(1)} s: ${JSON.stringify(dataset.manifest.counts)}`);
  const prefix = `${records}-seed${seed}-`;
  for (const name of readdirSync(DATASET_CACHE_DIR)) {
    if (name.startsWith(prefix) && name !== path.basename(target) && !name.includes(".building-")) {
      rmSync(path.join(DATASET_CACHE_DIR, name), { recursive: true, force: true });
      console.log(`  removed the stale dataset ${name}`);
    }
  }
  return dataset;
}

/** A private copy of a dataset for a bench that writes to it; remove it with `discardCopy`. */
export function copyDataset(dataset: Dataset, label: string): Dataset {
  mkdirSync(SCRATCH_DIR, { recursive: true });
  const dir = path.join(SCRATCH_DIR, `${label}-${process.pid}-${Date.now()}`);
  cpSync(dataset.persistDir, dir, { recursive: true });
  return load(dir);
}

export function discardCopy(dataset: Dataset): void {
  if (!dataset.persistDir.startsWith(SCRATCH_DIR)) throw new Error(`refusing to remove ${dataset.persistDir}: not a scratch copy`);
  rmSync(dataset.persistDir, { recursive: true, force: true });
}

/**
 * A new scratch database with the migrations applied and the bench tenant in it, no records:
 * for the ingestion benchmark. Remove it with `discardCopy`.
 */
export async function emptyDatabase(label: string, seed: number): Promise<Dataset> {
  ensureSqlite3();
  mkdirSync(SCRATCH_DIR, { recursive: true });
  const dir = path.join(SCRATCH_DIR, `${label}-${process.pid}-${Date.now()}`);
  applyMigrations(dir);
  const file = sqliteFileOf(dir);
  const { tenant, statements } = await benchTenantStatements(new SeededRandom(seed, 0x54454e54), WINDOW_END_MICROS - WINDOW_MICROS - 3_600_000_000);
  await writeRun(file, [], statements);
  await checkpoint(file);
  const manifest: DatasetManifest = {
    key: "empty",
    records: 0,
    seed,
    tenant,
    counts: {},
    window: { startMicros: WINDOW_END_MICROS - WINDOW_MICROS, endMicros: WINDOW_END_MICROS },
    rareWord: RARE_WORD,
    deletion: { key: DELETION_KEY, value: DELETION_VALUE },
    generatedAt: new Date().toISOString(),
    generationSeconds: 0,
  };
  writeFileSync(path.join(dir, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  return load(dir);
}
