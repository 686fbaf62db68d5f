/**
 * `GET /v2/projects/{project_id}/usage`: what a project holds and what its retention would free
 * (docs/retention.md). One round trip to each shard holding partitions of the project (in
 * parallel; docs/partitions.md): per kind of record, the count, the
 * oldest and newest created_at and how many are older than the retention's cut-off (still
 * stored, hidden from searches, erased by the next hourly expiry), and the held streaming
 * updates. The statement reads the project's entries of `records_family_order` (family_key,
 * created_at, id) per run family, no record row: an index-only walk as long as the project, so it
 * holds one of the organization's scan slots like any other walk of a whole run (docs/limits.md).
 */
import { createRoute, z } from "@hono/zod-openapi";
import { microsToIso, nowMicros } from "../db/client";
import { commonErrorResponses, ProjectIdParam } from "../http/common-schemas";
import type { Router } from "../http/create-router";
import { whileHoldingScanSlot } from "../limits/scan-admission";
import { firstShownMicros, retentionCutoffMicros } from "../retention/retention-policy";
import { ProjectNotOnShardError, onProjectShard } from "../shards/project-shard";
import { projectStateStatement, readableHere } from "../shards/shard-membership";
import { projectRoute } from "../shards/project-routing";
import { type PartitionRoute, projectPartitions, readPartitions } from "../partitions/partition-catalog";

/**
 * What one record costs in the database, all tables and indexes together, as measured by
 * `npm run bench -- storage` on the benchmark dataset (docs/benchmarks.md, "Storage": 1,929 bytes
 * packed, all tables and indexes, at 100,000 records; update it with the layout). A shard's
 * size is known only as a whole, and a project's exact share is not cheap to measure, so the
 * answer's bytes are records x this figure.
 */
export const MEASURED_BYTES_PER_RECORD = 1929;

/** ?1 project, ?2 cut-off (µs; the smallest integer when the project keeps everything). */
const USAGE_BY_KIND = `
SELECT f.record_type AS kind, count(*) AS records, min(r.created_at) AS oldest, max(r.created_at) AS newest,
  sum(r.created_at < ?2) AS expired
FROM runs AS ru CROSS JOIN run_families AS f ON f.run_id = ru.id CROSS JOIN records AS r ON r.family_key = f.key
WHERE ru.project_id = ?1
GROUP BY f.record_type`;

const HELD_UPDATES = `SELECT count(*) AS held FROM runs AS ru CROSS JOIN record_patches AS p ON p.run_id = ru.id WHERE ru.project_id = ?1`;

/** Per partition of the project on this shard (?1): its records and their created_at range. Read only where the shard holds several. */
const BY_PARTITION = `
SELECT coalesce(partition_seq, 1) AS seq, count(*) AS records, min(created_at) AS oldest, max(created_at) AS newest
FROM records WHERE project_id = ?1 GROUP BY 1`;

const ROOTS = `SELECT seq, roots FROM shard_partitions WHERE project_id = ?1`;

const KINDS = ["session", "trace", "span"] as const;

const PartitionUsage = z
  .object({
    partition_id: z.string(),
    shard: z.string().openapi({ description: "The D1 binding that holds the partition." }),
    state: z.enum(["open", "closed"]),
    opened_at: z.string().openapi({ format: "date-time" }),
    closed_at: z.string().nullable().openapi({ format: "date-time" }),
    roots: z.number().int().openapi({ description: "Sessions, and traces without a session, in the partition (counted on its shard since partitions exist)." }),
    records: z.number().int().openapi({ description: "Sessions, traces and spans in the partition." }),
    oldest: z.string().nullable().openapi({ format: "date-time" }),
    newest: z.string().nullable().openapi({ format: "date-time" }),
  })
  .openapi("PartitionUsage");

const KindUsage = z.object({
  records: z.number().int(),
  oldest_created_at: z.string().nullable().openapi({ format: "date-time" }),
  newest_created_at: z.string().nullable().openapi({ format: "date-time" }),
  expired: z.number().int().openapi({ description: "Records older than the retention's cut-off: hidden from searches, erased by the next hourly expiry." }),
});

