/**
 * When a project's open partition rolls (contract section 13, docs/partitions.md): the variables
 * PARTITION_MAX_ROOTS and PARTITION_MAX_DAYS, and PARTITION_ROLLING, the switch that lets
 * partitions roll by themselves at all (on by default; "off" turns it off).
 */
import type { Env } from "../env";

/**
 * Roots a partition takes before it closes. A D1 database holds 10 GB; a partition should stay
 * near 5 GB so that two fit a shard with room for late children. At the measured 1,929 bytes a
 * record (docs/benchmarks.md, "Storage") that is about 2.6 million records, and a typical root of
 * an agent (a trace with its spans, or a session) is about ten records: 250,000 roots. Projects
 * with much bigger trees are caught by the shard's high-water mark.
 */
export const DEFAULT_MAX_ROOTS = 250_000;
export const DEFAULT_MAX_DAYS = 7;

export interface PartitionConfig {
  maxRoots: number;
  maxDays: number;
  /** Whether partitions roll by themselves; `roll-partition` is the operator's, either way. */
  rolling: boolean;
}

function positive(raw: string | undefined, fallback: number, name: string): number {
  if (raw === undefined || raw.trim() === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, got ${JSON.stringify(raw)}`);
  return value;
}

export function partitionConfig(env: Env): PartitionConfig {
  return {
    maxRoots: Math.floor(positive(env.PARTITION_MAX_ROOTS, DEFAULT_MAX_ROOTS, "PARTITION_MAX_ROOTS")),
    maxDays: positive(env.PARTITION_MAX_DAYS, DEFAULT_MAX_DAYS, "PARTITION_MAX_DAYS"),
    // On unless switched off: every path spans partitions (docs/partitions.md, "Status"), and a
    // project that cannot roll stops at one database's 10 GB.
    rolling: (env.PARTITION_ROLLING ?? "on").trim().toLowerCase() !== "off",
  };
}
