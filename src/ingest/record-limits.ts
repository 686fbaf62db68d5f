/**
 * What one record may carry (README "Limits", docs/limits.md). Every cap counts UTF-8 bytes,
 * never UTF-16 units: D1's limits (2,000,000 bytes per value or row) are in bytes, and CJK text
 * is three bytes per character. Native ingestion answers a 422 naming the field over a cap;
 * the OpenTelemetry intake, which must never reject a span for its attributes, drops what is
 * over the caps instead (and says so in the span's metadata).
 */
export const RECORD_LIMITS = {
  /** Keys of `user_metadata` on one record. Each key is an indexed row. */
  maxMetadataKeys: 128,
  /** Bytes of one metadata key (deletion by metadata takes keys of 1 to 256 characters). */
  maxMetadataKeyBytes: 256,
  /** Bytes of one metadata value, as stored (numbers and booleans as their text). */
  maxMetadataValueBytes: 4096,
  /** Tags on one record, and bytes of one tag. */
  maxTags: 100,
  maxTagBytes: 256,
  /** Metric values on one record, and bytes of one metric name. */
  maxMetricsPerRecord: 128,
  maxMetricNameBytes: 256,
  /**
   * Distinct metric names in one run: each is a column of `available_columns` for ever (a
   * column once filled stays listed), so a client minting names must not grow that list without
   * bound. A batch that would pass it is refused whole.
   */
  maxMetricNamesPerRun: 1000,
  /**
   * Bytes of one record as stored (its text fields and JSON together): D1 refuses rows over
   * 2,000,000 bytes; the rest is room for the fixed columns.
   */
  maxRecordBytes: 1_900_000,
  /**
   * How far past the server's clock `created_at` or `updated_at` may be (microseconds): a day,
   * for clients whose clocks drift. A date further ahead would escape retention (expiry erases by
   * `created_at`) or freeze the record (a write older than the stored `updated_at` never wins).
   */
  maxFutureMicros: 24 * 3600 * 1_000_000,
} as const;

/** UTF-8 length of a string, counted without encoding it (a lone surrogate counts 3, as its U+FFFD replacement). */
export function utf8Bytes(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4; // a surrogate pair: one code point above U+FFFF
      i++;
    } else bytes += 3;
  }
  return bytes;
}
