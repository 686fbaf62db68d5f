/**
 * The count routes (count-routes.ts). A count is the search statement itself, compiled for one
 * page of COUNT_CAP records in the native order and counted: the same filter compiler, access
 * paths, tenancy guard and validation as a search, so a count never disagrees with the pages it
 * totals, and it costs at most what a page of COUNT_CAP ids costs. One D1 round trip, like a search.
 */
import { database, nowMicros } from "../db/client";
import type { Router } from "../http/create-router";
import { ownedRunWithProject, runOwnershipQuery } from "../projects/run-access";
import { runSelectorOf } from "../projects/run-selector";
import { type ProjectShard, ProjectNotOnShardError } from "../shards/project-shard";
import { onProjectReadShards, spansShards } from "../partitions/read-shards";
import { projectPartitions } from "../partitions/partition-catalog";
import { projectStateStatement, readableHere } from "../shards/shard-membership";
import { bindAnnotationColumns } from "./bind-annotation-columns";
import { type CompileOptions, compileSearchQuery } from "./compile-search-query";
import { COUNT_CAP, countRoute } from "./count-routes";
import { normalizeSearchRequest } from "./normalize-search-request";
import { idsOnlyQuery } from "./search-query";
import { withinRetention } from "./retention-window";
import { withinTextIndexedAdmission } from "./search-cost";
import { SEARCH_FAMILIES } from "./search-routes";
import { throwOnCandidateOverflow } from "./text-driver";

export function registerCounts(app: Router): void {
  for (const family of SEARCH_FAMILIES) {
    app.openapi(countRoute(family), async (c) => {
      const { project_id } = c.req.valid("param");
      const body = c.req.valid("json");
      const principal = c.get("principal");
      const selector = runSelectorOf(body);
      const searched = normalizeSearchRequest(body, family, "partial");
      // Only the id of each match is read: no sort (the native order has an index), no counts.
      const query = idsOnlyQuery(searched, COUNT_CAP);

      const ownership = runOwnershipQuery(database(c.env.DB), principal, project_id, selector).toSQL();
      /** One shard's count of the matches, up to `cap` (the statement reads at most `cap` ids). */
      const countOn = (options: CompileOptions, cap: number) => async ({ db, route }: ProjectShard) => {
        const capped = idsOnlyQuery(searched, cap - 1);
        await bindAnnotationColumns(db, project_id, capped);
        // Expired records are not counted, as they are not shown (retention-window.ts).
        const page = compileSearchQuery(withinRetention(capped, route.retentionDays, nowMicros()), {
          organizationId: principal.organizationId,
          projectId: project_id,
          runId: selector.runId,
          runKind: selector.kind,
        }, options);
        const [state, owned, counted, candidates] = await db.batch<{ total: number }>([
          projectStateStatement(db, project_id),
          db.prepare(ownership.sql).bind(...ownership.params),
          // The statement returns at most `cap` rows (limit + 1).
          db.prepare(`SELECT count(*) AS "total" FROM (${page.sql})`).bind(...page.params),
          ...(page.candidateCount ? [db.prepare(page.candidateCount.sql).bind(...page.candidateCount.params)] : []),
        ]);
        if (!readableHere(state)) throw new ProjectNotOnShardError(project_id);
        throwOnCandidateOverflow(candidates, options);
        if ((owned?.results.length ?? 0) === 0) {
          // Not the caller's run (404), or one not yet copied to the shard: no records there.
          await ownedRunWithProject(database(c.env.DB), principal, project_id, selector);
          return 0;
        }
        return Number(counted?.results?.[0]?.total ?? 0);
      };
      // A record is in exactly one partition, so the partitions' counts add up. The answer needs
      // the total up to COUNT_CAP + 1 (one more says "capped"). A project on one shard counts up
      // to that in one round trip, as before partitions. On S shards (src/partitions/read-shards.ts),
      // each counts in parallel only up to its share, ceil((COUNT_CAP + 1) / S): if every shard
      // fills its share the total is past the cap (and the shards together read what one database
      // would); a shard below its share gave its exact count, and only the shards that filled
      // theirs count again, up to what is left (one more round trip, in parallel).
      const count = async (options: CompileOptions) => {
        const total = COUNT_CAP + 1;
        const spread = await spansShards(c, project_id);
        const shards = spread ? new Set((await projectPartitions(c.env, project_id)).map((p) => p.shard)).size : 1;
        const share = Math.ceil(total / shards);
        const first = await onProjectReadShards(c, project_id, countOn(options, share));
        const exact = first.filter((a) => a.answer < share).reduce((sum, a) => sum + a.answer, 0);
        const full = first.filter((a) => a.answer >= share).map((a) => a.shard);
        if (full.length === 0 || full.length * share + exact >= total) return full.length * share + exact;
        const again = await onProjectReadShards(c, project_id, async (shard) => (full.includes(shard.route.shard) ? countOn(options, total - exact)(shard) : null));
        return exact + again.reduce((sum, a) => sum + (a.answer ?? 0), 0);
      };
      // A count whose filter no index narrows (a substring, an unindexed column, ...) reads every
      // row of the run, as the search would: it is admitted by the same classification.
      const total = await withinTextIndexedAdmission(c.env, principal.organizationId, query, count);
      return c.json({ total_count: Math.min(total, COUNT_CAP), capped: total > COUNT_CAP }, 200);
    });
  }
}
