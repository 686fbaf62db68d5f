import type { RecordBatch } from "./record-rows";

/** Several batches as one (for one atomic write); each [family, column] pair is listed once. */
export function mergeBatches(batches: RecordBatch[]): RecordBatch {
  const merged: RecordBatch = { records: [], metadata: [], tags: [], metrics: [], parentIds: [], presentColumns: [] };
  const present = new Set<string>();
  for (const batch of batches) {
    merged.records.push(...batch.records);
    merged.metadata.push(...batch.metadata);
    merged.tags.push(...batch.tags);
    merged.metrics.push(...batch.metrics);
    merged.parentIds.push(...batch.parentIds);
    for (const [family, column] of batch.presentColumns) {
      const key = `${family}\u0000${column}`;
      if (!present.has(key)) {
        present.add(key);
        merged.presentColumns.push([family, column]);
      }
    }
  }
  return merged;
}
