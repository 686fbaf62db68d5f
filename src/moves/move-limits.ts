/**
 * How much of a move one chunk and one queue message may do (docs/sharding.md, "Moving a
 * project"). A chunk is one read on the source and one atomic write on the target; a message
 * runs chunks until its budget is spent and then hands over to a continuation message, so no
 * message holds the databases for long and no statement comes near D1's limits (100 bound
 * parameters: lists travel as one json_each(?) parameter; 2 MB per value: rows are cut at 1 MB
 * by the write path; 30 s per statement: chunks are a few hundred rows).
 */
export interface MoveLimits {
  /** Records read and written per chunk. */
  chunkRecords: number;
  /** Bytes of record JSON per chunk (a chunk stops at the record that passes this). */
  chunkBytes: number;
  /** Held updates, tombstones, runs or changed ids per chunk. */
  chunkRows: number;
  /** Runs whose counts one verification statement compares. */
  verifyRuns: number;
  /** Records of the old copy deleted per cleanup statement (side rows go with them). */
  cleanupRecords: number;
  /** Changes left in the log below which the source is frozen for the last catch-up. */
  freezeBelowChanges: number;
  /** Catch-up passes over the log, at most, before the source is frozen anyway. */
  maxCatchUpPasses: number;
  /** One message: wall time and D1 calls. */
  messageMillis: number;
  messageCalls: number;
}

export const MOVE_LIMITS: MoveLimits = {
  chunkRecords: 200,
  chunkBytes: 4_000_000,
  chunkRows: 500,
  verifyRuns: 50,
  cleanupRecords: 500,
  freezeBelowChanges: 500,
  maxCatchUpPasses: 5,
  messageMillis: 10_000,
  messageCalls: 200,
};

/** Tests shrink the limits to exercise many chunks on small data; nothing else sets it. */
export const moveTestSeam: Partial<MoveLimits> = {};

export function moveLimits(): MoveLimits {
  return { ...MOVE_LIMITS, ...moveTestSeam };
}
