/**
 * The finishing step of a dataset: the state the service's cron and its users would leave on a
 * run once its records are in, so that the search benchmark measures the steady-state requests
 * (bench/results/dataset-history.md, "The dataset"):
 *
 * 1. the text index caught up: `records_text_backfill.indexed_through` raised to max(rid) by the
 *    cron's own catch-up statement (src/text-index/backfill.ts), in its chunks, each statement
 *    indexing the rows it passes (trigger `records_text_catch_up`);
 * 2. the bench project declaring `customer` as its analytics metadata key (the rows
 *    `PUT .../analytics_settings` writes), then every marked hour refreshed by the cron's
 *    REFRESH_STATEMENTS (src/analytics/metric-cells.ts), REFRESH_CHUNK_HOURS hours a batch;
 * 3. three annotation templates (like_dislike, star, score) and ratings on 10% of the records'
 *    count (90% on traces, the rest on spans; four annotators; seeded), written by the rating
 *    route's own upsert (src/annotations/rating-store.ts), which sets every column a rating
 *    write sets (the record's rid, family key and created_at that the annotation filter's index
 *    `annotation_ratings_template_order` reads).
 *
 * The service's statements are rendered, not copied: a recorder stands in for the D1 binding, so
 * a change to them changes what is built (their files are among the cache key's sources).
 */
import { createUser } from "../../src/admin/provisioning";
import { REFRESH_CHUNK_HOURS, REFRESH_STATEMENTS } from "../../src/analytics/metric-cells";
import { checkRating, isFault } from "../../src/annotations/rating-values";
import { upsertRatingsStatement } from "../../src/annotations/rating-store";
import { insertTemplateStatement, type TemplateDefinition } from "../../src/annotations/template-store";
import type { AnnotationConstraintsValue } from "../../src/annotations/template-schemas";
import { CATCH_UP_CHUNK_RIDS, CATCH_UP_SQL } from "../../src/text-index/backfill";
import { boundStatement, queryJson, runSqlite, type SqlStatement, type SqlValue } from "../lib/sqlite-cli";
import type { SeededRandom } from "../lib/seeded-random";
import type { BenchTenant } from "./bench-tenant";

/** The user_metadata key the bench project declares for analytics (the generator's `customer`). */
export const ANALYTICS_METADATA_KEY = "customer";
/** Ratings per record of the dataset (100,000 at 1M records). */
export const RATINGS_PER_RECORD = 0.1;
/** Share of the ratings on traces; the rest on spans. */
const TRACE_SHARE = 0.9;
/** Share of like_dislike ratings that are a dislike (value false): what the like = false shape finds. */
const DISLIKE_SHARE = 0.3;
/** The score template's range (score < 3 finds two values in five). */
const SCORE_RANGE = { min: 1, max: 5 };
/** Annotators: the bench admin and this many members. */
const MEMBER_ANNOTATORS = 3;
/** Record ids per rating statement (one JSON list parameter). */
const IDS_PER_STATEMENT = 500;

export interface SteadyState {
  textIndex: { indexedThrough: number };
  analytics: { metadataKey: string; cellHours: number };
  annotations: {
    /** Template ids by annotation type, for the shapes' `annotations/<template_id>` columns. */
    templates: { like_dislike: string; star: string; score: string };
    ratings: number;
    annotatorIds: string[];
  };
}

/** Renders a service statement builder's D1 call as shell input (nothing runs). */
const recorder = {
  prepare: (sql: string) => ({ bind: (...params: SqlValue[]) => ({ sql, params }) }),
} as unknown as D1Database;
const rendered = (statement: D1PreparedStatement) => statement as unknown as SqlStatement;

async function scalar(file: string, sql: string, params: SqlValue[] = []): Promise<number> {
  const [row] = await queryJson<{ v: number }>(file, { sql: `SELECT (${sql}) AS v`, params });
  return Number(row?.v ?? 0);
}

/** 1. The text index caught up, by the cron's statement and chunk (each one autocommitted, as a D1 call is). */
export async function catchUpTextIndex(file: string): Promise<number> {
  const maxRid = await scalar(file, "SELECT coalesce(max(rid), 0) FROM records");
  const from = await scalar(file, "SELECT indexed_through FROM records_text_backfill WHERE id = 1");
  const chunks = Math.ceil(Math.max(0, maxRid - from) / CATCH_UP_CHUNK_RIDS);
  const script = [".parameter init", "PRAGMA synchronous = OFF;", bindingsOf([CATCH_UP_CHUNK_RIDS])];
  for (let i = 0; i < chunks; i += 1) script.push(`${CATCH_UP_SQL};`);
  await runSqlite(file, `${script.join("\n")}\n`);
  const indexedThrough = await scalar(file, "SELECT indexed_through FROM records_text_backfill WHERE id = 1");
  if (indexedThrough !== maxRid) throw new Error(`text index catch-up stopped at rid ${indexedThrough} of ${maxRid}`);
  return indexedThrough;
}

