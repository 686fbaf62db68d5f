/**
 * Reads an export request's body as bytes, never holding more than OTLP_LIMITS.maxBodyBytes of
 * it: the count is kept while the stream is read (a body without Content-Length, or one that
 * lies about it, is stopped as soon as it passes the cap), and a gzip body is inflated with
 * `DecompressionStream` and counted after inflation, so a small compressed body that inflates to
 * gigabytes (a zip bomb) is cut at the cap instead of filling the isolate's 128 MB.
 */
import { readWithin } from "../http/bounded-body";
import { OtlpError } from "./otlp-errors";
import { OTLP_LIMITS } from "./otlp-limits";

const tooLarge = () =>
  new OtlpError(
    413,
    `request body over ${OTLP_LIMITS.maxBodyBytes} bytes (after decompression): send smaller batches (OTEL_BSP_MAX_EXPORT_BATCH_SIZE, or the Collector's send_batch_max_size)`,
  );

/** Reads a stream to its end, or throws 413 once more than `limit` bytes came out of it. */
async function readBounded(stream: ReadableStream<Uint8Array>, limit: number): Promise<Uint8Array> {
  const body = await readWithin(stream, limit);
  if (body === undefined) throw tooLarge();
  return body;
}

/**
 * A stream that yields `first` and then the rest of `reader` (the bytes peeked at are not lost),
 * failing with 413 once more than `limit` bytes went through: the compressed side is bounded too.
 */
function prepend(first: Uint8Array, reader: ReadableStreamDefaultReader<Uint8Array>, limit: number): ReadableStream<Uint8Array> {
  let sentFirst = false;
  let total = first.byteLength;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!sentFirst) {
        sentFirst = true;
        controller.enqueue(first);
        return;
      }
      const { done, value } = await reader.read();
      if (done) return controller.close();
      total += value.byteLength;
      if (total > limit) {
        await reader.cancel().catch(() => undefined);
        throw tooLarge();
      }
      controller.enqueue(value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}

export type ContentEncoding = "identity" | "gzip";

/** The Content-Encoding header as one of the encodings read here; anything else is a 415. */
export function contentEncodingOf(header: string | undefined): ContentEncoding {
  const value = (header ?? "").trim().toLowerCase();
  if (value === "" || value === "identity") return "identity";
  if (value === "gzip" || value === "x-gzip") return "gzip";
  throw new OtlpError(415, `unsupported Content-Encoding ${JSON.stringify(header)}: send the body as is or gzip-compressed`);
}

/**
 * The body's bytes, inflated when `encoding` is gzip. A body that says gzip but does not start
 * with gzip's magic bytes is read as it is: some proxies inflate a body and leave the header.
 */
export async function readBody(body: ReadableStream<Uint8Array> | null, encoding: ContentEncoding, declaredLength?: string): Promise<Uint8Array> {
  if (body === null) return new Uint8Array(0);
  const declared = Number(declaredLength);
  if (declaredLength !== undefined && Number.isFinite(declared) && declared > OTLP_LIMITS.maxBodyBytes) throw tooLarge();
  if (encoding === "identity") return readBounded(body, OTLP_LIMITS.maxBodyBytes);

  const reader = body.getReader();
  let first: Uint8Array | undefined;
  while (first === undefined || first.byteLength === 0) {
    const { done, value } = await reader.read();
    if (done) return first ?? new Uint8Array(0);
    first = value;
  }
  const stream = prepend(first, reader, OTLP_LIMITS.maxBodyBytes);
  const isGzip = first[0] === 0x1f && first[1] === 0x8b;
  if (!isGzip) return readBounded(stream, OTLP_LIMITS.maxBodyBytes);
  try {
    return await readBounded(stream.pipeThrough(new DecompressionStream("gzip")), OTLP_LIMITS.maxBodyBytes);
  } catch (error) {
    if (error instanceof OtlpError) throw error;
    throw new OtlpError(400, "the body is not valid gzip data");
  }
}
