import type { Context } from "hono";
import { database, nowMicros } from "../db/client";
import type { AppEnv } from "../http/app-env";
import { ownedRunWithProject, runOwnershipQuery } from "../projects/run-access";
import type { RunSelector } from "../projects/run-selector";
import { ProjectNotOnShardError, onProjectShard } from "../shards/project-shard";
import { projectStateStatement, readableHere } from "../shards/shard-membership";
import { feedbackTemplatesStatement, withFeedback } from "../annotations/feedback-fields";
import { bindAnnotationColumns } from "./bind-annotation-columns";
import { type CompileOptions, compileSearchQuery } from "./compile-search-query";
import type { SearchQuery } from "./search-query";
import { withinRetention } from "./retention-window";
import { throwOnCandidateOverflow } from "./text-driver";
import type { SearchResponse } from "./search-schemas";
import { type StoredRow, shapeRecord } from "./shape-record";

/**
 * Runs a search in ONE D1 round trip to the project's shard: the project's state there, the
 * run-ownership check (on the shard's copy of the run) and the page statement (which carries its
 * own counts) go in a single `batch`. The answer is withheld unless the ownership row came back,
 * and the page statement is itself confined to the caller's run (see compile-search-query.ts),
 * so another organization's project or run is a 404 and its records are never read into a
 * response. The route to the shard is cached (src/shards/project-routing.ts).
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
  return onProjectShard(c, projectId, "read", async ({ db, route }) => {
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
      return pageResponse([], query);
    }
    const response = pageResponse((rows?.results ?? []) as StoredRow[], query);
    if (feedback) withFeedback(response.records, (rows?.results ?? []) as StoredRow[], templates, principal.userId);
    return response;
  });
}

/**
 * The page and its pagination fields, from the rows the statement returned: limit + 1 (to know
 * whether more follow), or fewer when the page's byte budget cut it (compile-search-query.ts):
 * then more follow too, from the first record not returned.
 */
function pageResponse(rows: StoredRow[], query: SearchQuery): SearchResponse {
  const read = Number((rows[0] as { _rows_read?: number } | undefined)?._rows_read ?? rows.length);
  const cutBySize = rows.length < read;
  const paginated = cutBySize || rows.length > query.limit;
  const records = rows.slice(0, query.limit).map((row) => shapeRecord(row, query));
  const last = records[records.length - 1];
  return {
    records,
    num_rows: records.length,
    num_records: records.length,
    starting_token: query.offset,
    limit: query.limit,
    paginated,
    next_starting_token: paginated ? query.offset + records.length : null,
    last_row_id: last ? String(last.id) : null,
  };
}
