/**
 * Keeps what an OTel span carries within RECORD_LIMITS (src/ingest/record-limits.ts) without
 * ever refusing the span: what is over a cap is dropped or cut, and the record says so in its
 * `user_metadata` (docs/otlp.md "What is dropped"):
 *
 * - metadata: keys of 0 or more than 256 bytes are dropped; values are cut at 4,096 bytes; past
 *   the key cap, later keys are dropped (the caller orders them by importance). `otel.dropped_attributes`
 *   and `otel.truncated_attributes` count them.
 * - tags: past 100, or longer than 256 bytes, dropped (`otel.dropped_tags`).
 * - input, output and tool definitions: when the record would pass maxRecordBytes, the largest of
 *   them are cut to share what is left (as text, ending with a note); `otel.truncated_fields` lists them.
 */
import { RECORD_LIMITS, utf8Bytes } from "../ingest/record-limits";

/** `text` cut to at most `maxBytes` UTF-8 bytes, never inside a character. */
export function truncateUtf8(text: string, maxBytes: number): string {
  if (text.length <= maxBytes / 3 || utf8Bytes(text) <= maxBytes) return text;
  let bytes = 0;
  let i = 0;
  while (i < text.length) {
    const unit = text.charCodeAt(i);
    const pair = unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00;
    const size = unit < 0x80 ? 1 : unit < 0x800 ? 2 : pair ? 4 : 3;
    if (bytes + size > maxBytes) break;
    bytes += size;
    i += pair ? 2 : 1;
  }
  return text.slice(0, i);
}

/** Keys the intake itself adds to say what it dropped. */
export const DROP_MARKERS = {
  droppedAttributes: "otel.dropped_attributes",
  truncatedAttributes: "otel.truncated_attributes",
  droppedTags: "otel.dropped_tags",
  truncatedFields: "otel.truncated_fields",
} as const;

const MARKER_COUNT = Object.keys(DROP_MARKERS).length;

/** Metadata within the caps, from entries in order of importance (the first ones are kept). */
export function fitMetadata(entries: Iterable<[string, string]>): Record<string, string> {
  const out: Record<string, string> = {};
  const room = RECORD_LIMITS.maxMetadataKeys - MARKER_COUNT;
  let kept = 0;
  let dropped = 0;
  let truncated = 0;
  for (const [key, value] of entries) {
    if (key in out) continue;
    const keyBytes = utf8Bytes(key);
    if (keyBytes === 0 || keyBytes > RECORD_LIMITS.maxMetadataKeyBytes || kept >= room) {
      dropped += 1;
      continue;
    }
    const cut = truncateUtf8(value, RECORD_LIMITS.maxMetadataValueBytes);
    if (cut.length < value.length) truncated += 1;
    out[key] = cut;
    kept += 1;
  }
  if (dropped > 0) out[DROP_MARKERS.droppedAttributes] = String(dropped);
  if (truncated > 0) out[DROP_MARKERS.truncatedAttributes] = String(truncated);
  return out;
}

/** Tags within the caps; the number dropped. */
export function fitTags(tags: string[]): { tags: string[]; dropped: number } {
  const kept = [...new Set(tags)].filter((tag) => utf8Bytes(tag) <= RECORD_LIMITS.maxTagBytes).slice(0, RECORD_LIMITS.maxTags);
  return { tags: kept, dropped: tags.length - kept.length };
}

/** Room left for the large fields once everything else is counted: a generous allowance for the fixed columns. */
const FIXED_ALLOWANCE = 64 * 1024;

const TRUNCATION_NOTE = " [... truncated by the OpenTelemetry intake: the record was over its size limit]";

export interface LargeField {
  name: string;
  /** The value as stored text (JSON text for structured values). */
  text: string;
}

/**
 * Which large fields to cut, and to what, so that they fit in what `otherBytes` leaves of the
 * record cap: the smallest fields are kept whole while they fit in an equal share, the others
 * share the rest equally (water-filling). Returns the new text of every cut field.
 */
export function fitLargeFields(fields: LargeField[], otherBytes: number): Map<string, string> {
  const cuts = new Map<string, string>();
  let budget = RECORD_LIMITS.maxRecordBytes - FIXED_ALLOWANCE - otherBytes;
  const sized = fields.map((f) => ({ ...f, bytes: utf8Bytes(f.text) })).sort((a, b) => a.bytes - b.bytes);
  if (sized.reduce((sum, f) => sum + f.bytes, 0) <= budget) return cuts;
  for (const [i, field] of sized.entries()) {
    const share = Math.max(0, Math.floor(budget / (sized.length - i)));
    if (field.bytes <= share) {
      budget -= field.bytes;
      continue;
    }
    cuts.set(field.name, truncateUtf8(field.text, Math.max(0, share - TRUNCATION_NOTE.length)) + TRUNCATION_NOTE);
    budget -= share;
  }
  return cuts;
}
