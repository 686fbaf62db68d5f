/**
 * The "before" of the storage benchmark: the service's source at an earlier commit, unpacked
 * (`git archive`) into bench/data/storage/baseline-<commit>/ with this checkout's node_modules
 * linked in, so that its own benches (dataset, search, ingestion) run its own schema and its own
 * write and search SQL. The tree is kept between runs, and so is the dataset it generated.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, renameSync, rmSync, symlinkSync } from "node:fs";
import path from "node:path";
import { DATA_DIR, REPO_ROOT } from "../lib/paths";

/** The migration that compacts the record tables (docs/schema.md, "Storage per record"). */
export const STORAGE_MIGRATION_GLOB = "migrations/0009_*.sql";

function git(args: string[]): string {
  const result = spawnSync("git", args, { cwd: REPO_ROOT, encoding: "utf8" });
  if (result.status !== 0) throw new Error(`git ${args.join(" ")} failed: ${result.stderr}`);
  return result.stdout.trim();
}

/**
 * The default baseline: the parent of the commit that added the storage migration (the schema
 * before it), or HEAD when this checkout has no such migration (then before = after).
 */
export function defaultBaselineRef(): string {
  const added = git(["log", "--diff-filter=A", "--format=%H", "--", `:(glob)${STORAGE_MIGRATION_GLOB}`]).split("\n").filter(Boolean);
  const first = added[added.length - 1];
  return first ? `${first}^` : "HEAD";
}

export interface BaselineTree {
  commit: string;
  dir: string;
}

/** The source at `ref`, unpacked once into bench/data/storage/baseline-<commit>. */
export function baselineTree(ref: string): BaselineTree {
  const commit = git(["rev-parse", "--verify", `${ref}^{commit}`]);
  const dir = path.join(DATA_DIR, "storage", `baseline-${commit.slice(0, 12)}`);
  if (existsSync(path.join(dir, "package.json"))) {
    linkBuiltUi(dir);
    return { commit, dir };
  }
  const building = `${dir}.building-${process.pid}`;
  rmSync(building, { recursive: true, force: true });
  mkdirSync(building, { recursive: true });
  const archive = spawnSync("bash", ["-c", `git archive --format=tar ${commit} | tar -x -C '${building}'`], { cwd: REPO_ROOT, encoding: "utf8" });
  if (archive.status !== 0) throw new Error(`git archive ${commit} failed: ${archive.stderr}`);
  symlinkSync(path.join(REPO_ROOT, "node_modules"), path.join(building, "node_modules"), "dir");
  renameSync(building, dir);
  linkBuiltUi(dir);
  return { commit, dir };
}

/**
 * The trace explorer's built files (ui/dist, not in git): wrangler refuses to bundle a worker
 * whose assets directory is missing. The UI is not what the bench measures, so the baseline
 * serves this checkout's build (made by `npm test` or `npm start`).
 */
function linkBuiltUi(dir: string): void {
  const built = path.join(REPO_ROOT, "ui", "dist");
  const target = path.join(dir, "ui", "dist");
  if (existsSync(built) && existsSync(path.join(dir, "ui")) && !existsSync(target)) symlinkSync(built, target, "dir");
}
