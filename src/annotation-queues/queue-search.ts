/**
 * A queue's partial_search (contract section 8, "Queues"): the queue's records in "as added"
 * order, from every project (shard) the queue holds records of, with the feedback fields scoped
 * to the queue (its templates; `unrated_count` = its annotators who have not rated).
 *
 * How the order holds across shards (docs/annotations.md, "Annotation queues"): every entry
 * carries `seq`, handed out by the queue's catalog row, so a page is a merge by seq. Phase one
 * reads, on each project's shard, the seqs of the first offset + limit + 1 matching entries
 * (served by annotation_queue_entries_order: queue, project, seq); the merge picks the page's
 * seqs; phase two reads those records' stored columns and ratings. Two round trips per project
 * of the queue, and no record text is read that the page does not return.
 */
import { type SQL, sql } from "drizzle-orm";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import type { Context } from "hono";
import type { AppEnv } from "../http/app-env";
import { ProjectNotOnShardError } from "../shards/project-shard";
import { onProjectReadShards } from "../partitions/read-shards";
import { projectStateStatement, readableHere } from "../shards/shard-membership";
import { aggregateOf, feedbackJsonSql, recordFeedback } from "../annotations/record-feedback";
import type { TemplateDefinition } from "../annotations/template-store";
import { bindAnnotationColumns } from "../search/bind-annotation-columns";
import { compileFilter } from "../search/compile-filter-tree";
import { selectList } from "../search/compile-search-query";
import type { FilterNode, SearchQuery } from "../search/search-query";
import { from, r } from "../search/search-tables";
import { type StoredRow, shapeRecord, storageNeeded } from "../search/shape-record";
import { SqlParamPack } from "../search/sql-param-pack";
import type { QueueScope } from "./queue-progress";

const dialect = new SQLiteAsyncDialect();

const isEmptyFilter = (node: FilterNode) => node.kind === "and" && node.children.length === 0;

function phaseOne(queueId: string, projectId: string, filter: FilterNode, limit: number, recordId: string | null): { sql: string; param: string } {
  const pack = new SqlParamPack();
  const join = isEmptyFilter(filter) ? sql`` : sql` CROSS JOIN ${from(r)} ON ${r.rid} = "e"."record_rid"`;
  const where = isEmptyFilter(filter) ? sql`` : sql` AND ${compileFilter(filter, pack)}`;
  const one = recordId ? sql` AND "e"."record_id" = ${pack.value(recordId)}` : sql``;
  const statement: SQL = sql`SELECT "e"."seq" AS "seq" FROM "annotation_queue_entries" AS "e"${join} WHERE "e"."queue_id" = ${pack.value(queueId)} AND "e"."project_id" = ${pack.value(projectId)}${one}${where} ORDER BY "e"."seq" LIMIT ${pack.value(limit)}`;
  return { sql: dialect.sqlToQuery(statement).sql, param: pack.toParameter() };
}

function phaseTwo(queueId: string, projectId: string, seqs: readonly number[], names: readonly string[], templateIds: readonly string[]): { sql: string; param: string } {
  const pack = new SqlParamPack();
  const ratings = `(SELECT json_group_array(json_array("fa"."template_id", "fa"."annotator_id", "fa"."value", "fa"."explanation")) FROM "annotation_ratings" AS "fa" WHERE "fa"."record_rid" = "r"."rid" AND "fa"."template_id" IN (SELECT value FROM json_each(${dialect.sqlToQuery(pack.list(templateIds)).sql})))`;
  const feedback = sql.raw(feedbackJsonSql(ratings, `"r"."rid"`));
  const statement: SQL = sql`SELECT "e"."seq" AS "_seq", ${selectList(names)}, ${feedback} AS "_ratings" FROM "annotation_queue_entries" AS "e" CROSS JOIN ${from(r)} ON ${r.rid} = "e"."record_rid" WHERE "e"."queue_id" = ${pack.value(queueId)} AND "e"."project_id" = ${pack.value(projectId)} AND "e"."seq" IN (SELECT value FROM json_each(${pack.list(seqs.map(String))})) ORDER BY "e"."seq"`;
  return { sql: dialect.sqlToQuery(statement).sql, param: pack.toParameter() };
}

