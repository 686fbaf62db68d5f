/**
 * `POST /v2/projects/{project_id}/export_records` (contract section 10; docs/export.md): a run's
 * records out as `jsonl` (one root a line, descendants nested), `jsonl_flat` (one record a line)
 * or `csv`, streamed as the client reads. Members may export.
 *
 * The body is a ReadableStream whose `pull` reads and writes the next page of roots (with their
 * descendants) only when the client has taken the previous one: backpressure from the socket
 * reaches the database, and memory holds one page whatever the size of the export.
 *
 * The first page is read before answering, within the one shard access that also binds the
 * filter's annotation columns and gives the retention window: a refusal there (a scan over the
 * organization's limits, a moved project) is an ordinary error answer, not a cut stream. Past
 * it, a page whose scan slot is refused waits for it (slot-wait.ts) instead of failing.
 *
 * A failure mid-stream (a database error, a statement past D1's time limit, a slot still refused
 * past the wait) is logged and errors the stream (controller.error): the response is aborted and
 * its body never completes. Not every transport shows that: under `wrangler dev` an errored body
 * reached the client as a complete chunked answer (issue 30). So before the error the stream
 * writes FAILURE_LINE, on a line of its own, which no format can take for a record (not JSON; in
 * CSV a row of one field that says so): a file cut by a failure says it is cut, whatever carried
 * it. docs/export.md, "Failures".
 */
import { createRoute, z } from "@hono/zod-openapi";
import { database, nowMicros } from "../db/client";
import { commonErrorResponses, ProjectIdParam } from "../http/common-schemas";
import type { Router } from "../http/create-router";
import { ownedRunWithProject } from "../projects/run-access";
import { runSelectorOf } from "../projects/run-selector";
import { homeWithOtherShards } from "../partitions/read-shards";
import { shardDatabase } from "../shards/shard-config";
import { bindAnnotationColumns } from "../search/bind-annotation-columns";
import { withinRetention } from "../search/retention-window";
import { withinSearchAdmission } from "../search/search-cost";
import { CONTENT_TYPES, type ExportFormat, sanitizedFileName } from "./export-formats";
import { ExportBody, exportQueryOf } from "./export-request";
import { exportChunks } from "./export-writer";
import { admittedWhenFree } from "./slot-wait";

const exportRoute = createRoute({
  method: "post",
  path: "/projects/{project_id}/export_records",
  tags: ["Export"],
  summary: "Export a run's records as JSONL or CSV, streamed",
  description:
    "Streams the records of one run that match the filter: `jsonl` one root record a line with its descendants nested (a session's `traces`, a trace's and a span's `spans`), `jsonl_flat` one record a line (roots and descendants), `csv` one root a row under a header of `column_ids`. Ordered as the search with the same `sort` (default created_at descending), ties by id. Read in keyset pages as the client reads; a failure mid-stream aborts the response. Members may export. See docs/export.md.",
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

/**
 * The last line of an export cut by a failure: on a line of its own (the text before may end
 * within a nested line), not JSON, so a JSONL reader fails on it, and a CSV row that says so.
 */
export function failureLine(requestId: string | undefined): string {
  return `\nEXPORT FAILED: this file is incomplete${requestId ? ` (request ${requestId})` : ""}; export again\n`;
}

export function registerExport(app: Router): void {
  app.openapi(exportRoute, async (c) => {
    const { project_id } = c.req.valid("param");
    const body = c.req.valid("json");
    const principal = c.get("principal");
    const format: ExportFormat = body.export_format;
    const { base, columns } = exportQueryOf(body);
    const run = await ownedRunWithProject(database(c.env.DB), principal, project_id, runSelectorOf(body));
    const scope = { organizationId: principal.organizationId, projectId: project_id, runId: run.runId, runKind: run.kind };
    let streaming = false;
    // The project's shard as before, and the shards of its other partitions (homeWithOtherShards:
    // the partitions read beside, from the 4 s cache), whose pages merge with it (export-reader.ts).
    const { chunks, first } = await homeWithOtherShards(c, project_id, async ({ db, route }, otherShards) => {
      // Annotation leaves are checked against the project's templates, which live on its shard.
      await bindAnnotationColumns(db, project_id, base);
      const query = withinRetention(base, route.retentionDays, nowMicros());
      // Pages after the first may run long after this session's request: the shard's binding.
      const admit = <T>(page: typeof query, work: () => Promise<T>) => withinSearchAdmission(c.env, principal.organizationId, page, work);
      const others = (await otherShards()).map((partition) => shardDatabase(c.env, partition.shard));
      const source = {
        db: shardDatabase(c.env, route.shard),
        others,
        scope,
        // Refused before the first byte: a 429. After it: wait for the slot.
        admit: <T>(page: typeof query, work: () => Promise<T>) => (streaming ? admittedWhenFree(c.env, () => admit(page, work)) : admit(page, work)),
      };
      const chunks = exportChunks({ source, query, format, columns, redact: body.redact });
      return { chunks, first: await chunks.next() };
    });
    const encoder = new TextEncoder();
    const requestId = c.get("requestId");
    let pending: IteratorResult<{ text: string }> | undefined = first;
    streaming = true;
    let failed: { error: unknown } | undefined;

    const stream = new ReadableStream<Uint8Array>({
      async pull(controller) {
        // The failure line went out with the last pull: now abort (erroring the stream at once
        // would drop that line from the queue before the client read it).
        if (failed) return controller.error(failed.error);
        try {
          // Every chunk holds text (a page has at least one root), so each pull enqueues or closes.
          const next = pending ?? (await chunks.next());
          pending = undefined;
          if (next.done) controller.close();
          else controller.enqueue(encoder.encode(next.value.text));
        } catch (error) {
          console.error(`export of project ${project_id} failed mid-stream${requestId ? ` (request ${requestId})` : ""}:`, error instanceof Error ? error.message : String(error));
          failed = { error };
          controller.enqueue(encoder.encode(failureLine(requestId)));
        }
      },
      async cancel() {
        await chunks.return(undefined);
      },
    });
    const fileName = sanitizedFileName(body.file_name, body.root_type, format);
    return new Response(stream, {
      status: 200,
      headers: { "content-type": CONTENT_TYPES[format], "content-disposition": `attachment; filename="${fileName}"` },
    }) as never;
  });
}
