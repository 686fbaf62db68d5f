/**
 * The feedback fields of a record (contract section 8, "On records"), computed from its rating
 * rows when the record is read: `annotations`, `annotation_aggregates` (each wrapped in a key
 * named `aggregate`, as Galileo's clients parse it), `annotation_agreement`,
 * `feedback_rating_info` (the caller's own ratings) and `annotation_queue_ids`. Nothing here is
 * a maintained counter: the aggregates are as exact as the rows, whatever ratings ran
 * concurrently (docs/annotations.md, "Aggregates and agreement").
 *
 * The page statement carries each record's ratings as one JSON column (RATINGS_JSON); only the
 * live templates' show (recordFeedback takes the live ones), so a deleted template's ratings never
 * show while they are purged.
 */
import type { AnnotationType } from "../db/schema";
import type { TemplateDefinition } from "./template-store";

/**
 * SQL: the ratings of the record whose row key is `ridExpression`, as a JSON array of
 * [template_id, annotator_id, value (JSON text), explanation]. Served by the ratings' primary key.
 * Not joined to the templates: a record in a partition on another shard has its ratings there but
 * the project's templates on the project's shard (docs/partitions.md, "Annotations"), so the
 * ratings of templates not live (deleted, being purged) are dropped by recordFeedback, which
 * takes the live templates read on the project's shard.
 */
export function ratingsJsonSql(ridExpression: string): string {
  return feedbackJsonSql(
    `(SELECT json_group_array(json_array("fa"."template_id", "fa"."annotator_id", "fa"."value", "fa"."explanation")) FROM "annotation_ratings" AS "fa" WHERE "fa"."record_rid" = ${ridExpression})`,
    ridExpression,
  );
}

/**
 * SQL: `ratings` (a JSON array of tuples, as ratingsJsonSql selects them) with the ids of the
 * annotation queues that list the record (annotation_queue_entries, keyed by the record first),
 * as one JSON object {r: ratings, q: queue ids}.
 */
export function feedbackJsonSql(ratings: string, ridExpression: string): string {
  return `json_object('r', json(${ratings}), 'q', json((SELECT json_group_array("fq"."queue_id") FROM "annotation_queue_entries" AS "fq" WHERE "fq"."record_rid" = ${ridExpression})))`;
}

/** The column name the page statement gives RATINGS_JSON. */
export const RATINGS_COLUMN = "_ratings";

type RatingTuple = [templateId: string, annotatorId: string, value: string, explanation: string | null];

interface Rating {
  annotatorId: string;
  value: unknown;
  explanation: string | null;
}

/** Score buckets: at most this many, of equal integer width over [min, max]. */
export const SCORE_BUCKETS = 5;

interface FeedbackJson {
  r: RatingTuple[];
  q: string[];
}

function parseFeedbackJson(json: unknown): FeedbackJson {
  return typeof json === "string" ? (JSON.parse(json) as FeedbackJson) : { r: [], q: [] };
}

function parseRatings(tuples: readonly RatingTuple[]): Map<string, Rating[]> {
  const byTemplate = new Map<string, Rating[]>();
  for (const [templateId, annotatorId, value, explanation] of tuples) {
    let list = byTemplate.get(templateId);
    if (!list) byTemplate.set(templateId, (list = []));
    list.push({ annotatorId, value: JSON.parse(value) as unknown, explanation });
  }
  for (const list of byTemplate.values()) list.sort((a, b) => (a.annotatorId < b.annotatorId ? -1 : 1));
  return byTemplate;
}

