/**
 * A queue's progress and details, gathered from every shard that holds its records (one read
 * batch per project of the queue, in parallel) and summed (docs/annotations.md, "Annotation
 * queues"). Nothing is a maintained counter: every figure is counted from the entry and rating
 * rows when asked, so concurrent ratings, removals and deletions cannot make it drift.
 *
 * A record counts as annotated by a user when the user rated it with every live template of the
 * queue; it is fully annotated when every annotator of the queue did.
 */
import type { Context } from "hono";
import type { AppEnv } from "../http/app-env";
import { readOnEveryShard } from "../annotations/annotation-shard";
import { aggregateOf } from "../annotations/record-feedback";
import type { TemplateDefinition } from "../annotations/template-store";

export interface QueueScope {
  queueId: string;
  projects: readonly string[];
  templates: readonly TemplateDefinition[];
  /** The users whose role may rate (owner, editor, annotator). */
  annotators: readonly string[];
}

const ENTRIES_COUNT = `SELECT count(*) AS n FROM annotation_queue_entries WHERE queue_id = ?1 AND project_id = ?2`;

// Per annotator, the queue's records of the project it rated with every template of ?3.
const ANNOTATED_BY = `
SELECT annotator_id, count(*) AS n FROM (
  SELECT a.annotator_id FROM annotation_queue_entries AS e CROSS JOIN annotation_ratings AS a ON a.record_rid = e.record_rid
  WHERE e.queue_id = ?1 AND e.project_id = ?2 AND a.template_id IN (SELECT value FROM json_each(?3))
  GROUP BY a.annotator_id, a.record_rid HAVING count(*) = json_array_length(?3))
GROUP BY annotator_id`;

// The queue's records of the project rated with every template of ?3 by every annotator of ?4.
const FULLY_ANNOTATED = `
SELECT count(*) AS n FROM (
  SELECT 1 FROM annotation_queue_entries AS e CROSS JOIN annotation_ratings AS a ON a.record_rid = e.record_rid
  WHERE e.queue_id = ?1 AND e.project_id = ?2 AND a.template_id IN (SELECT value FROM json_each(?3)) AND a.annotator_id IN (SELECT value FROM json_each(?4))
  GROUP BY a.record_rid HAVING count(*) = json_array_length(?3) * json_array_length(?4))`;

// Ratings with the queue's templates on its records of the project, counted by template,
// annotator and value (text values are not told apart: their aggregate is a count).
const RATING_COUNTS = `
SELECT a.template_id, a.annotator_id, CASE WHEN a.template_id IN (SELECT value FROM json_each(?4)) THEN 'null' ELSE a.value END AS value, count(*) AS n
FROM annotation_queue_entries AS e CROSS JOIN annotation_ratings AS a ON a.record_rid = e.record_rid
WHERE e.queue_id = ?1 AND e.project_id = ?2 AND a.template_id IN (SELECT value FROM json_each(?3))
GROUP BY a.template_id, a.annotator_id, 3`;

/**
 * Agreement per (record, template) over every pair of its ratings (contract section 8: equal
 * values; score 1 - |a - b| / (max - min); tags the Jaccard index), bucketed by tenths; ?3 maps
 * each template to {kind, range}. Text templates are not in ?3: they have no agreement.
 */
