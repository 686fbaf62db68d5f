import type { Context } from "hono";
import { database, nowMicros } from "../db/client";
import type { AppEnv } from "../http/app-env";
import { ownedRunWithProject, runOwnershipQuery } from "../projects/run-access";
import type { RunSelector } from "../projects/run-selector";
import { type ProjectShard, ProjectNotOnShardError } from "../shards/project-shard";
import { onProjectReadShards, spansShards } from "../partitions/read-shards";
import { projectStateStatement, readableHere } from "../shards/shard-membership";
import { feedbackTemplatesStatement, withFeedback } from "../annotations/feedback-fields";
import { bindAnnotationColumns } from "./bind-annotation-columns";
import { type CompileOptions, compileSearchQuery } from "./compile-search-query";
import type { SearchQuery } from "./search-query";
import { withinRetention } from "./retention-window";
import { throwOnCandidateOverflow } from "./text-driver";
import type { SearchResponse } from "./search-schemas";
import { type StoredRow, shapeRecord } from "./shape-record";
import { keysetOf, mergeShardPages } from "./merge-shard-pages";
import { type ReadShards, deepPageByLead } from "./deep-page";
import { openPartitionOf, projectPartitions } from "../partitions/partition-catalog";

/**
 * Runs a search in ONE D1 round trip to the project's shard: the project's state there, the
 * run-ownership check (on the shard's copy of the run) and the page statement (which carries its
 * own counts) go in a single `batch`. The answer is withheld unless the ownership row came back,
 * and the page statement is itself confined to the caller's run (see compile-search-query.ts),
 * so another organization's project or run is a 404 and its records are never read into a
 * response. The route to the shard is cached (src/shards/project-routing.ts).
 *
 * A project whose partitions sit on several shards (src/partitions/read-shards.ts) is searched on
 * each, in parallel, and the pages merged by the sort key, the id breaking ties
 * (merge-shard-pages.ts). The token stays the API's offset: a first page (offset 0) is each
 * shard's first page, merged. A later one (deep-page.ts) is found from the shard that leads the
 * order when its (offset - 1)-th match comes before every other shard's first (partitions are
 * time-ordered, so the usual case: one round trip per shard in native order); otherwise each
 * shard's first `offset` matches, narrow, merged, give the record just before the page, and each
 * shard answers the page after that record (SearchQuery.after). So every record comes once,
 * in one database's order, whatever the partitions. A project on one shard makes exactly the
 * round trip it made before partitions.
 */
export async function runSearch(
  c: Context<AppEnv>,
  projectId: string,
  selector: RunSelector,
  query: SearchQuery,
  options: CompileOptions,
): Promise<SearchResponse> {
  const principal = c.get("principal");
  const ownership = runOwnershipQuery(database(c.env.DB), principal, projectId, selector).toSQL();
  const onEveryShard = (searched: SearchQuery) => onProjectReadShards(c, projectId, (shard) => readShardPage(c, shard, projectId, selector, searched, options, ownership));
  if (query.offset > 0 && (await spansShards(c, projectId))) {
    // A deep page across shards: found from a lead shard when the partitions' order allows
    // (deep-page.ts), else by merging every shard's first `offset` matches, narrow. Each shard's
    // page at the offset itself is never read (it would skip `offset` entries on every shard).
    let templates: D1Result<StoredRow> | undefined;
    const readShards: ReadShards = async (pick) => {
      const read = await onProjectReadShards(c, projectId, async (shard) => {
        const picked = pick(shard.route.shard);
        return picked ? readShardPage(c, shard, projectId, selector, picked, options, ownership) : null;
      });
      // The templates are the project's: read on its own shard.
      for (const a of read) if (a.home && a.answer) templates = a.answer.templates;
      return read.flatMap((a) => (a.answer ? [{ shard: a.shard, rows: a.answer.rows }] : []));
    };
    const merged = (await deepPageByLead(query, readShards, await nativeLeadShard(c, projectId, query))) ?? (await deepPageByNarrowMerge(query, readShards));
    const response = mergedResponse(merged.rows, merged.more, query);
    if (query.projection.feedback) withFeedback(response.records, merged.rows, templates, principal.userId);
    return response;
  }
  const answers = await onEveryShard(query);
  const home = answers.find((a) => a.home)!.answer;
  if (answers.length === 1) {
    const response = pageResponse(home.rows, query);
    if (query.projection.feedback && home.owned) withFeedback(response.records, home.rows, home.templates, principal.userId);
    return response;
  }
  // A first page: each shard's first page, merged.
  const merged = mergeShardPages(answers.map((a) => a.answer.rows), query);
  const response = mergedResponse(merged.rows, merged.more, query);
  // The templates are the project's: read on its own shard.
  if (query.projection.feedback) withFeedback(response.records, merged.rows, home.templates, principal.userId);
  return response;
}

