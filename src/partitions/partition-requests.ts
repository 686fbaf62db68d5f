/**
 * Rolling a partition from the admin command line (`npm run admin -- roll-partition`): plain
 * statements (positional `?` only) rendered to SQL for `wrangler d1 execute`, as
 * src/moves/move-requests.ts does for moves. The close and the open are the worker's
 * (src/partitions/roll-partition.ts): conditional, so a roll the worker does at the same moment
 * makes one of the two a no-op, never two open partitions.
 */
import type { Statement } from "../admin/provisioning";

/** The project (if it exists) with what placement needs from the catalog. */
export function rollContextStatements(projectId: string): Statement[] {
  return [
    { sql: "SELECT id, organization_id FROM projects WHERE id = ?", params: [projectId] },
    { sql: "SELECT id, seq, shard, state FROM project_partitions WHERE project_id = ? ORDER BY seq", params: [projectId] },
    // Shards the project left in a move refuse its writes for ever; a move under way owns both sides.
    {
      sql: "SELECT source AS shard FROM project_moves WHERE project_id = ? UNION SELECT target FROM project_moves WHERE project_id = ? AND phase NOT IN ('completed', 'failed')",
      params: [projectId, projectId],
    },
    { sql: "SELECT name, size_bytes FROM shards", params: [] },
    { sql: "SELECT shard, count(*) AS open FROM project_partitions WHERE state = 'open' GROUP BY shard", params: [] },
  ];
}

const NO_MOVE_ON = "NOT EXISTS (SELECT 1 FROM project_moves WHERE project_id = ? AND phase NOT IN ('completed', 'failed') AND ? IN (source, target))";

export function rollStatements(input: { projectId: string; openId: string; newId: string; shard: string; nowMicros: number }): Statement[] {
  return [
    // Not onto a shard a move of the project (or of a partition) is using, decided in both
    // statements alike (src/partitions/roll-partition.ts): a move asked for meanwhile makes this a no-op.
    {
      sql: `UPDATE project_partitions SET state = 'closed', closed_at = ? WHERE id = ? AND state = 'open' AND ${NO_MOVE_ON}`,
      params: [input.nowMicros, input.openId, input.projectId, input.shard],
    },
    {
      sql: `INSERT INTO project_partitions (id, project_id, seq, shard, state, opened_at, closed_at)
            SELECT ?, ?, (SELECT max(seq) + 1 FROM project_partitions WHERE project_id = ?), ?, 'open', ?, NULL
            WHERE NOT EXISTS (SELECT 1 FROM project_partitions WHERE project_id = ? AND state = 'open') AND ${NO_MOVE_ON}`,
      params: [input.newId, input.projectId, input.projectId, input.shard, input.nowMicros, input.projectId, input.projectId, input.shard],
    },
    { sql: "SELECT id, state FROM project_partitions WHERE project_id = ? ORDER BY seq", params: [input.projectId] },
  ];
}
