/**
 * `POST /v2/projects/{project_id}/export_records` (contract section 10; docs/export.md): a run's
 * records out as `jsonl` (one root a line, descendants nested), `jsonl_flat` (one record a line)
 * or `csv`, streamed as the client reads. Members may export.
 *
 * The body is a ReadableStream whose `pull` reads and writes the next page of roots (with their
 * descendants) only when the client has taken the previous one: backpressure from the socket
 * reaches the database, and memory holds one page whatever the size of the export. A failure
 * mid-stream is logged and errors the stream (controller.error): the response is aborted and its
 * body never completes, so a client never mistakes a cut export for a whole one.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { standardColumnsOf } from "../columns/standard-columns";
import { database, nowMicros } from "../db/client";
import { commonErrorResponses, ProjectIdParam } from "../http/common-schemas";
import type { Router } from "../http/create-router";
import { RequestValidationError } from "../http/errors";
import { ownedRunWithProject } from "../projects/run-access";
import { refineRunSelector, runSelectorOf } from "../projects/run-selector";
import { onProjectShard } from "../shards/project-shard";
import { shardDatabase } from "../shards/shard-config";
import { bindAnnotationColumns } from "../search/bind-annotation-columns";
import { normalizeSearchRequest } from "../search/normalize-search-request";
import { withinRetention } from "../search/retention-window";
import { resolveSelectedColumn } from "../search/search-columns";
import { withinSearchAdmission } from "../search/search-cost";
import type { SearchQuery } from "../search/search-query";
import { PartialSearchRequestSchema } from "../search/search-schemas";
import { CONTENT_TYPES, type ExportFormat, type ExportRecord, columnValue, csvLine, jsonLine, nest, redacted, sanitizedFileName } from "./export-formats";
import { type ExportSource, ROOT_PAGE_SIZE, descendantsOf, keysetPages } from "./export-reader";

const ExportBody = PartialSearchRequestSchema.extend({
  root_type: z.enum(["session", "trace", "span"]).openapi({ description: "The records that are lines (rows) of the export." }),
  export_format: z.enum(["jsonl", "jsonl_flat", "csv"]).default("jsonl"),
  redact: z.boolean().default(true).openapi({ description: "Where a record has redacted_input / redacted_output, they replace input / output." }),
  column_ids: z.array(z.string()).max(200).nullish().openapi({ description: "CSV only: the columns, in order; default the root type's standard columns." }),
  file_name: z.string().max(255).nullish().openapi({ description: "Content-Disposition file name (sanitised)." }),
  // The export pages by keyset on (created_at, id): the one order it continues (docs/export.md, "Order").
  sort: z
    .object({
      column_id: z.literal("created_at").nullish(),
      name: z.literal("created_at").nullish().openapi({ description: "Alias of `column_id`." }),
      ascending: z.boolean().nullish().openapi({ description: "Default true, as in a search (without `sort`: newest first)." }),
      sort_type: z.literal("column").nullish(),
    })
    .nullish()
    .openapi({ description: "created_at, descending by default; ties by id in the same direction." }),
}).superRefine(refineRunSelector);

const exportRoute = createRoute({
  method: "post",
  path: "/projects/{project_id}/export_records",
  tags: ["Export"],
  summary: "Export a run's records as JSONL or CSV, streamed",
  description:
    "Streams the records of one run that match the filter: `jsonl` one root record a line with its descendants nested (a session's `traces`, a trace's and a span's `spans`), `jsonl_flat` one record a line (roots and descendants), `csv` one root a row under a header of `column_ids`. Ordered by created_at (descending by default), then id. Read in keyset pages as the client reads; a failure mid-stream aborts the response. Members may export. See docs/export.md.",
  request: {
    params: ProjectIdParam,
    body: { content: { "application/json": { schema: ExportBody } }, required: true },
  },
  responses: {
    200: {
      content: { "application/x-ndjson": { schema: z.string() }, "text/csv": { schema: z.string() } },
      description: "The export, streamed",
    },
    ...commonErrorResponses,
  },
});

function csvColumns(requested: readonly string[] | null | undefined, family: SearchQuery["family"]): string[] {
  if (!requested || requested.length === 0) return standardColumnsOf(family).map((c) => c.id);
  const issues = requested.flatMap((id, index) => {
    const resolved = resolveSelectedColumn(id, family);
    return resolved.ok ? [] : [{ loc: ["body", "column_ids", index], msg: resolved.message, type: "value_error", input: id, ctx: { error: resolved.message } }];
  });
  if (issues.length > 0) throw new RequestValidationError(issues);
  return [...requested];
}

export function registerExport(app: Router): void {
  app.openapi(exportRoute, async (c) => {
    const { project_id } = c.req.valid("param");
    const body = c.req.valid("json");
    const principal = c.get("principal");
    const selector = runSelectorOf(body);
    const family = body.root_type;
    const format: ExportFormat = body.export_format;
    const searched = normalizeSearchRequest({ ...body, select_columns: null, pagination: null, limit: null, starting_token: null }, family, "partial");
    const columns = format === "csv" ? csvColumns(body.column_ids, family) : [];
    // Every field, every metric and feedback of each record (the page size is the reader's).
    const base: SearchQuery = {
      ...searched,
      projection: { columns: null, metrics: "all", feedback: true },
      includeCounts: true,
      includeMetricInfo: body.include_code_metric_metadata === true,
      truncateFields: false,
    };
    const run = await ownedRunWithProject(database(c.env.DB), principal, project_id, selector);
    // Annotation leaves are checked against the project's templates, which live on its shard.
    const route = await onProjectShard(c, project_id, "read", async ({ db, route }) => {
      await bindAnnotationColumns(db, project_id, base);
      return route;
    });
    const query = withinRetention(base, route.retentionDays, nowMicros());
    const source: ExportSource = {
      db: shardDatabase(c.env, route.shard),
      scope: { organizationId: principal.organizationId, projectId: project_id, runId: run.runId, runKind: run.kind },
      admit: (page, work) => withinSearchAdmission(c.env, principal.organizationId, page, work),
    };
    const shape = (record: ExportRecord) => (body.redact ? redacted(record) : record);
    const pages = keysetPages(source, query, ROOT_PAGE_SIZE);
    const encoder = new TextEncoder();
    let headerWritten = false;
    const requestId = c.get("requestId");

    /** The text of the next page of roots, or undefined at the end. */
    async function nextPage(): Promise<string | undefined> {
      const page = await pages.next();
      if (page.done) return undefined;
      const roots = page.value.records;
      if (format === "csv") {
        const header = headerWritten ? "" : csvLine(columns);
        headerWritten = true;
        return header + roots.map((root) => csvLine(columns.map((id) => columnValue(shape(root), id)))).join("");
      }
      const { children, matching } = await descendantsOf(source, query, roots);
      const shapedChildren = new Map([...children].map(([parent, list]) => [parent, list.map(shape)]));
      if (format === "jsonl") return roots.map((root) => jsonLine(nest(shape(root), shapedChildren))).join("");
      // Flat: each root, then every record below it; a descendant span that matches the filter
      // itself is a root line of its own (with its subtree), so every record appears once.
      const lines: string[] = [];
      const below = (id: string, depth: number) => {
        if (depth > 256) return;
        for (const record of shapedChildren.get(id) ?? []) {
          if (matching.has(String(record.id))) continue;
          lines.push(jsonLine(record));
          below(String(record.id), depth + 1);
        }
      };
      for (const root of roots) {
        lines.push(jsonLine(shape(root)));
        below(String(root.id), 0);
      }
      return lines.join("");
    }

    const stream = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          // Every page has at least one root, so each pull enqueues text or closes the stream.
          const text = await nextPage();
          if (text === undefined) {
            if (format === "csv" && !headerWritten) controller.enqueue(encoder.encode(csvLine(columns)));
            controller.close();
          } else controller.enqueue(encoder.encode(text));
        } catch (error) {
          console.error(`export of project ${project_id} failed mid-stream${requestId ? ` (request ${requestId})` : ""}:`, error instanceof Error ? error.message : String(error));
          controller.error(error);
        }
      },
      async cancel() {
        await pages.return(undefined);
      },
    });
    const fileName = sanitizedFileName(body.file_name, family, format);
    return new Response(stream, {
      status: 200,
      headers: { "content-type": CONTENT_TYPES[format], "content-disposition": `attachment; filename="${fileName}"` },
    }) as never;
  });
}