/**
 * The native order's lead for a deep page (deep-page.ts): the shard of the open partition, which
 * holds the newest roots. Undefined for other sorts (the lead is then found by the first pages).
 */
async function nativeLeadShard(c: Context<AppEnv>, projectId: string, query: SearchQuery): Promise<string | undefined> {
  const native = query.sort === null || (query.sort.column.kind === "standard" && query.sort.column.id === "created_at" && !query.sort.ascending);
  if (!native) return undefined;
  return openPartitionOf(await projectPartitions(c.env, projectId))?.shard;
}

/**
 * The fallback of a deep page (the shards' matches interleave before it): each shard's first
 * `offset` matches, narrow (sort value and id, no text, so the byte budget cannot cut them),
 * merged to find the record just before the page; then each shard's page after that record
 * (SearchQuery.after), merged. Exact; costs `offset` narrow rows per shard.
 */
async function deepPageByNarrowMerge(query: SearchQuery, readShards: ReadShards): Promise<{ rows: StoredRow[]; more: boolean }> {
  const narrow: SearchQuery = {
    ...query,
    offset: 0,
    limit: query.offset,
    projection: { columns: [], metrics: new Set(), feedback: false },
    includeCounts: false,
    includeMetricInfo: false,
    truncateFields: false,
  };
  const before = mergeShardPages((await readShards(() => narrow)).map((a) => a.rows), narrow);
  if (before.rows.length < query.offset) return { rows: [], more: false };
  const last = before.rows[before.rows.length - 1]!;
  const after: SearchQuery = { ...query, offset: 0, after: keysetOf(last) };
  return mergeShardPages((await readShards(() => after)).map((a) => a.rows), query);
}

interface ShardPage {
  rows: StoredRow[];
  templates: D1Result<StoredRow> | undefined;
  owned: boolean;
}

/** One shard's page of the search, in one round trip (see runSearch). */
async function readShardPage(
  c: Context<AppEnv>,
  { db, route }: ProjectShard,
  projectId: string,
  selector: RunSelector,
  query: SearchQuery,
  options: CompileOptions,
  ownership: { sql: string; params: unknown[] },
): Promise<ShardPage> {
  const principal = c.get("principal");
  await bindAnnotationColumns(db, projectId, query);
  const page = compileSearchQuery(withinRetention(query, route.retentionDays, nowMicros()), {
    organizationId: principal.organizationId,
    projectId,
    runId: selector.runId,
    runKind: selector.kind,
  }, options);
  const feedback = query.projection.feedback;
  const [state, owned, rows, ...optional] = await db.batch<StoredRow>([
    projectStateStatement(db, projectId),
    db.prepare(ownership.sql).bind(...ownership.params),
    db.prepare(page.sql).bind(...page.params),
    ...(feedback ? [feedbackTemplatesStatement(db, projectId)] : []),
    ...(page.candidateCount ? [db.prepare(page.candidateCount.sql).bind(...page.candidateCount.params)] : []),
  ]);
  const templates = feedback ? optional.shift() : undefined;
  const candidates = page.candidateCount ? optional.shift() : undefined;
  if (!readableHere(state)) throw new ProjectNotOnShardError(projectId);
  throwOnCandidateOverflow(candidates, options);
  if ((owned?.results.length ?? 0) === 0) {
    // Not the caller's run (a 404 from the catalog), or a run whose copy has not reached the
    // shard: it has no records there yet (a record's write copies its run first).
    await ownedRunWithProject(database(c.env.DB), principal, projectId, selector);
    return { rows: [], templates, owned: false };
  }
  return { rows: (rows?.results ?? []) as StoredRow[], templates, owned: true };
}

/** The response of a page (one shard's, or merged across shards by runSearch): `more` says records follow it. */
function mergedResponse(rows: StoredRow[], more: boolean, query: SearchQuery): SearchResponse {
  const records = rows.map((row) => shapeRecord(row, query));
  const last = records[records.length - 1];
  return {
    records,
    num_rows: records.length,
    num_records: records.length,
    starting_token: query.offset,
    limit: query.limit,
    paginated: more,
    next_starting_token: more ? query.offset + records.length : null,
    last_row_id: last ? String(last.id) : null,
  };
}

/**
 * The page and its pagination fields, from the rows the statement returned: limit + 1 (to know
 * whether more follow), or fewer when the page's byte budget cut it (compile-search-query.ts):
 * then more follow too, from the first record not returned.
 */
function pageResponse(rows: StoredRow[], query: SearchQuery): SearchResponse {
  const read = Number((rows[0] as { _rows_read?: number } | undefined)?._rows_read ?? rows.length);
  const cutBySize = rows.length < read;
  return mergedResponse(rows.slice(0, query.limit), cutBySize || rows.length > query.limit, query);
}
