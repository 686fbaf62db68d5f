/**
 * What one OTLP export request may carry (README "Send OpenTelemetry traces", docs/otlp.md).
 * A request over a limit is answered 413, which OTel exporters do not retry: the limits are set
 * well above the SDKs' default batches (512 spans per export) and below what would strain a
 * Worker's 128 MB: a request's bytes are held about four times over while it is handled (the
 * body, the decoded strings, the rows built from them, the JSON parameters sent to D1).
 */
export const OTLP_LIMITS = {
  /** Bytes of the body as decoded: after gzip decompression, before protobuf or JSON decoding. */
  maxBodyBytes: 10 * 1024 * 1024,
  /** Spans in one request (as for native ingestion, src/ingest/ingest-schemas.ts); counted on the wire. */
  maxSpansPerRequest: 10_000,
  /**
   * Other repeated entries of one protobuf request (attributes at any depth, events, links, resource
   * and scope groups), counted on the wire before decoding (src/otlp/wire-counts.ts): each is an
   * object once decoded, however few bytes it takes. 100,000 is 10 attributes on each of 10,000
   * spans, which decode and map within about 60 MB (test/node/body-memory.test.ts; 30 attributes
   * each took 144 MB); the OTel SDKs export 512 spans of at most 128 attributes (65,536) by default.
   */
  maxEntriesPerRequest: 100_000,
  /** JSON values of one OTLP/JSON request, counted on the bytes before parsing (src/http/json-shape.ts). */
  maxJsonValues: 500_000,
  /** Nesting of AnyValue arrays and maps kept when an attribute value is rendered as text. */
  maxValueDepth: 16,
} as const;