const AGREEMENT_BUCKETS = `
WITH q AS (
  SELECT a.record_rid, a.template_id, a.annotator_id, a.value, a.num_value FROM annotation_queue_entries AS e CROSS JOIN annotation_ratings AS a ON a.record_rid = e.record_rid
  WHERE e.queue_id = ?1 AND e.project_id = ?2 AND a.template_id IN (SELECT key FROM json_each(?3))),
per_record AS (
  SELECT x.record_rid, x.template_id, avg(CASE t.value ->> 'kind'
    WHEN 'score' THEN 1.0 - abs(x.num_value - y.num_value) / (t.value ->> 'range')
    WHEN 'tags' THEN (SELECT CASE WHEN u = 0 THEN 1.0 ELSE s * 1.0 / u END FROM (SELECT s, json_array_length(x.value) + json_array_length(y.value) - s AS u FROM
      (SELECT count(*) AS s FROM json_each(x.value) AS xi WHERE xi.value IN (SELECT value FROM json_each(y.value)))))
    ELSE CASE WHEN x.value = y.value THEN 1.0 ELSE 0.0 END END) AS agreement
  FROM q AS x JOIN q AS y ON y.record_rid = x.record_rid AND y.template_id = x.template_id AND y.annotator_id > x.annotator_id
  JOIN json_each(?3) AS t ON t.key = x.template_id
  GROUP BY x.record_rid, x.template_id)
SELECT min(9, CAST(agreement * 10 AS INTEGER)) AS bucket, count(*) AS n, sum(agreement) AS total FROM per_record GROUP BY 1`;

const templateIds = (scope: QueueScope) => JSON.stringify(scope.templates.map((t) => t.id));

export interface QueueProgress {
  records: number;
  annotatedBy: Map<string, number>;
}

/** How many records the queue holds, and how many each user annotated fully. */
export async function queueProgress(c: Context<AppEnv>, scope: QueueScope): Promise<QueueProgress> {
  const ids = templateIds(scope);
  // Every shard holding a partition of each project: an entry lives beside its record (docs/partitions.md).
  const perProject = (
    await Promise.all(
      scope.projects.map((projectId) =>
        readOnEveryShard(c, projectId, (db) => [
          db.prepare(ENTRIES_COUNT).bind(scope.queueId, projectId),
          ...(scope.templates.length > 0 ? [db.prepare(ANNOTATED_BY).bind(scope.queueId, projectId, ids)] : []),
        ]),
      ),
    )
  ).flat();
  const progress: QueueProgress = { records: 0, annotatedBy: new Map() };
  for (const [count, annotated] of perProject) {
    progress.records += Number((count?.results[0] as { n: number } | undefined)?.n ?? 0);
    for (const row of (annotated?.results ?? []) as { annotator_id: string; n: number }[]) {
      progress.annotatedBy.set(row.annotator_id, (progress.annotatedBy.get(row.annotator_id) ?? 0) + row.n);
    }
  }
  return progress;
}

/** The progress fields of AnnotationQueueResponse. */
export function progressFields(scope: QueueScope, progress: QueueProgress) {
  const num_logs_annotated: Record<string, number> = {};
  const share: Record<string, number> = {};
  for (const annotator of scope.annotators) {
    const n = progress.annotatedBy.get(annotator) ?? 0;
    num_logs_annotated[annotator] = n;
    share[annotator] = progress.records === 0 ? 0 : n / progress.records;
  }
  const values = Object.values(share);
  return {
    num_log_records: progress.records,
    num_logs_annotated,
    progress: share,
    // The mean of the annotators' shares: the share of (record, annotator) pairs done.
    overall_progress: values.length === 0 ? 0 : values.reduce((a, b) => a + b, 0) / values.length,
  };
}

/** Agreement buckets of tenths: [0, 0.1), ..., [0.9, 1.0] (the last includes 1). */
export const AGREEMENT_BUCKET_COUNT = 10;

