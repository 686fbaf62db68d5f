/**
 * Which cells a pre-aggregated metrics/search reads (src/analytics/preaggregated-read.ts): whole
 * UTC days inside one bucket come from their day cell (one row per group instead of 24), hours
 * from hour cells, and the rest of the window is scanned.
 */
import { describe, expect, it } from "vitest";
import { HOUR_MICROS } from "../src/analytics/metric-cells";
import { cellCoverage } from "../src/analytics/preaggregated-read";

const DAY0 = Date.UTC(2026, 8, 1) * 1000;
const H0 = DAY0 / HOUR_MICROS;
const at = (hours: number) => DAY0 + hours * HOUR_MICROS;
const range = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);

describe("cellCoverage", () => {
  it("reads two whole days at 1-day buckets from their day cells", () => {
    const coverage = cellCoverage(at(0), at(48), { startMicros: at(0), intervalMicros: 24 * HOUR_MICROS }, new Set());
    expect(coverage.days).toEqual([H0, H0 + 24]);
    expect(coverage.hours).toEqual(range(H0, 48));
    expect(coverage.ranges).toEqual([]);
  });

  it("reads a day with a marked hour from its other hours' cells, and scans the marked one", () => {
    const coverage = cellCoverage(at(0), at(48), { startMicros: at(0), intervalMicros: 24 * HOUR_MICROS }, new Set([H0 + 30]));
    expect(coverage.days).toEqual([H0]);
    expect(coverage.hours).toEqual(range(H0, 48).filter((hour) => hour !== H0 + 30));
    expect(coverage.ranges).toEqual([[at(30), at(31)]]);
  });

  it("reads no day cell when a day spans several buckets or is cut by the window", () => {
    expect(cellCoverage(at(0), at(48), { startMicros: at(0), intervalMicros: HOUR_MICROS }, new Set()).days).toEqual([]);
    const shifted = cellCoverage(at(1), at(49), { startMicros: at(1), intervalMicros: 24 * HOUR_MICROS }, new Set());
    expect(shifted.days).toEqual([]);
    expect(shifted.hours).toEqual(range(H0 + 1, 48));
    expect(cellCoverage(at(0), at(47), { startMicros: at(0), intervalMicros: 48 * HOUR_MICROS }, new Set()).days).toEqual([H0]);
  });
});
