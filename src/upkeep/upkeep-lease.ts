/**
 * The lease that keeps two upkeep runs of one database from overlapping (issue 29, point 1): the
 * database's `upkeep_state` row (migration shard 0014) names the run that holds it and until when.
 * Taking it is one atomic UPDATE ... WHERE the lease is free or expired, so of two runs (two
 * messages, a message and the cron) exactly one gets it; the other leaves the work to it. A lease
 * outlives its run's budget with room (LEASE_MS), and one whose isolate died expires and is taken
 * over: the chunks are idempotent, so work a dead run did twice is harmless.
 */

/** How long a lease holds: a run stops starting chunks after its budget (at most 20 s), so this is room for a slow last chunk. */
export const LEASE_MS = 90_000;

export interface Lease {
  db: D1Database;
  token: string;
  /** requested_seq when the holder last looked: a release succeeds only if no write asked since. */
  seq: number;
}

/** Takes the lease of the database, or null when another run holds it. */
export async function takeLease(db: D1Database, now: number = Date.now()): Promise<Lease | null> {
  const token = crypto.randomUUID();
  const row = await db
    .prepare("UPDATE upkeep_state SET lease_until = ?1, lease_token = ?2 WHERE id = 1 AND (lease_until IS NULL OR lease_until <= ?3) RETURNING requested_seq")
    .bind(now + LEASE_MS, token, now)
    .first<{ requested_seq: number }>();
  return row ? { db, token, seq: row.requested_seq } : null;
}

/**
 * Ends a run that caught up: frees the lease and clears the pending mark, unless a write asked
 * for upkeep since the holder last looked (requested_seq moved): then nothing changes, and the
 * lease's seq becomes the new one, so that the holder runs once more. Whether it was released.
 */
export async function releaseCaughtUp(lease: Lease): Promise<boolean> {
  const { db } = lease;
  const [update, state] = await db.batch<{ requested_seq: number }>([
    db
      .prepare("UPDATE upkeep_state SET lease_until = NULL, lease_token = NULL, pending_since = NULL, pending_token = NULL, failures = 0, last_error = NULL WHERE id = 1 AND lease_token = ?1 AND requested_seq = ?2")
      .bind(lease.token, lease.seq),
    db.prepare("SELECT requested_seq FROM upkeep_state WHERE id = 1"),
  ]);
  if ((update!.meta.changes ?? 0) > 0) return true;
  lease.seq = state!.results[0]?.requested_seq ?? lease.seq;
  return false;
}

/**
 * Ends a run whose budget is spent with work left: frees the lease for its continuation and
 * marks a message pending as of now (so writes meanwhile send none, and the mark is fresh).
 */
export async function handOver(lease: Lease, now: number = Date.now()): Promise<void> {
  await lease.db.prepare("UPDATE upkeep_state SET lease_until = NULL, lease_token = NULL, pending_since = ?2, failures = 0, last_error = NULL WHERE id = 1 AND lease_token = ?1").bind(lease.token, now).run();
}

/** Ends a failed run: frees the lease for the retry, counts the failure, keeps a message pending. */
export async function releaseFailed(lease: Lease, error: string, now: number = Date.now()): Promise<void> {
  await lease.db
    .prepare("UPDATE upkeep_state SET lease_until = NULL, lease_token = NULL, pending_since = ?2, failures = failures + 1, last_error = ?3 WHERE id = 1 AND lease_token = ?1")
    .bind(lease.token, now, error.slice(0, 1000))
    .run();
}
