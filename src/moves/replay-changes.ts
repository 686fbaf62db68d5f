/**
 * The change log of a move (`shard_project_changes` on the source, written by triggers while the
 * project is `exporting` or `frozen`): the ids of records, held updates and tombstones changed
 * since the copy started, each with a version that every change bumps. Replaying a page copies
 * those ids again (copyIds with everything), then forgets each entry only if its version is still
 * the one read before the copy: an id changed again meanwhile stays logged and is copied again.
 */
import { RECORD_BYTES, type MoveScope, copyIds, cutByBytes } from "./copy-chunks";

const NEXT_CHANGES = `
SELECT c.record_id, c.version, coalesce((SELECT ${RECORD_BYTES} FROM records AS r WHERE r.project_id = ?1 AND r.id = c.record_id), 0) AS bytes
FROM (SELECT record_id, version FROM shard_project_changes WHERE project_id = ?1 AND record_id > ?2 ORDER BY record_id LIMIT ?3) AS c
ORDER BY c.record_id`;

const FORGET_CHANGES = `
DELETE FROM shard_project_changes
WHERE project_id = ?1 AND record_id IN (SELECT value ->> 0 FROM json_each(?2))
  AND version = (SELECT j.value ->> 1 FROM json_each(?2) AS j WHERE j.value ->> 0 = shard_project_changes.record_id)`;

export interface ReplayPage {
  /** The last id of the page; undefined: no entry after the cursor (the pass is over). */
  last: string | undefined;
  replayed: number;
}

export async function replayChangesPage(
  source: D1Database,
  target: D1Database,
  scope: MoveScope,
  after: string,
  limits: { rows: number; bytes: number },
): Promise<ReplayPage> {
  const { results } = await source.prepare(NEXT_CHANGES).bind(scope.projectId, after, limits.rows).all<{ record_id: string; version: number; bytes: number }>();
  const page = cutByBytes(results, limits.bytes, (row) => row);
  if (page.keys.length === 0) return { last: undefined, replayed: 0 };
  await copyIds(
    source,
    target,
    scope,
    page.keys.map((entry) => entry.record_id),
    true,
  );
  await source
    .prepare(FORGET_CHANGES)
    .bind(scope.projectId, JSON.stringify(page.keys.map((entry) => [entry.record_id, entry.version])))
    .run();
  return { last: page.last!.record_id, replayed: page.keys.length };
}

/** Entries left in the project's change log on the source. */
export async function changesLeft(source: D1Database, projectId: string): Promise<number> {
  const row = await source.prepare("SELECT count(*) AS n FROM shard_project_changes WHERE project_id = ?1").bind(projectId).first<{ n: number }>();
  return row?.n ?? 0;
}
