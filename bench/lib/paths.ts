/** Where the bench keeps its files: everything it generates lives under bench/data (gitignored). */
import { fileURLToPath } from "node:url";
import path from "node:path";

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const BENCH_DIR = path.join(REPO_ROOT, "bench");
export const DATA_DIR = path.join(BENCH_DIR, "data");
/** Generated datasets, one persist directory per (size, seed, migrations, generator) key. */
export const DATASET_CACHE_DIR = path.join(DATA_DIR, "datasets");
/** Throw-away copies for benches that write (deletion, ingestion); removed after each bench. */
export const SCRATCH_DIR = path.join(DATA_DIR, "scratch");
/**
 * Where the benches write their reports: bench/results, or BENCH_RESULTS_DIR (the storage bench
 * runs the search and ingestion benches as children and keeps their reports to itself).
 */
export const RESULTS_DIR = process.env.BENCH_RESULTS_DIR ?? path.join(BENCH_DIR, "results");
export const MIGRATIONS_DIR = path.join(REPO_ROOT, "migrations");
export const SERVICE_CONFIG = path.join(REPO_ROOT, "wrangler.toml");
export const FLOOR_WORKER_CONFIG = path.join(BENCH_DIR, "floor-worker", "wrangler.toml");
export const CAPTURE_WORKER_CONFIG = path.join(BENCH_DIR, "capture-worker", "wrangler.toml");
