/**
 * Which records a scorer scores on a run (contract section 15): its node types (the run's
 * setting replaces the scorer's), its filters, the run's segment filters, and the deterministic
 * sample: a record is in iff a hash of (record id, scorer id) falls under the rate, so a re-run or
 * a backfill picks the same records. Pure; test/evaluations-selection-unit.test.ts.
 */
import type { RecordFilter, RunSettings } from "./run-settings";
import { metadataOf, type ScorableRecord } from "./scorable-record";

/** FNV-1a over the UTF-16 units, as a fraction in [0, 1). */
export function sampleFraction(recordId: string, scorerId: string): number {
  let hash = 0x811c9dc5;
  const text = `${recordId}\u0000${scorerId}`;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash / 2 ** 32;
}

const list = (value: string | string[]) => (Array.isArray(value) ? value : [value]);

export function filterMatches(filter: RecordFilter, record: ScorableRecord): boolean {
  if (filter.name === "node_name") {
    const name = record.name;
    switch (filter.operator) {
      case "eq":
        return name === filter.value;
      case "ne":
        return name !== filter.value;
      case "contains":
        return list(filter.value).some((v) => name.includes(v));
      case "one_of":
        return list(filter.value).includes(name);
    }
  }
  const value = metadataOf(record)[filter.key];
  const text = value === undefined || value === null ? undefined : String(value);
  switch (filter.operator) {
    case "eq":
      return text === filter.value;
    case "ne":
      return text !== filter.value;
    case "one_of":
      return text !== undefined && list(filter.value).includes(text);
    case "not_in":
      return text === undefined || !list(filter.value).includes(text);
  }
}

/** The node type a scorer's `scoreable_node_types` names: `trace`, `session`, or a span's type. */
export const nodeTypeOf = (record: ScorableRecord) => (record.record_type === "span" ? record.type : record.record_type);

/** The sample rate that applies to this record for a scorer of this type, or 0 when it is outside every segment. */
export function sampleRate(settings: RunSettings, record: ScorableRecord, isLlm: boolean): number {
  const segments = settings.segment_filters.filter((s) => !s.llm_scorers || isLlm);
  if (segments.length === 0) return 1;
  let rate = 0;
  for (const segment of segments) {
    if (!segment.filter || filterMatches(segment.filter, record)) rate = Math.max(rate, segment.sample_rate);
  }
  return rate;
}

export interface SelectableScorer {
  id: string;
  isLlm: boolean;
  nodeTypes: string[];
  filters: RecordFilter[];
}

/** Whether the scorer scores this record on this run. */
export function selects(settings: RunSettings, scorer: SelectableScorer, record: ScorableRecord): boolean {
  if (!scorer.nodeTypes.includes(nodeTypeOf(record))) return false;
  if (!scorer.filters.every((f) => filterMatches(f, record))) return false;
  return sampleFraction(record.id, scorer.id) < sampleRate(settings, record, scorer.isLlm);
}
