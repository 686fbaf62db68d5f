import type { RecordBatch } from "./record-rows";

/** Several builders' batches as one (for one atomic write); each [family, column] pair is listed once. */
export function mergeBatches(batches: RecordBatch[]): RecordBatch {
  const merged: RecordBatch = { records: [], encoded: [], parentIds: [], presentColumns: [], pendingPrices: [] };
  const present = new Set<string>();
  for (const batch of batches) {
    merged.records.push(...batch.records);
    merged.encoded.push(...batch.encoded);
    merged.parentIds.push(...batch.parentIds);
    merged.pendingPrices!.push(...(batch.pendingPrices ?? []));
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
