import { createRoute, z } from "@hono/zod-openapi";
import type { RecordFamily } from "./standard-columns";
import { database } from "../db/client";
import { commonErrorResponses, ProjectIdParam } from "../http/common-schemas";
import type { Router } from "../http/create-router";
import { ownedRunWithProject, runOwnershipQuery } from "../projects/run-access";
import { refineRunSelector, runSelectorOf, runSelectorShape } from "../projects/run-selector";
import { ProjectNotOnShardError } from "../shards/project-shard";
import { onProjectReadShards } from "../partitions/read-shards";
import { projectStateStatement, readableHere } from "../shards/shard-membership";
import { annotationColumnDescriptor, ratedElsewhereStatement, type TemplateColumnRow, templateColumnsStatement } from "./annotation-columns";
import { availableColumns } from "./column-descriptors";

const AvailableColumnsRequest = z
  .object({
    ...runSelectorShape,
    start_time: z.iso.datetime({ offset: true }).nullish(),
    end_time: z.iso.datetime({ offset: true }).nullish(),
  })
  .superRefine(refineRunSelector)
  .openapi("AvailableColumnsRequest");

const ColumnDescriptorSchema = z
  .object({
    id: z.string(),
    label: z.string(),
    description: z.string(),
    category: z.enum(["standard", "metric", "feedback"]),
    group_label: z.string(),
    data_type: z.string(),
    filter_type: z.string(),
    filterable: z.boolean(),
    sortable: z.boolean(),
    multi_valued: z.boolean(),
    is_optional: z.boolean(),
    is_empty: z.boolean(),
    applicable_types: z.array(z.string()),
    allowed_values: z.array(z.string()).optional(),
    data_unit: z.string().optional(),
    roll_up_method: z.string().optional(),
    threshold: z
      .object({ buckets: z.array(z.number()), display_value_levels: z.array(z.string()), inverted: z.boolean() })
      .optional(),
  })
  .openapi("ColumnDescriptor");

const AvailableColumnsResponse = z.object({ columns: z.array(ColumnDescriptorSchema) }).openapi("AvailableColumnsResponse");

const ROUTE_SEGMENT: Record<RecordFamily, string> = { span: "spans", trace: "traces", session: "sessions" };

/** The columns that hold a value somewhere in the run, for one family (primary-key range). */
const PRESENT_COLUMNS = "SELECT column_id FROM run_columns WHERE run_id = ?1 AND record_type = ?2";

function availableColumnsRoute(family: RecordFamily) {
  return createRoute({
    method: "post",
    path: `/projects/{project_id}/${ROUTE_SEGMENT[family]}/available_columns`,
    tags: ["Columns"],
    summary: `Columns available for ${ROUTE_SEGMENT[family]} of a run`,
    description:
      "The standard columns that apply to this record family, in the interface's order, then one column per metric present in the run, then one per annotation template of the project (`annotations/<template_id>`, category `feedback`). `is_empty` is true when no record of the run has a value for the column. `start_time`/`end_time` are accepted but do not narrow the list: it always describes the whole run.",
    request: {
      params: ProjectIdParam,
      body: { content: { "application/json": { schema: AvailableColumnsRequest } }, required: true },
    },
    responses: {
      200: { content: { "application/json": { schema: AvailableColumnsResponse } }, description: "The columns" },
      ...commonErrorResponses,
    },
  });
}

export function registerAvailableColumns(app: Router): void {
  for (const family of ["span", "trace", "session"] as const) {
    app.openapi(availableColumnsRoute(family), async (c) => {
      const { project_id } = c.req.valid("param");
      const selector = runSelectorOf(c.req.valid("json"));
      const principal = c.get("principal");
      const ownership = runOwnershipQuery(database(c.env.DB), principal, project_id, selector).toSQL();
      // One round trip to each shard holding a partition of the project (src/partitions/read-shards.ts;
      // just the project's shard for most projects): its state there, the run's ownership, the run's columns.
      // The templates are read on the project's shard, which answers before any other is asked
      // (read-shards.ts); the others say whether their records are rated with them.
      let templateIds: string[] = [];
      const answers = await onProjectReadShards(c, project_id, async ({ db }, home) => {
        const [state, owned, columns, templates] = await db.batch<{ column_id: string }>([
          projectStateStatement(db, project_id),
          db.prepare(ownership.sql).bind(...ownership.params),
          db.prepare(PRESENT_COLUMNS).bind(selector.runId, family),
          home ? templateColumnsStatement(db, project_id, selector.runId, family) : ratedElsewhereStatement(db, templateIds, selector.runId, family),
        ]);
        if (home) templateIds = ((templates?.results ?? []) as unknown as TemplateColumnRow[]).map((t) => t.id);
        if (!readableHere(state)) throw new ProjectNotOnShardError(project_id);
        if ((owned?.results.length ?? 0) === 0) {
          // Not the caller's run (404), or one not yet copied to the shard: nothing filled yet.
          await ownedRunWithProject(database(c.env.DB), principal, project_id, selector);
          return { columnIds: [], templates: [] };
        }
        return { columnIds: (columns?.results ?? []).map((r) => r.column_id), templates: (templates?.results ?? []) as unknown as TemplateColumnRow[] };
      });
      // A column is filled when it is filled in any partition; templates are the project's, on its own shard.
      const columnIds = [...new Set(answers.flatMap((a) => a.answer.columnIds))];
      // A template's column is filled when a record of any partition is rated with it.
      const ratedElsewhere = new Set(answers.flatMap((a) => (a.home ? [] : a.answer.templates.filter((t) => t.rated === 1).map((t) => t.id))));
      const templates = answers.find((a) => a.home)!.answer.templates.map((t) => (ratedElsewhere.has(t.id) ? { ...t, rated: 1 } : t));
      // The standard and metric columns, then one per annotation template (category feedback).
      const columns = [...availableColumns(family, columnIds), ...templates.map(annotationColumnDescriptor)];
      return c.json({ columns }, 200);
    });
  }
}
