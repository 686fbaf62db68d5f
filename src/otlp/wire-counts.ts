/**
 * Counts the spans and attributes of a protobuf ExportTraceServiceRequest on the wire, before
 * `fromBinary` builds a single object. An empty span is two bytes on the wire and a few hundred
 * once decoded (a Span message with its sixteen fields), so 10 MiB of them (10 KB gzipped) would
 * be 5 million spans and a gigabyte; the count refuses such a body at OTLP_LIMITS' caps.
 *
 * Only the fields that hold messages are walked (resource_spans > scope_spans > spans >
 * attributes, events, links, and AnyValue's arrays and key-value lists); every other field is
 * skipped by its wire type. Malformed bytes stop the count and are left for the decoder to refuse.
 */

export interface WireCounts {
  spans: number;
  /**
   * Every other repeated entry: resource and scope groups, events, links, and attributes (key-values
   * and array elements at any depth). Each becomes at least one object, whatever its size.
   */
  entries: number;
  /** The cap the body passes, if any. */
  over?: "spans" | "entries";
}

/** What a message's fields hold: the message type of each field number that is a message. */
type Layout = Record<number, string>;

// Field numbers of opentelemetry/proto/{collector/trace,trace,common,resource}/v1 (src/otlp/proto).
const LAYOUTS: Record<string, Layout> = {
  ExportTraceServiceRequest: { 1: "ResourceSpans" },
  ResourceSpans: { 1: "Resource", 2: "ScopeSpans" },
  Resource: { 1: "KeyValue" },
  ScopeSpans: { 1: "InstrumentationScope", 2: "Span" },
  InstrumentationScope: { 3: "KeyValue" },
  Span: { 9: "KeyValue", 11: "Event", 13: "Link", 15: "Status" },
  Event: { 3: "KeyValue" },
  Link: { 4: "KeyValue" },
  Status: {},
  KeyValue: { 2: "AnyValue" },
  AnyValue: { 5: "ArrayValue", 6: "KeyValueList" },
  ArrayValue: { 1: "AnyValue" },
  KeyValueList: { 1: "KeyValue" },
};

/** Repeated fields: [parent, child] pairs whose every occurrence is one more object in a list. */
const REPEATED = new Set(["ExportTraceServiceRequest>ResourceSpans", "ResourceSpans>ScopeSpans", "Resource>KeyValue", "InstrumentationScope>KeyValue", "Span>KeyValue", "Span>Event", "Span>Link", "Event>KeyValue", "Link>KeyValue", "ArrayValue>AnyValue", "KeyValueList>KeyValue"]);

class Stop extends Error {}

export function countWire(bytes: Uint8Array, maxSpans: number, maxEntries: number): WireCounts {
  const counts: WireCounts = { spans: 0, entries: 0 };
  // Messages still to walk, as [type, start, end]: no recursion, so nesting cannot overflow the stack.
  const pending: [string, number, number][] = [["ExportTraceServiceRequest", 0, bytes.length]];
  let position = 0;
  const varint = (end: number): number => {
    let value = 0;
    let scale = 1;
    for (let shift = 0; shift < 64; shift += 7) {
      if (position >= end) throw new Stop();
      const byte = bytes[position++]!;
      value += (byte & 0x7f) * scale;
      if ((byte & 0x80) === 0) return value;
      scale *= 128;
    }
    throw new Stop();
  };
  try {
    while (pending.length > 0) {
      const [type, start, end] = pending.pop()!;
      const layout = LAYOUTS[type]!;
      position = start;
      while (position < end) {
        const tag = varint(end);
        const field = Math.floor(tag / 8);
        const wireType = tag & 7;
        if (wireType === 0) varint(end);
        else if (wireType === 1) position += 8;
        else if (wireType === 5) position += 4;
        else if (wireType === 2) {
          const length = varint(end);
          const childStart = position;
          position += length;
          if (position > end) throw new Stop();
          const child = layout[field];
          if (child === undefined) continue;
          if (child === "Span" && ++counts.spans > maxSpans) return { ...counts, over: "spans" };
          if (REPEATED.has(`${type}>${child}`) && ++counts.entries > maxEntries) return { ...counts, over: "entries" };
          pending.push([child, childStart, position]);
        } else throw new Stop();
      }
    }
  } catch (error) {
    if (!(error instanceof Stop)) throw error;
  }
  return counts;
}