const ProjectUsage = z
  .object({
    project_id: z.string(),
    retention_days: z.number().int().nullable(),
    cutoff: z.string().nullable().openapi({ format: "date-time", description: "Records created before this instant are expired; null without a retention." }),
    sessions: KindUsage,
    traces: KindUsage,
    spans: KindUsage,
    records: z.number().int().openapi({ description: "Sessions, traces and spans together." }),
    held_updates: z.number().int().openapi({ description: "Streaming updates held for records that have not arrived." }),
    oldest_created_at: z.string().nullable().openapi({ format: "date-time" }),
    newest_created_at: z.string().nullable().openapi({ format: "date-time" }),
    approximate_bytes: z.number().int().openapi({ description: "records x bytes_per_record." }),
    bytes_per_record: z.number().int().openapi({ description: "What a record costs in the database on average, as measured by the storage benchmark." }),
    expired_approximate_bytes: z.number().int().openapi({ description: "What the next expiry frees, approximately." }),
    partitions: z.array(PartitionUsage).openapi({ description: "The project's partitions (docs/partitions.md), oldest first." }),
  })
  .openapi("ProjectUsage");

const usageRoute = createRoute({
  method: "get",
  path: "/projects/{project_id}/usage",
  tags: ["Projects"],
  summary: "What a project stores, and what its retention frees",
  description:
    "Counts of sessions, traces and spans, their oldest and newest `created_at`, how many are past the retention's cut-off (hidden, and erased by the next hourly expiry), held streaming updates, and the approximate bytes (records x the measured bytes per record). Reads the project's whole index: counts as a scan-class request for the organization's limits.",
  request: { params: ProjectIdParam },
  responses: {
    200: { content: { "application/json": { schema: ProjectUsage } }, description: "The project's usage" },
    ...commonErrorResponses,
  },
});

interface KindRow {
  kind: string;
  records: number;
  oldest: number | null;
  newest: number | null;
  expired: number | null;
}

const iso = (micros: number | null | undefined) => (micros === null || micros === undefined ? null : microsToIso(micros));

interface ShardUsage {
  kinds: KindRow[];
  held: number;
  /** seq -> its records and range on this shard */
  partitions: Map<number, { records: number; oldest: number | null; newest: number | null }>;
  roots: Map<number, number>;
}

/** Sums the per-kind rows of several shards (each root, and so each record, is on one of them). */
function mergeKinds(rows: KindRow[]): KindRow[] {
  const byKind = new Map<string, KindRow>();
  for (const row of rows) {
    const seen = byKind.get(row.kind);
    if (!seen) {
      byKind.set(row.kind, { ...row });
      continue;
    }
    seen.records += row.records;
    seen.expired = Number(seen.expired ?? 0) + Number(row.expired ?? 0);
    seen.oldest = seen.oldest === null ? row.oldest : row.oldest === null ? seen.oldest : Math.min(seen.oldest, row.oldest);
    seen.newest = seen.newest === null ? row.newest : row.newest === null ? seen.newest : Math.max(seen.newest, row.newest);
  }
  return [...byKind.values()];
}

