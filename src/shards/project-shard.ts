/**
 * Running a request's work on the shard of its project: the route (cached), a D1 session on the
 * shard (read replicas, bookmarks), the full-shard check before writes, the size report after
 * them, and one re-route when the project turns out to have moved.
 *
 * Sessions (D1's Sessions API, docs/sharding.md "Consistency"): reads run on
 * `withSession("first-unconstrained")`, which may answer from a nearby read replica; writes on
 * `withSession("first-primary")`. Every answer carries the session's bookmark in `x-d1-bookmark`
 * (`<shard>:<bookmark>`); a request that sends one back starts its session from it, and so reads
 * at least everything that bookmark had seen (read-your-writes). A bookmark of another shard
 * (the project moved meanwhile) is ignored, and the session starts on the primary instead.
 */
import type { Context } from "hono";
import type { Env } from "../env";
import type { AppEnv, Principal } from "../http/app-env";
import { ApiError } from "../http/errors";
import { type ProjectRoute, forgetProjectRoute, projectRoute } from "./project-routing";
import { shardConfig, shardDatabase } from "./shard-config";
import { knownShardSize, noteShardSize } from "./shard-sizes";

export const BOOKMARK_HEADER = "x-d1-bookmark";

export type ShardAccessMode = "read" | "write";

/** Thrown by work that finds its project is not (or no longer) held by the shard it ran on. */
export class ProjectNotOnShardError extends Error {
  constructor(readonly projectId: string) {
    super(`project ${projectId} is not on this shard`);
    this.name = "ProjectNotOnShardError";
  }
}

/** The database refused a write for a project it does not hold (trigger records_project_on_shard_*). */
export function isProjectNotOnShard(error: unknown): boolean {
  if (error instanceof ProjectNotOnShardError) return true;
  const text = `${String(error)} ${String((error as { cause?: unknown })?.cause ?? "")}`;
  return text.includes("project_not_on_shard");
}

export interface ProjectShard {
  route: ProjectRoute;
  /** A D1 session on the project's shard. */
  db: D1Database;
}

/** The bookmark a request sent for this shard, if any. */
function bookmarkFor(header: string | undefined, shard: string): string | undefined {
  if (!header) return undefined;
  const separator = header.indexOf(":");
  if (separator <= 0 || header.slice(0, separator) !== shard) return undefined;
  const bookmark = header.slice(separator + 1).trim();
  return bookmark.length > 0 && bookmark.length <= 512 ? bookmark : undefined;
}

/** A session whose batches report the shard's size (noteShardSize) as they complete. */
function reportingSizes(session: D1DatabaseSession, report: (results: D1Result[]) => void): D1Database {
  return new Proxy(session as unknown as D1Database, {
    get(target, property, receiver) {
      if (property === "batch") {
        return async (statements: D1PreparedStatement[]) => {
          const results = await (target as D1Database).batch(statements);
          report(results);
          return results;
        };
      }
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

interface RunContext {
  env: Env;
  principal: Principal;
  bookmarkHeader: string | undefined;
  setBookmark: (value: string) => void;
  waitUntil: (work: Promise<unknown>) => void;
  /** Notes that the request wrote to a database: its upkeep is requested after the answer (src/app.ts, src/upkeep). */
  noteWrite: (shard: string) => void;
}

function runContext(c: Context<AppEnv>): RunContext {
  let waitUntil: (work: Promise<unknown>) => void = () => undefined;
  try {
    const ctx = c.executionCtx;
    waitUntil = (work) => ctx.waitUntil(work);
  } catch {
    // No execution context (called outside a request): size reports are simply not persisted.
  }
  return {
    env: c.env,
    principal: c.get("principal"),
    bookmarkHeader: c.req.header(BOOKMARK_HEADER),
    setBookmark: (value) => c.header(BOOKMARK_HEADER, value),
    waitUntil,
    noteWrite: (shard) => {
      const written = c.get("writtenShards") ?? new Set<string>();
      written.add(shard);
      c.set("writtenShards", written);
    },
  };
}

async function attempt<T>(ctx: RunContext, route: ProjectRoute, mode: ShardAccessMode, work: (shard: ProjectShard) => Promise<T>): Promise<T> {
  if (mode === "write") {
    const size = knownShardSize(route.shard);
    const { hardLimitBytes } = shardConfig(ctx.env);
    if (size !== undefined && size >= hardLimitBytes) {
      throw new ApiError(
        507,
        `The database that holds this project is full (${(size / 1e9).toFixed(2)} GB of its ${(hardLimitBytes / 1e9).toFixed(2)} GB limit): nothing was written. An operator can move the project to another shard (npm run admin -- move-project).`,
      );
    }
  }
  const bookmark = bookmarkFor(ctx.bookmarkHeader, route.shard);
  const session = shardDatabase(ctx.env, route.shard).withSession(bookmark ?? (mode === "write" ? "first-primary" : "first-unconstrained"));
  const db = reportingSizes(session, (results) => {
    const persist = noteShardSize(ctx.env, route.shard, results);
    if (persist) ctx.waitUntil(persist);
  });
  const result = await work({ route, db });
  if (mode === "write") ctx.noteWrite(route.shard);
  const after = session.getBookmark();
  if (after) ctx.setBookmark(`${route.shard}:${after}`);
  return result;
}

export interface ShardChoice {
  /**
   * The shard to run on instead of the project's: a partition's (src/partitions). Asked again
   * with `fresh` true, after the route was forgotten, when the shard refused the project.
   */
  shardOf?: (fresh: boolean) => Promise<string>;
}

/**
 * Runs `work` on the project's shard (or the one `options.shardOf` names). If the shard says it does not hold the project (a stale
 * route after a move), the route is read afresh from the catalog and `work` runs once more on
 * the new shard; if the catalog still names the same shard, the project is between two states of
 * a move: a 503 with Retry-After.
 */
export async function onProjectShard<T>(
  c: Context<AppEnv>,
  projectId: string,
  mode: ShardAccessMode,
  work: (shard: ProjectShard) => Promise<T>,
  options: ShardChoice = {},
): Promise<T> {
  const ctx = runContext(c);
  const on = async (route: ProjectRoute, fresh: boolean): Promise<ProjectRoute> => (options.shardOf ? { ...route, shard: await options.shardOf(fresh) } : route);
  const route = await on(await projectRoute(ctx.env, ctx.principal, projectId), false);
  try {
    return await attempt(ctx, route, mode, work);
  } catch (error) {
    if (!isProjectNotOnShard(error)) throw error;
    forgetProjectRoute(projectId);
    const fresh = await on(await projectRoute(ctx.env, ctx.principal, projectId), true);
    if (fresh.shard === route.shard) {
      throw new ApiError(503, "This project is being moved to another database; retry in a moment.", { "Retry-After": "1" });
    }
    try {
      return await attempt(ctx, fresh, mode, work);
    } catch (again) {
      if (!isProjectNotOnShard(again)) throw again;
      forgetProjectRoute(projectId);
      throw new ApiError(503, "This project is being moved to another database; retry in a moment.", { "Retry-After": "1" });
    }
  }
}