function bindingsOf(params: SqlValue[]): string {
  return boundStatement({ sql: "SELECT 1", params }).replace(/SELECT 1;\n$/, "");
}

/**
 * 2. The declared metadata key (both rows the settings route writes: the catalog's, where the file
 * holds the catalog, and the shard's), then every marked hour refreshed.
 */
export async function refreshMetricCells(file: string, tenant: BenchTenant, declaredAtMicros: number): Promise<number> {
  const holdsCatalog = (await scalar(file, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'project_analytics_settings'")) > 0;
  await runSqlite(
    file,
    [
      ".parameter init",
      ...(holdsCatalog
        ? [
            boundStatement({
              sql: "INSERT INTO project_analytics_settings (project_id, metadata_key, updated_at) VALUES (?1, ?2, ?3)",
              params: [tenant.projectId, ANALYTICS_METADATA_KEY, declaredAtMicros],
            }),
          ]
        : []),
      boundStatement({ sql: "INSERT INTO metric_settings (project_id, metadata_key) VALUES (?1, ?2)", params: [tenant.projectId, ANALYTICS_METADATA_KEY] }),
    ].join("\n"),
  );
  const marked = await scalar(file, "SELECT count(*) FROM metric_dirty_hours");
  // One chunk as refreshMetricCells takes it (the oldest marked hours), then its batch, in one transaction.
  const chunk = [
    "BEGIN;",
    "DELETE FROM temp.sqlite_parameters;",
    `INSERT INTO temp.sqlite_parameters (key, value) SELECT '?1', json_group_array(json_array(run_id, hour)) FROM (SELECT run_id, hour FROM metric_dirty_hours ORDER BY run_id, hour LIMIT ${REFRESH_CHUNK_HOURS});`,
    ...REFRESH_STATEMENTS.map((statement) => `${statement};`),
    "COMMIT;",
  ].join("\n");
  const chunks = Math.ceil(marked / REFRESH_CHUNK_HOURS);
  await runSqlite(file, `.parameter init\nPRAGMA synchronous = OFF;\n${Array.from({ length: chunks }, () => chunk).join("\n")}\n`);
  const left = await scalar(file, "SELECT count(*) FROM metric_dirty_hours");
  if (left !== 0) throw new Error(`metric cell refresh left ${left} marked hours`);
  return scalar(file, "SELECT count(DISTINCT hour) FROM metric_cells WHERE run_id = ?1 AND grouping = ''", [tenant.logStreamId]);
}

const TEMPLATES: readonly { name: string; constraints: AnnotationConstraintsValue }[] = [
  { name: "Helpful", constraints: { annotation_type: "like_dislike" } },
  { name: "Quality", constraints: { annotation_type: "star" } },
  { name: "Correctness", constraints: { annotation_type: "score", ...SCORE_RANGE } },
];

/** A rating's value, drawn for its template's type. */
function drawValue(r: SeededRandom, template: TemplateDefinition): unknown {
  switch (template.annotationType) {
    case "like_dislike":
      return !r.chance(DISLIKE_SHARE);
    case "star":
      return r.int(1, 5);
    default:
      return r.int(SCORE_RANGE.min, SCORE_RANGE.max);
  }
}

async function recordIds(file: string, runId: string, recordType: "trace" | "span"): Promise<string[]> {
  const { stdout } = await runSqlite(
    file,
    `.parameter init\n.mode list\n${boundStatement({ sql: "SELECT id FROM records WHERE run_id = ?1 AND record_type = ?2 ORDER BY rid", params: [runId, recordType] })}`,
  );
  return stdout.split("\n").filter(Boolean);
}

/** 3. Templates and ratings, by the template and rating routes' statements. */
async function annotate(file: string, r: SeededRandom, tenant: BenchTenant, records: number, atMicros: number): Promise<SteadyState["annotations"]> {
  const members = [];
  for (let i = 0; i < MEMBER_ANNOTATORS; i += 1) {
    members.push(await createUser({ organizationId: tenant.organizationId, email: `bench-annotator-${i}-${r.hex(8)}@example.com`, password: `bench-${r.hex(16)}`, role: "member" }));
  }
  const annotatorIds = [tenant.userId, ...members.map((m) => m.user_id)];
  const definitions: TemplateDefinition[] = TEMPLATES.map((t) => ({ id: r.uuid(), name: t.name, annotationType: t.constraints.annotation_type, constraints: t.constraints, includeExplanation: false }));
  const statements: SqlStatement[] = [
    ...members.flatMap((m) => m.statements as SqlStatement[]),
    ...definitions.map((d) =>
      rendered(
        insertTemplateStatement(recorder, {
          id: d.id,
          organizationId: tenant.organizationId,
          projectId: tenant.projectId,
          name: d.name,
          constraints: d.constraints,
          includeExplanation: false,
          criteria: null,
          createdBy: tenant.userId,
          now: atMicros,
        }),
      ),
    ),
  ];

  const traces = await recordIds(file, tenant.logStreamId, "trace");
  const spans = await recordIds(file, tenant.logStreamId, "span");
  const target = Math.round(records * RATINGS_PER_RECORD);
  if (target > (traces.length + spans.length) * definitions.length * annotatorIds.length / 2) throw new Error(`too few records for ${target} ratings`);
  // Ratings grouped by (template, annotator, value): the rating upsert takes a list of record ids.
  const groups = new Map<string, { template: TemplateDefinition; annotatorId: string; value: unknown; ids: string[] }>();
  const seen = new Set<string>();
  while (seen.size < target) {
    const recordId = r.chance(TRACE_SHARE) ? r.pick(traces) : r.pick(spans);
    const template = r.pick(definitions);
    const annotatorId = r.pick(annotatorIds);
    const value = drawValue(r, template);
    const key = `${recordId}/${template.id}/${annotatorId}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const groupKey = `${template.id}/${annotatorId}/${JSON.stringify(value)}`;
    let group = groups.get(groupKey);
    if (!group) groups.set(groupKey, (group = { template, annotatorId, value, ids: [] }));
    group.ids.push(recordId);
  }
  for (const group of groups.values()) {
    const checked = checkRating(group.template, { annotation_type: group.template.annotationType, value: group.value }, []);
    if (isFault(checked)) throw new Error(`bench rating refused: ${checked.msg}`);
    for (let i = 0; i < group.ids.length; i += IDS_PER_STATEMENT) {
      const target = { projectId: tenant.projectId, templateId: group.template.id, annotatorId: group.annotatorId, recordIds: group.ids.slice(i, i + IDS_PER_STATEMENT), family: null };
      // RETURNING: the shell would print every id rated; the bench does not need them.
      statements.push(rendered(upsertRatingsStatement(recorder, target, checked, null, atMicros)));
    }
  }
  await runSqlite(file, [".parameter init", ".output /dev/null", "PRAGMA synchronous = OFF;", "BEGIN;", ...statements.map(boundStatement), "COMMIT;", ""].join("\n"));
  const ratings = await scalar(file, "SELECT count(*) FROM annotation_ratings WHERE project_id = ?1", [tenant.projectId]);
  if (ratings !== target) throw new Error(`annotation ratings: ${ratings} written, expected ${target}`);
  const byType = Object.fromEntries(definitions.map((d) => [d.annotationType, d.id])) as SteadyState["annotations"]["templates"];
  return { templates: byType, ratings, annotatorIds };
}

/** Brings a freshly loaded dataset to the steady state (see the top of this file). */
export async function finishDataset(file: string, r: SeededRandom, tenant: BenchTenant, records: number, atMicros: number): Promise<SteadyState> {
  const started = Date.now();
  const indexedThrough = await catchUpTextIndex(file);
  console.log(`  text index caught up to rid ${indexedThrough} (${((Date.now() - started) / 1000).toFixed(0)} s)`);
  const cellHours = await refreshMetricCells(file, tenant, atMicros);
  console.log(`  metric cells of ${cellHours} hours refreshed (${((Date.now() - started) / 1000).toFixed(0)} s)`);
  const annotations = await annotate(file, r, tenant, records, atMicros);
  console.log(`  ${annotations.ratings} ratings on 3 templates (${((Date.now() - started) / 1000).toFixed(0)} s)`);
  return { textIndex: { indexedThrough }, analytics: { metadataKey: ANALYTICS_METADATA_KEY, cellHours }, annotations };
}
