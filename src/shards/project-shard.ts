/**
 * Running a request's work on the shard of its project: the route (cached), a D1 session on the
 * shard (read replicas, bookmarks), the full-shard check before writes, the size report after
 * them, and one re-route when the project turns out to have moved.
 *
 * Sessions (D1's Sessions API, docs/sharding.md "Consistency"): reads run on
 * `withSession("first-unconstrained")`, which may answer from a nearby read replica; writes on
 * `withSession("first-primary")`. Every answer carries the sessions' bookmarks in `x-d1-bookmark`
 * (`<shard>:<bookmark>`, one per shard, comma-separated: a project whose partitions span shards
 * is read on several in one request); a request that sends them back starts each shard's session
 * from its own, and so reads at least everything those bookmarks had seen (read-your-writes). The
 * answer carries the sent bookmarks of shards it did not touch too, so a client that always sends
 * back its last answer's header never loses a shard's. A bookmark of a shard the request does not
 * read (the project moved meanwhile) is not used; that shard's session starts as if none was sent.
 */
import type { Context } from "hono";
import type { Env } from "../env";
import type { AppEnv, Principal } from "../http/app-env";
import { ApiError } from "../http/errors";
import { type ProjectRoute, forgetProjectRoute, projectRoute } from "./project-routing";
import { allRecordDatabases, shardConfig, shardDatabase } from "./shard-config";
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

/** Shards whose bookmarks one header may carry; the entries past it are not read. */
const MAX_BOOKMARKS = 32;

/**
 * The bookmarks of an `x-d1-bookmark` header by shard: its `<shard>:<bookmark>` entries, comma
 * separated (D1's bookmarks are hex and dashes), each bookmark at most 512 characters; anything
 * else in it is not a bookmark and is left out.
 */
export function parseBookmarks(header: string | undefined): Map<string, string> {
  const bookmarks = new Map<string, string>();
  if (!header) return bookmarks;
  for (const entry of header.split(",", MAX_BOOKMARKS)) {
    const separator = entry.indexOf(":");
    if (separator <= 0) continue;
    const shard = entry.slice(0, separator).trim();
    const bookmark = entry.slice(separator + 1).trim();
    if (shard.length > 0 && shard.length <= 64 && bookmark.length > 0 && bookmark.length <= 512) bookmarks.set(shard, bookmark);
  }
  return bookmarks;
}

/** The header of a set of bookmarks, in shard order. */
function bookmarkHeader(bookmarks: ReadonlyMap<string, string>): string {
  return [...bookmarks].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([shard, bookmark]) => `${shard}:${bookmark}`).join(",");
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
  /** The bookmark the request sent for a shard, if any. */
  bookmarkFor: (shard: string) => string | undefined;
  /** Notes a shard's bookmark after the request's work there: the answer's header carries it. */
  setBookmark: (shard: string, bookmark: string) => void;
  waitUntil: (work: Promise<unknown>) => void;
  /** Notes that the request wrote to a database: its upkeep is requested after the answer (src/app.ts, src/upkeep). */
  noteWrite: (shard: string) => void;
}

/** The bookmarks the request sent, parsed once. */
function requestBookmarks(c: Context<AppEnv>): Map<string, string> {
  let sent = c.get("sentBookmarks");
  if (!sent) {
    sent = parseBookmarks(c.req.header(BOOKMARK_HEADER));
    c.set("sentBookmarks", sent);
  }
  return sent;
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
    bookmarkFor: (shard) => requestBookmarks(c).get(shard),
    setBookmark: (shard, bookmark) => {
      // The sent bookmarks of every database this worker has, updated by this request's sessions.
      const answer = c.get("answerBookmarks") ?? new Map([...requestBookmarks(c)].filter(([name]) => allRecordDatabases(c.env).includes(name)));
      answer.set(shard, bookmark);
      c.set("answerBookmarks", answer);
      c.header(BOOKMARK_HEADER, bookmarkHeader(answer));
    },
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
  const bookmark = ctx.bookmarkFor(route.shard);
  const session = shardDatabase(ctx.env, route.shard).withSession(bookmark ?? (mode === "write" ? "first-primary" : "first-unconstrained"));
  const db = reportingSizes(session, (results) => {
    const persist = noteShardSize(ctx.env, route.shard, results);
    if (persist) ctx.waitUntil(persist);
  });
  const result = await work({ route, db });
  if (mode === "write") ctx.noteWrite(route.shard);
  const after = session.getBookmark();
  if (after) ctx.setBookmark(route.shard, after);
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
