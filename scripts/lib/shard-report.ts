/// <reference types="node" />
/**
 * `npm run admin -- shards`: what each database that may hold records holds (docs/sharding.md):
 * its size (as D1 reports it), its records by kind, and the projects placed on it according to
 * the catalog, with their state on the shard. Read-only; one D1 batch per database.
 */
import { type D1Target, d1Bindings, executeD1 } from "./wrangler";

export interface ShardReport {
  shard: string;
  /**
   * The database's size in bytes: as D1 reports it after a query (deployed databases), or else
   * as the service last recorded it in the catalog (local databases, whose command line does not
   * report sizes: the service records them as it writes, and the hourly maintenance for all).
   */
  size_bytes: number | null;
  size_source: "database" | "catalog" | null;
  records: { sessions: number; traces: number; spans: number };
  projects: { id: string; name: string; organization_id: string; state: string | null }[];
}

const COUNTS = "SELECT record_type, count(*) AS n FROM records GROUP BY record_type";

export async function shardsReport(target: D1Target): Promise<{ shards: ShardReport[] }> {
  const [placed, recorded] = await executeD1(
    "SELECT id, name, organization_id, coalesce(shard, 'DB') AS shard FROM projects ORDER BY shard, name; SELECT name, size_bytes FROM shards",
    target,
  );
  const projects = placed?.results ?? [];
  const recordedSize = new Map((recorded?.results ?? []).map((row) => [String(row.name), Number(row.size_bytes)]));
  const shards: ShardReport[] = [];
  for (const shard of d1Bindings()) {
    const [counts, states] = await executeD1(`${COUNTS}; SELECT project_id, state FROM shard_projects`, target, shard);
    const byType = Object.fromEntries((counts?.results ?? []).map((row) => [String(row.record_type), Number(row.n)]));
    const stateOf = new Map((states?.results ?? []).map((row) => [String(row.project_id), String(row.state)]));
    const measured = (counts?.meta as { size_after?: number } | undefined)?.size_after;
    const size = typeof measured === "number" ? measured : recordedSize.get(shard);
    shards.push({
      shard,
      size_bytes: size ?? null,
      size_source: typeof measured === "number" ? "database" : size !== undefined ? "catalog" : null,
      records: { sessions: byType.session ?? 0, traces: byType.trace ?? 0, spans: byType.span ?? 0 },
      projects: projects
        .filter((p) => p.shard === shard)
        .map((p) => ({ id: String(p.id), name: String(p.name), organization_id: String(p.organization_id), state: stateOf.get(String(p.id)) ?? null })),
    });
  }
  return { shards };
}
