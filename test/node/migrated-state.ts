/// <reference types="node" />
/**
 * Local state directories whose databases (the catalog and every shard wrangler.toml declares)
 * are already migrated, for the Node tests that start the service or the admin command line.
 *
 * `wrangler d1 migrations apply` for three databases takes about a minute of CPU (two on a
 * loaded machine: a workerd per database and per call), and every server of the node project
 * used to pay it. Now the first file that needs a migrated database applies the migrations once
 * into a template (under the git-ignored .wrangler/, keyed by the migrations, wrangler.toml and
 * the wrangler version, so a changed migration builds a new one), in one workerd opened through
 * wrangler's getPlatformProxy (test/node/local-d1.ts: wrangler's own d1_migrations table and
 * statement splitting, a few seconds), and every test copies it into its own temporary
 * directory. The migrations as a new user applies them, with the real `wrangler d1 migrations
 * apply` from nothing, stay tested by test/node/start-demo.test.ts (`npm start` on an empty
 * directory) and by the workers project (test/migrations.test.ts).
 */
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { cp, mkdir, mkdtemp, readdir, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { REPO_ROOT } from "../../scripts/lib/wrangler";
import { applyMigrationsLocally, openLocalD1 } from "./local-d1";

const TEMPLATES = join(REPO_ROOT, ".wrangler", "test-migrated-state");
/** Written last into a finished template: a directory without it is a build that was cut short. */
const READY = "ready";
/** A build takes seconds (it took one to three minutes with wrangler d1 migrations apply); a lock this old belongs to a process that died without unlocking. */
const STALE_LOCK_MS = 10 * 60_000;

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => (entry.isDirectory() ? filesUnder(join(dir, entry.name)) : [join(dir, entry.name)]))
    .sort();
}

/** What the migrated databases depend on: every migration file, wrangler.toml and wrangler's version. */
function templateKey(): string {
  const hash = createHash("sha256");
  for (const file of [join(REPO_ROOT, "wrangler.toml"), join(REPO_ROOT, "node_modules", "wrangler", "package.json"), ...filesUnder(join(REPO_ROOT, "migrations"))]) {
    hash.update(`${relative(REPO_ROOT, file)}\0`).update(readFileSync(file)).update("\0");
  }
  return hash.digest("hex").slice(0, 16);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Whether a lock directory was left by a process that no longer runs (or is older than any build). */
function isStale(lock: string): boolean {
  try {
    const pid = Number(readFileSync(join(lock, "pid"), "utf8"));
    if (Number.isInteger(pid) && pid > 0 && !isAlive(pid)) return true;
  } catch {
    // no pid written yet: judged by its age alone
  }
  try {
    return Date.now() - statSync(lock).mtimeMs > STALE_LOCK_MS;
  } catch {
    return false;
  }
}

/**
 * Runs `build` while holding a lock directory (mkdir is atomic), so that node test files running
 * in parallel build the template once: the others wait for it.
 */
async function withLock(lock: string, build: () => Promise<void>): Promise<void> {
  for (;;) {
    try {
      await mkdir(lock);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      if (isStale(lock)) await rm(lock, { recursive: true, force: true });
      else await new Promise((r) => setTimeout(r, 500));
    }
  }
  try {
    await writeFile(join(lock, "pid"), String(process.pid));
    await build();
  } finally {
    await rm(lock, { recursive: true, force: true });
  }
}

/** The template directory for the current migrations, built on first use. */
async function template(): Promise<string> {
  const key = templateKey();
  const dir = join(TEMPLATES, key);
  if (existsSync(join(dir, READY))) return dir;
  await mkdir(TEMPLATES, { recursive: true });
  await withLock(join(TEMPLATES, `${key}.lock`), async () => {
    if (existsSync(join(dir, READY))) return;
    const building = join(TEMPLATES, `${key}.building`);
    await rm(building, { recursive: true, force: true });
    await rm(dir, { recursive: true, force: true });
    await mkdir(building, { recursive: true });
    const d1 = await openLocalD1(building);
    try {
      await applyMigrationsLocally(d1);
    } finally {
      await d1.dispose();
    }
    await writeFile(join(building, READY), new Date().toISOString());
    await rename(building, dir);
    // Templates of other migrations (an older checkout's) are of no further use.
    for (const name of await readdir(TEMPLATES)) {
      if (name !== key && !name.endsWith(".lock")) await rm(join(TEMPLATES, name), { recursive: true, force: true });
    }
  });
  return dir;
}

/** Copies the migrated databases into `dir` (a state directory wrangler's --persist-to names). */
export async function copyMigratedState(dir: string): Promise<void> {
  const source = await template();
  for (const name of await readdir(source)) {
    if (name !== READY) await cp(join(source, name), join(dir, name), { recursive: true });
  }
}

/** A new temporary state directory holding freshly migrated databases. */
export async function migratedStateDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  await copyMigratedState(dir);
  return dir;
}
