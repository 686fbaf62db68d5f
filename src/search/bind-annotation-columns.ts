/**
 * Annotation columns (`annotations/<template_id>`) and the `fully_annotated` leaf need the
 * project's templates, which live on its shard: this fills each annotation column with its
 * template's type (from the isolate's cache of template definitions, else one read on the shard
 * before the search's batch) and each `fully_annotated` leaf with the project, and refuses, with
 * a 422 at the leaf, a template the project does not have or a leaf that does not fit it
 * (like_dislike: boolean; star, score: number; tags: collection; choice, tree_choice, text: text).
 */
import { cachedDefinitions, rememberDefinitions } from "../annotations/template-definitions";
import { listTemplatesStatement, type TemplateDefinition, type TemplateRow } from "../annotations/template-store";
import type { FilterType } from "../columns/standard-columns";
import type { AnnotationType } from "../db/schema";
import { RequestValidationError } from "../http/errors";
import type { ValidationErrorItem } from "../http/validation-errors";
import type { AnnotationColumnRef } from "./search-columns";
import type { FilterLeaf, FilterNode, SearchQuery } from "./search-query";

const FILTER_TYPE_OF: Record<AnnotationType, FilterType> = {
  like_dislike: "boolean",
  star: "number",
  score: "number",
  tags: "collection",
  choice: "text",
  tree_choice: "text",
  text: "text",
};

function leavesOf(node: FilterNode, out: FilterLeaf[] = []): FilterLeaf[] {
  if (node.kind === "leaf") out.push(node.leaf);
  else if (node.kind === "not") leavesOf(node.child, out);
  else for (const child of node.children) leavesOf(child, out);
  return out;
}

/**
 * `queue`: a queue's search (contract section 8): `annotations/<id>` may name the queue's own
 * templates (their ratings live beside the records, under the queue template's id) as well as
 * the project's, and `fully_annotated` is scoped to the queue's templates and annotators.
 */
export interface QueueBinding {
  templates: readonly TemplateDefinition[];
  annotators: readonly string[];
}

export async function bindAnnotationColumns(db: D1Database, projectId: string, query: SearchQuery, queue?: QueueBinding): Promise<void> {
  const leaves = leavesOf(query.filter);
  // fully_annotated over the project's templates needs the live ones, read here on the project's
  // shard: every caller binds there first, before any other shard holding a partition is read
  // (src/partitions/read-shards.ts), and those shards test their records against this list.
  const unlisted: Extract<FilterLeaf, { kind: "fully_annotated" }>[] = [];
  for (const leaf of leaves) {
    if (leaf.kind !== "fully_annotated") continue;
    leaf.projectId = projectId;
    if (queue) leaf.queue = { templateIds: queue.templates.map((t) => t.id), annotatorIds: [...queue.annotators] };
    else if (leaf.liveTemplateIds === undefined) unlisted.push(leaf);
  }
  const refs: AnnotationColumnRef[] = leaves.flatMap((leaf) => (leaf.kind !== "fully_annotated" && leaf.column.kind === "annotation" ? [leaf.column] : []));
  if (query.sort?.column.kind === "annotation") refs.push(query.sort.column);
  if (refs.length === 0 && unlisted.length === 0) return;
  const ids = [...new Set(refs.map((ref) => ref.templateId))];
  const queueTemplates = new Map((queue?.templates ?? []).map((t) => [t.id, t]));
  const { found, missing: notCached } = cachedDefinitions(projectId, ids.filter((id) => !queueTemplates.has(id)));
  for (const [id, template] of queueTemplates) if (ids.includes(id)) found.set(id, template);
  const missing = notCached;
  if (missing.length > 0 || unlisted.length > 0) {
    const { results } = await listTemplatesStatement(db, projectId, false).all<TemplateRow>();
    for (const definition of rememberDefinitions(projectId, results)) if (ids.includes(definition.id)) found.set(definition.id, definition);
    for (const leaf of unlisted) leaf.liveTemplateIds = results.map((row) => row.id);
  }
  const issues: ValidationErrorItem[] = [];
  for (const ref of refs) {
    const template = found.get(ref.templateId);
    const loc = ref.loc ?? ["body"];
    if (!template) {
      issues.push({ loc: [...loc, "column_id"], msg: `Value error, unknown column '${ref.id}': the project has no such annotation template`, type: "value_error", input: ref.id });
      continue;
    }
    const fits = FILTER_TYPE_OF[template.annotationType];
    if (ref.filterType !== undefined && ref.filterType !== fits) {
      issues.push({ loc: [...loc, "type"], msg: `Value error, column '${ref.id}' (a ${template.annotationType} template) takes a ${fits} filter, not a ${ref.filterType} filter`, type: "value_error", input: ref.filterType });
      continue;
    }
    ref.annotationType = template.annotationType;
  }
  if (issues.length > 0) throw new RequestValidationError(issues);
}
