/**
 * Records live on data shards (docs/sharding.md), so a test that reads the record tables
 * directly must look where its project's records are. `recordsOf(projectId)` is the database
 * of one project; `allRecordDbs` reads every database that may hold records (the shards and the
 * catalog) as one: its statements run on each, and their rows come back concatenated (a query's
 * ORDER BY holds within each database only: sort in the test where the order matters), except
 * an aggregate (`SELECT count(...)` or `sum(...)` with no GROUP BY), whose one row is summed
 * column by column over the databases.
 */
import { env } from "cloudflare:test";

export function recordDatabases(): D1Database[] {
  const names = [...new Set([...(env.DATA_SHARDS ?? "DB").split(","), "DB"])].filter(Boolean);
  return names.map((name) => (env as unknown as Record<string, D1Database>)[name]!);
}

/** The database holding a project's records, as the catalog says. */
export async function recordsOf(projectId: string): Promise<D1Database> {
  const row = await env.DB.prepare("SELECT coalesce(shard, 'DB') AS shard FROM projects WHERE id = ?").bind(projectId).first<{ shard: string }>();
  if (!row) throw new Error(`no project ${projectId}`);
  return (env as unknown as Record<string, D1Database>)[row.shard]!;
}

class AllStatement {
  constructor(
    readonly sql: string,
    readonly params: unknown[] = [],
  ) {}

  bind(...params: unknown[]): AllStatement {
    return new AllStatement(this.sql, params);
  }

  private on(db: D1Database): D1PreparedStatement {
    return db.prepare(this.sql).bind(...this.params);
  }

  private get aggregate(): boolean {
    return /^\s*SELECT\s+(count|sum)\(/i.test(this.sql) && !/\bGROUP\s+BY\b/i.test(this.sql);
  }

  async all<T = Record<string, unknown>>(): Promise<D1Result<T>> {
    const parts = await Promise.all(recordDatabases().map((db) => this.on(db).all<T>()));
    const rows = parts.flatMap((p) => p.results);
    if (!this.aggregate) return { ...parts[0]!, results: rows };
    const summed = { ...rows[0] } as Record<string, unknown>;
    for (const key of Object.keys(summed)) summed[key] = rows.reduce((sum, row) => sum + Number((row as Record<string, unknown>)[key] ?? 0), 0);
    return { ...parts[0]!, results: [summed as T] };
  }

  async first<T = Record<string, unknown>>(): Promise<T | null> {
    const { results } = await this.all<T>();
    return results[0] ?? null;
  }

  async run(): Promise<D1Result> {
    const parts = await Promise.all(recordDatabases().map((db) => this.on(db).run()));
    return { ...parts[0]!, meta: { ...parts[0]!.meta, changes: parts.reduce((sum, p) => sum + p.meta.changes, 0) } };
  }
}

/** Every record database, read (or written) as one. */
export const allRecordDbs = {
  prepare: (sql: string) => new AllStatement(sql),
  async batch(statements: AllStatement[]): Promise<D1Result[]> {
    const perDb = await Promise.all(recordDatabases().map((db) => db.batch(statements.map((s) => db.prepare(s.sql).bind(...s.params)))));
    return statements.map((_, i) => ({ ...perDb[0]![i]!, results: perDb.flatMap((results) => results[i]!.results) }));
  },
};

/** The catalog for statements on the catalog's own tables, every record database otherwise. */
export function databaseFor(sql: string): Pick<D1Database, "prepare"> {
  return /\b(projects|runs|organizations|users|api_keys|org_jobs|org_job_shards|shards)\b/.test(sql)
    ? env.DB
    : (allRecordDbs as unknown as Pick<D1Database, "prepare">);
}
