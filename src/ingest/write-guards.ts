/**
 * Checks that must hold for a write batch to commit, run inside the batch itself (D1 has no
 * interactive transactions, so a check read in an earlier round trip could be outrun by a
 * concurrent write). A failing check inserts a row into `write_refusals`, whose trigger of that
 * reason aborts the whole batch (migration `write_refusals`); runWriteBatch maps the message.
 *
 * Parent chains (contract section 12): a record never becomes its own ancestor, and no chain of
 * parents is deeper than MAX_CHAIN_DEPTH records. Every walk of the parents (deletion, dry runs)
 * can then stop at that depth. The batch's own records are checked in memory; the parents it
 * names outside itself by one bounded recursive statement placed after the upsert, so that it
 * walks the chains as they will be stored (a re-sent span moved under its own descendant walks
 * round the loop until the bound and is refused). Cost: one primary-key probe per stored level
 * above each outside parent, usually a handful per batch.
 */
import { RequestValidationError } from "../http/errors";
import type { RecordBatch } from "./record-rows";

/**
 * The deepest a chain of parents may be, counted in records: a session, its trace and 254 levels
 * of spans, the most a request's JSON can nest (512 levels, src/http/middleware.ts: two per span).
 */
export const MAX_CHAIN_DEPTH = 256;

/** The database's message when the parent check of a batch fails (trigger `write_refusals_parent_chain`). */
export const PARENT_CHAIN_REFUSAL = "record_parent_chain";

export const PARENT_CHAIN_MESSAGE = `a parent_id of this request would make a record its own ancestor (a span under itself or under one of its descendants) or nest it more than ${MAX_CHAIN_DEPTH} levels deep; nothing of it was written`;

export function parentChainError(loc: (string | number)[] = ["body"]): RequestValidationError {
  const msg = `Value error, ${PARENT_CHAIN_MESSAGE}`;
  return new RequestValidationError([{ loc, msg, type: "value_error", ctx: { error: PARENT_CHAIN_MESSAGE, max_depth: MAX_CHAIN_DEPTH } }]);
}

/**
 * ?1: JSON array of [parent id, allowance]: the parents named by the batch that it does not hold
 * itself, each with the depth (in records, the parent included) its chain may have above the
 * batch's records under it. ?2: the project. The walk stops one level past the allowance, so a
 * loop costs at most MAX_CHAIN_DEPTH + 1 probes.
 */
const CHECK_OUTSIDE_PARENTS = `
WITH RECURSIVE up(id, allowance, depth) AS (
  SELECT value ->> 0, value ->> 1, 1 FROM json_each(?1)
  UNION ALL
  SELECT r.parent_id, up.allowance, up.depth + 1 FROM up CROSS JOIN records AS r ON r.project_id = ?2 AND r.id = up.id
  WHERE r.parent_id IS NOT NULL AND up.depth <= up.allowance
)
INSERT INTO write_refusals (reason) SELECT '${PARENT_CHAIN_REFUSAL}' WHERE EXISTS (SELECT 1 FROM up WHERE depth > allowance)`;

/**
 * The in-memory half: a loop among the batch's own records, or a chain deeper than allowed within
 * them, is a 422 at once. Answers the outside parents with their allowance (the least over the
 * batch's records under each).
 */
export function outsideParentAllowances(batch: RecordBatch): Map<string, number> {
  const parentOf = new Map<string, string | null>();
  batch.records.forEach((r) => parentOf.set(r.id, r.parent_id));
  // Height of each record: the levels from it down to its deepest descendant in the batch. Walk
  // up from every record, raising heights along the way; a walk that meets itself is a loop.
  const height = new Map<string, number>();
  for (const record of batch.records) {
    const seen = new Set<string>();
    let id: string | null = record.id;
    let levels = 1;
    while (id !== null && parentOf.has(id)) {
      if (seen.has(id)) throw parentChainError();
      seen.add(id);
      // Reached before from a deeper record: the chain above already has its heights.
      if ((height.get(id) ?? 0) >= levels) break;
      height.set(id, Math.max(height.get(id) ?? 0, levels));
      if (levels > MAX_CHAIN_DEPTH) throw parentChainError();
      id = parentOf.get(id) ?? null;
      levels += 1;
    }
  }
  const allowances = new Map<string, number>();
  for (const record of batch.records) {
    const parent = record.parent_id;
    if (parent === null || parentOf.has(parent)) continue;
    const allowance = MAX_CHAIN_DEPTH - (height.get(record.id) ?? 1);
    if (allowance < 1) throw parentChainError();
    allowances.set(parent, Math.min(allowances.get(parent) ?? allowance, allowance));
  }
  return allowances;
}

/** The statement that checks the chains above the batch's outside parents; place it after the upsert. */
export function parentChainStatement(db: D1Database, batch: RecordBatch, projectId: string): D1PreparedStatement | null {
  const allowances = outsideParentAllowances(batch);
  if (allowances.size === 0) return null;
  return db.prepare(CHECK_OUTSIDE_PARENTS).bind(JSON.stringify([...allowances]), projectId);
}

/**
 * Point 7 of the hardening: a copy that a move is still filling (`importing`) takes writes from
 * the move's own writer only (src/moves/copy-chunks.ts, which never runs this). A client
 * whose cached route still names this shard (a project moved away and being moved back within
 * the route cache's lifetime) is refused here, atomically with its write, as if the shard did
 * not hold the project: src/shards/project-shard.ts then reads the route afresh and writes to the
 * project's home (whose change log carries the write over), or answers a retryable 503.
 */
const REFUSE_WHILE_IMPORTING = `
INSERT INTO write_refusals (reason)
SELECT 'project_not_on_shard' FROM shard_projects WHERE project_id = ?1 AND state = 'importing'`;

export function refuseWhileImportingStatement(db: D1Database, projectId: string): D1PreparedStatement {
  return db.prepare(REFUSE_WHILE_IMPORTING).bind(projectId);
}
