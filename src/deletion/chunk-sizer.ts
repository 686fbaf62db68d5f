/**
 * Sizes deletion chunks by what they cost where they run. D1 runs one statement or batch at a
 * time, so a search that arrives while a chunk runs waits for the rest of that chunk: the
 * chunk's duration is the delay a concurrent reader may see. What one record costs varies by
 * a factor of ten with the database's size, its storage (commits write every index page the
 * chunk dirtied, and record ids are random) and its load, so fixed row counts either stall
 * readers on a big database or waste commits on a small one. Instead every chunk is timed and
 * the next one is scaled towards CHUNK_TARGET_MS, CHUNK_SHAPE times a scale in [MIN_SCALE, MAX_SCALE].
 */
import type { ChunkLimits } from "./deletion-budgets";

/** A chunk should keep the database busy about this long (round trip and commit included). */
export const CHUNK_TARGET_MS = 30;

/** Proportions of one chunk: matching roots looked at, traces of matching sessions, spans deleted. */
const CHUNK_SHAPE: Readonly<ChunkLimits> = { roots: 1, sessionTraces: 2, spans: 5 };

/** Scale bounds: from 5 roots / 25 spans (the first chunk's size too) up to 200 roots / 1,000 spans. */
const MIN_SCALE = 5;
const MAX_SCALE = 200;
/** One chunk's measurement moves the size by at most this factor: one slow outlier (another
 * statement ahead of it, a checkpoint) must not collapse the size, nor one fast chunk inflate it. */
const MAX_STEP = 2;

export class ChunkSizer {
  #scale: number;

  constructor(initialScale = MIN_SCALE) {
    this.#scale = Math.min(MAX_SCALE, Math.max(MIN_SCALE, initialScale));
  }

  limits(): ChunkLimits {
    const scale = Math.round(this.#scale);
    return { roots: CHUNK_SHAPE.roots * scale, sessionTraces: CHUNK_SHAPE.sessionTraces * scale, spans: CHUNK_SHAPE.spans * scale };
  }

  /** Feeds back one chunk's wall time. (A chunk near the end of a job is small and fast: the
   * size grows, harmlessly, within MAX_SCALE.) */
  record(elapsedMs: number): void {
    const ratio = CHUNK_TARGET_MS / Math.max(elapsedMs, 1);
    const step = Math.min(MAX_STEP, Math.max(1 / MAX_STEP, ratio));
    this.#scale = Math.min(MAX_SCALE, Math.max(MIN_SCALE, this.#scale * step));
  }
}