const average = (values: readonly number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;

/** Buckets of equal integer width covering [min, max]: [min_inclusive, max_exclusive). */
export function scoreBuckets(min: number, max: number): { min_inclusive: number; max_exclusive: number }[] {
  const width = Math.ceil((max - min + 1) / SCORE_BUCKETS);
  const buckets = [];
  for (let low = min; low <= max; low += width) buckets.push({ min_inclusive: low, max_exclusive: Math.min(low + width, max + 1) });
  return buckets;
}

function countValues(values: readonly unknown[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) for (const item of Array.isArray(value) ? value : [value]) counts[String(item)] = (counts[String(item)] ?? 0) + 1;
  return counts;
}

/** The aggregate of one template's ratings on one record; `unrated` annotators (queues) else 0. */
export function aggregateOf(template: TemplateDefinition, ratings: readonly Rating[], unrated = 0): Record<string, unknown> {
  const values = ratings.map((r) => r.value);
  const annotation_type: AnnotationType = template.annotationType;
  switch (template.constraints.annotation_type) {
    case "like_dislike": {
      const likes = values.filter((v) => v === true).length;
      const dislikes = values.length - likes;
      // A tie: as many likes as dislikes (the record's verdict is undecided).
      return { annotation_type, like_count: likes, dislike_count: dislikes, unrated_count: unrated, tie_count: values.length > 0 && likes === dislikes ? 1 : 0 };
    }
    case "star": {
      const counts: Record<string, number> = { "1": 0, "2": 0, "3": 0, "4": 0, "5": 0 };
      for (const v of values) counts[String(v)] = (counts[String(v)] ?? 0) + 1;
      return { annotation_type, average: values.length ? average(values as number[]) : null, counts, unrated_count: unrated };
    }
    case "score": {
      const buckets = scoreBuckets(template.constraints.min, template.constraints.max).map((b) => ({
        ...b,
        count: (values as number[]).filter((v) => v >= b.min_inclusive && v < b.max_exclusive).length,
      }));
      return { annotation_type, average: values.length ? average(values as number[]) : null, buckets, unrated_count: unrated };
    }
    case "tags":
    case "choice":
    case "tree_choice":
      return { annotation_type, counts: countValues(values), unrated_count: unrated };
    case "text":
      return { annotation_type, count: values.length, unrated_count: unrated };
  }
}

function jaccard(a: readonly unknown[], b: readonly unknown[]): number {
  const left = new Set(a.map(String));
  const right = new Set(b.map(String));
  const union = new Set([...left, ...right]);
  if (union.size === 0) return 1;
  let shared = 0;
  for (const item of left) if (right.has(item)) shared += 1;
  return shared / union.size;
}

/**
 * How much the annotators agree on one record, 0..1, over every pair of ratings: the share of
 * pairs with equal values; score: 1 - mean |a - b| / (max - min); tags: mean Jaccard index.
 * Undefined for text and for fewer than two ratings.
 */
export function agreementOf(template: TemplateDefinition, ratings: readonly Rating[]): number | undefined {
  if (ratings.length < 2 || template.annotationType === "text") return undefined;
  let total = 0;
  let pairs = 0;
  for (let i = 0; i < ratings.length; i++) {
    for (let j = i + 1; j < ratings.length; j++) {
      const a = ratings[i]!.value;
      const b = ratings[j]!.value;
      const c = template.constraints;
      if (c.annotation_type === "score") total += 1 - Math.abs((a as number) - (b as number)) / (c.max - c.min);
      else if (c.annotation_type === "tags") total += jaccard(a as unknown[], b as unknown[]);
      else total += a === b ? 1 : 0;
      pairs += 1;
    }
  }
  return total / pairs;
}

export interface RecordFeedback {
  annotations: Record<string, Record<string, { annotation_type: string; value: unknown; explanation: string | null }>>;
  annotation_aggregates: Record<string, { aggregate: Record<string, unknown> }>;
  annotation_agreement: Record<string, number>;
  feedback_rating_info: Record<string, { feedback_type: string; value: unknown; explanation: string | null }>;
  annotation_queue_ids: string[];
}

/**
 * The feedback fields of one record from its RATINGS_JSON column. Templates without a rating on
 * the record are left out of every map; a rating whose template is not in `templates` (deleted
 * since) is ignored.
 */
export function recordFeedback(ratingsJson: unknown, templates: ReadonlyMap<string, TemplateDefinition>, callerId: string): RecordFeedback {
  const stored = parseFeedbackJson(ratingsJson);
  const feedback: RecordFeedback = { annotations: {}, annotation_aggregates: {}, annotation_agreement: {}, feedback_rating_info: {}, annotation_queue_ids: stored.q };
  for (const [templateId, ratings] of parseRatings(stored.r)) {
    const template = templates.get(templateId);
    if (!template) continue;
    const type = template.annotationType;
    feedback.annotations[templateId] = Object.fromEntries(ratings.map((r) => [r.annotatorId, { annotation_type: type, value: r.value, explanation: r.explanation }]));
    feedback.annotation_aggregates[templateId] = { aggregate: aggregateOf(template, ratings) };
    const agreement = agreementOf(template, ratings);
    if (agreement !== undefined) feedback.annotation_agreement[templateId] = agreement;
    const own = ratings.find((r) => r.annotatorId === callerId);
    if (own) feedback.feedback_rating_info[templateId] = { feedback_type: type, value: own.value, explanation: own.explanation };
  }
  return feedback;
}
