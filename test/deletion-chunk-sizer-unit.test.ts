/**
 * Chunk sizing (src/deletion/chunk-sizer.ts): chunks grow while they are cheap and shrink when
 * they keep the database busy too long, one bounded step per chunk, within fixed bounds, and
 * keep their proportions and D1's one-thousand-rows-per-statement ceiling.
 */
import { describe, expect, it } from "vitest";
import { CHUNK_TARGET_MS, ChunkSizer } from "../src/deletion/chunk-sizer";

const spansAfter = (durations: number[]) => {
  const sizer = new ChunkSizer();
  for (const ms of durations) sizer.record(ms);
  return sizer.limits().spans;
};

describe("chunk sizer", () => {
  it("starts small, so the first chunk on a slow database is short", () => {
    expect(new ChunkSizer().limits()).toEqual({ roots: 5, sessionTraces: 10, spans: 25 });
  });

  it("doubles at most per chunk while chunks are cheap, up to its ceiling", () => {
    expect(spansAfter([1])).toBe(50);
    expect(spansAfter([1, 1])).toBe(100);
    const ceiling = spansAfter(Array(20).fill(1));
    expect(ceiling).toBe(1000);
    expect(spansAfter(Array(40).fill(1))).toBe(ceiling);
  });

  it("settles where a chunk takes about the target time", () => {
    // A database where each span of a chunk costs 0.2 ms: the target allows CHUNK_TARGET_MS / 0.2 spans.
    const allowed = CHUNK_TARGET_MS / 0.2;
    const sizer = new ChunkSizer();
    for (let i = 0; i < 30; i += 1) sizer.record(sizer.limits().spans * 0.2);
    expect(sizer.limits().spans).toBeGreaterThanOrEqual(allowed * 0.9);
    expect(sizer.limits().spans).toBeLessThanOrEqual(allowed * 1.1);
  });

  it("halves at most per chunk when one is slow, down to its floor", () => {
    const grown = new ChunkSizer(100);
    grown.record(10_000);
    expect(grown.limits().spans).toBe(250);
    const sizer = new ChunkSizer(200);
    for (let i = 0; i < 20; i += 1) sizer.record(10_000);
    expect(sizer.limits()).toEqual({ roots: 5, sessionTraces: 10, spans: 25 });
  });

  it("keeps every statement of a chunk at or under 1,000 rows", () => {
    const { roots, sessionTraces, spans } = new ChunkSizer(10_000).limits();
    expect(spans).toBeLessThanOrEqual(1000);
    expect(roots + sessionTraces).toBeLessThanOrEqual(1000);
  });
});