export function registerProjectUsage(app: Router): void {
  app.openapi(usageRoute, async (c) => {
    const { project_id } = c.req.valid("param");
    const principal = c.get("principal");
    const route = await projectRoute(c.env, principal, project_id);
    const partitions = await projectPartitions(c.env, project_id);
    const now = nowMicros();
    const cutoff = retentionCutoffMicros(route.retentionDays, now);
    // One read per shard that holds partitions of the project, in parallel (each a batch).
    const groups = new Map<string, PartitionRoute[]>();
    for (const p of partitions) groups.set(p.shard, [...(groups.get(p.shard) ?? []), p]);
    const readShard = (shard: string, here: PartitionRoute[]) =>
      onProjectShard(
        c,
        project_id,
        "read",
        async ({ db, route: onShard }): Promise<ShardUsage> => {
          const several = here.length > 1;
          const [state, kinds, held, roots, split] = await db.batch<KindRow & { held: number; seq: number; roots: number; records: number }>([
            projectStateStatement(db, project_id),
            db.prepare(USAGE_BY_KIND).bind(project_id, firstShownMicros(route.retentionDays, now)),
            db.prepare(HELD_UPDATES).bind(project_id),
            db.prepare(ROOTS).bind(project_id),
            ...(several ? [db.prepare(BY_PARTITION).bind(project_id)] : []),
          ]);
          const stateRow = state?.results[0] as { state?: string } | undefined;
          // A partition shard that never took a write of the project (its registration lost in a
          // roll) holds nothing of it; the project's own shard must answer.
          if (!stateRow && onShard.shard !== route.shard) return { kinds: [], held: 0, partitions: new Map(), roots: new Map() };
          if (!readableHere(state)) throw new ProjectNotOnShardError(project_id);
          const kindRows = (kinds?.results ?? []) as KindRow[];
          const perPartition = new Map<number, { records: number; oldest: number | null; newest: number | null }>();
          if (several) {
            for (const row of (split?.results ?? []) as { seq: number; records: number; oldest: number | null; newest: number | null }[]) perPartition.set(row.seq, row);
          } else {
            const [merged] = [mergeKinds(kindRows.map((k) => ({ ...k, kind: "all" })))];
            const all = merged[0];
            if (all && all.records > 0) perPartition.set(here[0]!.seq, { records: all.records, oldest: all.oldest, newest: all.newest });
          }
          const rootRows = (roots?.results ?? []) as { seq: number; roots: number }[];
          return { kinds: kindRows, held: Number(held?.results[0]?.held ?? 0), partitions: perPartition, roots: new Map(rootRows.map((r) => [r.seq, r.roots])) };
        },
        {
          shardOf: async (fresh) => {
            if (!fresh) return shard;
            const moved = (await readPartitions(c.env, project_id)).find((p) => p.id === here[0]!.id);
            return moved?.shard ?? shard;
          },
        },
      );
    const read = () => Promise.all([...groups].map(([shard, here]) => readShard(shard, here)));
    const perShard = await whileHoldingScanSlot(c.env, principal.organizationId, read);
    const kinds = mergeKinds(perShard.flatMap((s) => s.kinds));
    const held = perShard.reduce((sum, s) => sum + s.held, 0);
    const partitionAnswers = partitions.map((p) => {
      const shardUsage = perShard[[...groups.keys()].indexOf(p.shard)];
      const usage = shardUsage?.partitions.get(p.seq);
      return {
        partition_id: p.id,
        shard: p.shard,
        state: p.state,
        opened_at: microsToIso(p.openedAt),
        closed_at: iso(p.closedAt),
        roots: shardUsage?.roots.get(p.seq) ?? 0,
        records: usage?.records ?? 0,
        oldest: iso(usage?.oldest),
        newest: iso(usage?.newest),
      };
    });
    const byKind = Object.fromEntries(
      KINDS.map((kind) => {
        const row = kinds.find((k) => k.kind === kind);
        return [kind, { records: row?.records ?? 0, oldest_created_at: iso(row?.oldest), newest_created_at: iso(row?.newest), expired: Number(row?.expired ?? 0) }];
      }),
    ) as Record<(typeof KINDS)[number], z.infer<typeof KindUsage>>;
    const present = kinds.filter((k) => k.records > 0);
    const records = present.reduce((sum, k) => sum + k.records, 0);
    const expired = present.reduce((sum, k) => sum + Number(k.expired ?? 0), 0);
    return c.json(
      {
        project_id,
        retention_days: route.retentionDays,
        cutoff: iso(cutoff),
        sessions: byKind.session,
        traces: byKind.trace,
        spans: byKind.span,
        records,
        held_updates: held,
        oldest_created_at: present.length > 0 ? iso(Math.min(...present.map((k) => k.oldest!))) : null,
        newest_created_at: present.length > 0 ? iso(Math.max(...present.map((k) => k.newest!))) : null,
        approximate_bytes: records * MEASURED_BYTES_PER_RECORD,
        bytes_per_record: MEASURED_BYTES_PER_RECORD,
        expired_approximate_bytes: expired * MEASURED_BYTES_PER_RECORD,
        partitions: partitionAnswers,
      },
      200,
    );
  });
}