/** The stored columns any kind of record needs for this projection (a queue mixes kinds). */
function columnsFor(query: SearchQuery): string[] {
  const names = new Set<string>();
  for (const family of ["session", "trace", "span"] as const) for (const name of storageNeeded({ ...query, family })) names.add(name);
  return [...names];
}

/** The feedback fields of a queue record: its ratings with the queue's templates, every template shown. */
function queueFeedback(row: StoredRow, scope: QueueScope, templates: ReadonlyMap<string, TemplateDefinition>, callerId: string) {
  const feedback = recordFeedback(row._ratings, templates, callerId);
  for (const template of scope.templates) {
    const raters = Object.keys(feedback.annotations[template.id] ?? {});
    const unrated = scope.annotators.filter((a) => !raters.includes(a)).length;
    const ratings = raters.map((annotatorId) => ({ annotatorId, value: feedback.annotations[template.id]![annotatorId]!.value, explanation: null }));
    feedback.annotation_aggregates[template.id] = { aggregate: aggregateOf(template, ratings, unrated) };
  }
  return feedback;
}

export interface QueuePage {
  records: Record<string, unknown>[];
  paginated: boolean;
}

/**
 * One page of the queue's records matching `query.filter`, in "as added" order (`recordId`: only
 * that record, for GET .../records/{rid}).
 */
export async function queuePage(c: Context<AppEnv>, scope: QueueScope, query: SearchQuery, recordId: string | null = null): Promise<QueuePage> {
  const want = query.offset + query.limit + 1;
  // Each project on every shard holding one of its partitions (an entry lives beside its record:
  // docs/partitions.md, "Annotations"); seqs are the queue's, so the shards' entries merge by seq.
  const firsts = await Promise.all(
    scope.projects.map((projectId) =>
      onProjectReadShards(c, projectId, async ({ db }) => {
        await bindAnnotationColumns(db, projectId, query, { templates: scope.templates, annotators: scope.annotators });
        const one = phaseOne(scope.queueId, projectId, query.filter, want, recordId);
        const [state, seqs] = await db.batch([projectStateStatement(db, projectId), db.prepare(one.sql).bind(one.param)]);
        if (!readableHere(state)) throw new ProjectNotOnShardError(projectId);
        return ((seqs?.results ?? []) as { seq: number }[]).map((row) => ({ seq: row.seq, projectId }));
      }),
    ),
  );
  const merged = firsts.flat().flatMap((a) => a.answer).sort((a, b) => a.seq - b.seq);
  const page = merged.slice(query.offset, query.offset + query.limit);
  const paginated = merged.length > query.offset + query.limit;
  const names = columnsFor(query);
  const templates = new Map(scope.templates.map((t) => [t.id, t]));
  const byProject = new Map<string, number[]>();
  for (const entry of page) byProject.set(entry.projectId, [...(byProject.get(entry.projectId) ?? []), entry.seq]);
  const rows = (
    await Promise.all(
      [...byProject].map(async ([projectId, seqs]) =>
        (
          await onProjectReadShards(c, projectId, async ({ db }) => {
            const two = phaseTwo(scope.queueId, projectId, seqs, names, scope.templates.map((t) => t.id));
            const [state, found] = await db.batch([projectStateStatement(db, projectId), db.prepare(two.sql).bind(two.param)]);
            if (!readableHere(state)) throw new ProjectNotOnShardError(projectId);
            return (found?.results ?? []) as StoredRow[];
          })
        ).flatMap((a) => a.answer),
      ),
    )
  )
    .flat()
    .sort((a, b) => Number(a._seq) - Number(b._seq));
  const callerId = c.get("principal").userId;
  const records = rows.map((row) => {
    const record = shapeRecord(row, query) as Record<string, unknown>;
    const feedback = queueFeedback(row, scope, templates, callerId);
    const stored = record.feedback_rating_info;
    return Object.assign(record, feedback, {
      feedback_rating_info: { ...(typeof stored === "object" && stored !== null && !Array.isArray(stored) ? stored : {}), ...feedback.feedback_rating_info },
    });
  });
  return { records, paginated };
}
