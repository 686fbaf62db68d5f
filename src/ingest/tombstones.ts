/**
 * Tombstones: the ids of records a deletion job erased (`record_tombstones`, written by
 * src/deletion in the same batch that deletes the records). Erasure must stick: an SDK retry,
 * a streaming straggler or an OpenTelemetry exporter may deliver a record, span or update after
 * its trace or session was erased, and storing it would bring the erased data back. So every
 * write checks them:
 * - a record is not written when its own id, its trace, its session or its parent is tombstoned
 *   in its project (src/ingest/write-records.ts);
 * - an update (PATCH) of a tombstoned id is not held (src/ingest/streaming-patches.ts).
 * The request is still answered as usual (the client cannot tell, and does not retry for ever).
 * Tombstones live TOMBSTONE_MICROS, longer than any client's retry horizon, then the scheduled
 * purge (src/maintenance) removes them.
 */

/** How long an erased id keeps late arrivals out: as long as an update may be held. */
export const TOMBSTONE_MICROS = 7 * 24 * 60 * 60 * 1_000_000;

/**
 * SQL: true when any of the id expressions is tombstoned in the project. One primary-key probe
 * per id; NULL ids never match.
 */
export function TOMBSTONED(project: string, ids: readonly string[]): string {
  return `EXISTS (SELECT 1 FROM record_tombstones AS tomb WHERE tomb.project_id = ${project} AND tomb.record_id IN (${ids.join(", ")}))`;
}
