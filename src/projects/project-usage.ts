/**
 * `GET /v2/projects/{project_id}/usage`: what a project holds and what its retention would free
 * (docs/retention.md). One round trip to the project's shard: per kind of record, the count, the
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

const KINDS = ["session", "trace", "span"] as const;

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

export function registerProjectUsage(app: Router): void {
  app.openapi(usageRoute, async (c) => {
    const { project_id } = c.req.valid("param");
    const principal = c.get("principal");
    const read = () =>
      onProjectShard(c, project_id, "read", async ({ db, route }) => {
        const now = nowMicros();
        const cutoff = retentionCutoffMicros(route.retentionDays, now);
        const [state, kinds, held] = await db.batch<KindRow & { held: number }>([
          projectStateStatement(db, project_id),
          db.prepare(USAGE_BY_KIND).bind(project_id, firstShownMicros(route.retentionDays, now)),
          db.prepare(HELD_UPDATES).bind(project_id),
        ]);
        if (!readableHere(state)) throw new ProjectNotOnShardError(project_id);
        return { route, cutoff, kinds: (kinds?.results ?? []) as KindRow[], held: Number(held?.results[0]?.held ?? 0) };
      });
    const { route, cutoff, kinds, held } = await whileHoldingScanSlot(c.env, principal.organizationId, read);
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
      },
      200,
    );
  });
}