/** GET .../{qid}/details: fully annotated records, aggregates (overall and per annotator), agreement. */
export async function queueDetails(c: Context<AppEnv>, scope: QueueScope) {
  const ids = templateIds(scope);
  const textIds = JSON.stringify(scope.templates.filter((t) => t.annotationType === "text").map((t) => t.id));
  const kinds = JSON.stringify(
    Object.fromEntries(
      scope.templates
        .filter((t) => t.annotationType !== "text")
        .map((t) => [t.id, { kind: t.constraints.annotation_type === "score" ? "score" : t.annotationType === "tags" ? "tags" : "equal", range: t.constraints.annotation_type === "score" ? t.constraints.max - t.constraints.min : 1 }]),
    ),
  );
  const annotators = JSON.stringify(scope.annotators);
  const perProject =
    scope.templates.length === 0
      ? []
      : (await Promise.all(
          scope.projects.map((projectId) =>
            readOnEveryShard(c, projectId, (db) => [
              db.prepare(ENTRIES_COUNT).bind(scope.queueId, projectId),
              db.prepare(FULLY_ANNOTATED).bind(scope.queueId, projectId, ids, annotators),
              db.prepare(RATING_COUNTS).bind(scope.queueId, projectId, ids, textIds),
              db.prepare(AGREEMENT_BUCKETS).bind(scope.queueId, projectId, kinds),
            ]),
          ),
        )).flat();
  let records = 0;
  let fully = 0;
  // template -> annotator -> value (JSON text) -> count
  const counts = new Map<string, Map<string, Map<string, number>>>();
  const buckets = Array.from({ length: AGREEMENT_BUCKET_COUNT }, (_, i) => ({ min_inclusive: i / 10, max_exclusive: (i + 1) / 10, count: 0 }));
  let agreementSum = 0;
  let agreementCount = 0;
  for (const [count, full, ratings, agreement] of perProject) {
    records += Number((count?.results[0] as { n: number } | undefined)?.n ?? 0);
    fully += Number((full?.results[0] as { n: number } | undefined)?.n ?? 0);
    for (const row of (ratings?.results ?? []) as { template_id: string; annotator_id: string; value: string; n: number }[]) {
      let byAnnotator = counts.get(row.template_id);
      if (!byAnnotator) counts.set(row.template_id, (byAnnotator = new Map()));
      let byValue = byAnnotator.get(row.annotator_id);
      if (!byValue) byAnnotator.set(row.annotator_id, (byValue = new Map()));
      byValue.set(row.value, (byValue.get(row.value) ?? 0) + row.n);
    }
    for (const row of (agreement?.results ?? []) as { bucket: number; n: number; total: number }[]) {
      buckets[row.bucket]!.count += row.n;
      agreementSum += row.total;
      agreementCount += row.n;
    }
  }
  const ratingsOf = (byValue: Iterable<[string, number]>) =>
    [...byValue].flatMap(([value, n]) => Array.from({ length: n }, () => ({ annotatorId: "", value: JSON.parse(value) as unknown, explanation: null })));
  const annotation_aggregates: Record<string, { aggregate: Record<string, unknown> }> = {};
  const annotation_aggregates_by_annotator: Record<string, Record<string, { aggregate: Record<string, unknown> }>> = {};
  for (const template of scope.templates) {
    const byAnnotator = counts.get(template.id) ?? new Map<string, Map<string, number>>();
    const all = [...byAnnotator.entries()];
    const rated = all.filter(([annotator]) => scope.annotators.includes(annotator)).reduce((sum, [, byValue]) => sum + [...byValue.values()].reduce((a, b) => a + b, 0), 0);
    // Unrated: (record, annotator) pairs of the queue's annotators without a rating.
    const unrated = Math.max(0, records * scope.annotators.length - rated);
    annotation_aggregates[template.id] = { aggregate: aggregateOf(template, ratingsOf(all.flatMap(([, byValue]) => [...byValue])), unrated) };
    for (const annotator of scope.annotators) {
      const byValue = byAnnotator.get(annotator) ?? new Map<string, number>();
      const done = [...byValue.values()].reduce((a, b) => a + b, 0);
      (annotation_aggregates_by_annotator[annotator] ??= {})[template.id] = { aggregate: aggregateOf(template, ratingsOf(byValue), Math.max(0, records - done)) };
    }
  }
  return {
    num_logs_fully_annotated: fully,
    annotation_aggregates,
    annotation_aggregates_by_annotator,
    overall_annotation_agreement: { buckets, average_agreement: agreementCount === 0 ? null : agreementSum / agreementCount },
  };
}
