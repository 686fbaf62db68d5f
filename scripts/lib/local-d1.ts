/// <reference types="node" />
/**
 * The local D1 databases (`npm start`'s, or those of a --persist-to directory) opened in this
 * process: the same SQLite files `wrangler dev` and `wrangler d1 execute --local` use, opened the
 * way `wrangler d1 execute --local` opens them (wrangler's own miniflare, `d1Persist` at
 * <state>/v3/d1, each database keyed by its wrangler.toml database_id), in one workerd for every
 * database of wrangler.toml and every statement of the process.
 *
 * Why: a `wrangler d1 execute --local` is a new Node process that loads wrangler's 12.7 MB bundle
 * and starts a workerd, about 4 CPU s, and an admin command made one to five of them (a
 * `move-project --wait` one per second); this is one miniflare load and one workerd per process
 * (issue 36). The deployed databases (--remote) stay with wrangler.
 *
 * Miniflare, while open, stops the process on SIGINT and SIGTERM (its exit hook): close the
 * databases (closeLocalD1) before a long-running process takes those signals itself.
 */
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { REPO_ROOT, d1Databases } from "./wrangler-config";

/** The part of miniflare's class used here (wrangler's miniflare, not the one at node_modules/miniflare). */
interface MiniflareInstance {
  getD1Database(binding: string): Promise<D1Database>;
  dispose(): Promise<void>;
}
type MiniflareClass = new (options: Record<string, unknown>) => MiniflareInstance;

/** The state directory wrangler uses: --persist-to DIR (relative to the working directory), else .wrangler/state beside wrangler.toml. */
export function localStateDir(persistTo?: string): string {
  return persistTo ? resolve(process.cwd(), persistTo) : join(REPO_ROOT, ".wrangler", "state");
}

/** Where miniflare keeps the D1 databases of a state directory. */
export function localD1Dir(persistTo?: string): string {
  return join(localStateDir(persistTo), "v3", "d1");
}

/** Whether the state directory holds any local database yet (a new checkout's does not). */
export function localD1Exists(persistTo?: string): boolean {
  return existsSync(localD1Dir(persistTo));
}

let miniflareClass: Promise<MiniflareClass> | undefined;

/** Wrangler's own miniflare (the version `wrangler dev` runs), loaded once. */
function loadMiniflare(): Promise<MiniflareClass> {
  miniflareClass ??= (async () => {
    const fromWrangler = createRequire(join(REPO_ROOT, "node_modules", "wrangler", "package.json"));
    const module = (await import(pathToFileURL(fromWrangler.resolve("miniflare")).href)) as { Miniflare: MiniflareClass };
    return module.Miniflare;
  })();
  return miniflareClass;
}

const open = new Map<string, Promise<MiniflareInstance>>();

function instance(persistTo?: string): Promise<MiniflareInstance> {
  const dir = localD1Dir(persistTo);
  let opened = open.get(dir);
  if (!opened) {
    opened = loadMiniflare().then(
      (Miniflare) =>
        new Miniflare({
          modules: true,
          script: "",
          d1Persist: dir,
          d1Databases: Object.fromEntries(d1Databases().map((d) => [d.binding, d.databaseId])),
        }),
    );
    open.set(dir, opened);
  }
  return opened;
}

/** A local database by its wrangler.toml binding (DB, SHARD_0, ...). */
export async function localD1(binding: string, persistTo?: string): Promise<D1Database> {
  if (!d1Databases().some((d) => d.binding === binding)) {
    throw new Error(`no D1 binding ${JSON.stringify(binding)} in wrangler.toml (its databases: ${d1Databases().map((d) => d.binding).join(", ")})`);
  }
  return (await instance(persistTo)).getD1Database(binding);
}

/** Closes every local database this process opened (stops its workerd). */
export async function closeLocalD1(): Promise<void> {
  const all = [...open.values()];
  open.clear();
  await Promise.all(all.map(async (opened) => (await opened).dispose()));
}
