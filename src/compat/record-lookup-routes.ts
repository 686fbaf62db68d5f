/**
 * One trace, span or session by id: `GET /projects/{pid}/{traces|spans|sessions}/{id}`.
 *
 * The `galileo` SDK reads a trace and a span this way to continue a distributed trace in
 * streaming mode (`GalileoLogger.create({ mode: "streaming", traceId, spanId })`: it checks the
 * span is a workflow or agent span of that trace, then posts new spans under it), and
 * `getSession`/`getTrace`/`getSpan` expose it. The record is shaped exactly as a full search
 * returns it (src/search/shape-record.ts), without its children. It must be in the caller's
 * organization and in the project of the path: anything else is a 404, like a missing record.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { RecordFamily } from "../columns/standard-columns";
import { commonErrorResponses, ProjectIdParam, Uuid } from "../http/common-schemas";
import type { Router } from "../http/create-router";
import { notFound } from "../http/errors";
import { nowMicros } from "../db/client";
import { firstShownMicros } from "../retention/retention-policy";
import { ProjectNotOnShardError } from "../shards/project-shard";
import { onProjectReadShards } from "../partitions/read-shards";
import { projectStateStatement, readableHere } from "../shards/shard-membership";
import { shapeRecord, type StoredRow } from "../search/shape-record";
import { feedbackTemplatesStatement, withFeedback } from "../annotations/feedback-fields";
import { RATINGS_COLUMN, ratingsJsonSql } from "../annotations/record-feedback";
import type { SearchQuery } from "../search/search-query";

const LOOKUPS: { family: RecordFamily; segment: string; idParam: string; label: string }[] = [
  { family: "trace", segment: "traces", idParam: "trace_id", label: "Trace" },
  { family: "span", segment: "spans", idParam: "span_id", label: "Span" },
  { family: "session", segment: "sessions", idParam: "session_id", label: "Session" },
];

const RecordSchema = z.record(z.string(), z.any()).openapi("Record", { description: "A full record, as a full search returns it." });

/** Every field of the record's kind and all its metrics, untruncated: what a full search answers. */
function fullRecordQuery(family: RecordFamily): SearchQuery {
  return {
    family,
    filter: { kind: "and", children: [] },
    sort: null,
    limit: 1,
    offset: 0,
    projection: { columns: null, metrics: "all", feedback: true },
    includeCounts: false,
    includeMetricInfo: false,
    truncateFields: false,
  };
}

// Primary-key lookup; the organization and project tests keep every tenant to its own records.
/** ?5: the project's retention cut-off (µs), or the smallest integer: an expired record is not shown, as in searches. */
/** With its ratings, for the feedback fields (src/annotations/record-feedback.ts). */
const RECORD_BY_ID = `SELECT *, ${ratingsJsonSql("records.rid")} AS "${RATINGS_COLUMN}" FROM records WHERE id = ?1 AND organization_id = ?2 AND project_id = ?3 AND record_type = ?4 AND created_at >= ?5`;

export function registerRecordLookups(app: Router): void {
  for (const { family, segment, idParam, label } of LOOKUPS) {
    const route = createRoute({
      method: "get",
      path: `/projects/{project_id}/${segment}/{${idParam}}`,
      tags: ["Search"],
      summary: `Get one ${family} by id`,
      request: { params: ProjectIdParam.extend({ [idParam]: Uuid.openapi({ param: { name: idParam, in: "path" } }) }) },
      responses: {
        200: { content: { "application/json": { schema: RecordSchema } }, description: `The ${family}` },
        ...commonErrorResponses,
      },
    });
    app.openapi(route, async (c) => {
      const params = c.req.valid("param") as Record<string, string>;
      const projectId = params.project_id!;
      // Every shard holding a partition of the project (src/partitions/read-shards.ts: just the
      // project's shard, one round trip, for most projects): its state there and the record; the
      // live templates on the project's own shard, where they live.
      const answers = await onProjectReadShards(c, projectId, async ({ db, route }, home) => {
        const cutoff = firstShownMicros(route.retentionDays, nowMicros());
        const [state, rows, templates] = await db.batch<StoredRow>([
          projectStateStatement(db, projectId),
          db.prepare(RECORD_BY_ID).bind(params[idParam], c.get("principal").organizationId, projectId, family, cutoff),
          ...(home ? [feedbackTemplatesStatement(db, projectId)] : []),
        ]);
        if (!readableHere(state)) throw new ProjectNotOnShardError(projectId);
        return { row: rows?.results[0], templates };
      });
      const found = { row: answers.find((a) => a.answer.row)?.answer.row, templates: answers.find((a) => a.home)!.answer.templates };
      if (!found.row) throw notFound(label);
      const record = shapeRecord(found.row, fullRecordQuery(family));
      withFeedback([record], [found.row], found.templates, c.get("principal").userId);
      return c.json(record, 200);
    });
  }
}
