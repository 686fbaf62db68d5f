/**
 * OTLP/HTTP answers, in the encoding of the request: an ExportTraceServiceResponse (with
 * `partial_success` when spans were rejected) for a success, a google.rpc.Status for a failure.
 */
import { create, toBinary, toJson } from "@bufbuild/protobuf";
import { StatusSchema } from "./generated/google/rpc/status_pb";
import { ExportTraceServiceResponseSchema } from "./generated/opentelemetry/proto/collector/trace/v1/trace_service_pb";
import type { OtlpEncoding } from "./decode-request";
import { GRPC_CODE, type OtlpStatus } from "./otlp-errors";

const CONTENT_TYPE: Record<OtlpEncoding, string> = { protobuf: "application/x-protobuf", json: "application/json" };

function body(encoding: OtlpEncoding, binary: () => Uint8Array, json: () => unknown): BodyInit {
  return encoding === "protobuf" ? binary() : JSON.stringify(json());
}

export function exportResponse(encoding: OtlpEncoding, rejected: number, message: string, headers: Record<string, string> = {}): Response {
  const response = create(ExportTraceServiceResponseSchema, {
    ...(rejected > 0 || message !== "" ? { partialSuccess: { rejectedSpans: BigInt(rejected), errorMessage: message } } : {}),
  });
  return new Response(
    body(encoding, () => toBinary(ExportTraceServiceResponseSchema, response), () => toJson(ExportTraceServiceResponseSchema, response)),
    { status: 200, headers: { ...headers, "content-type": CONTENT_TYPE[encoding] } },
  );
}

export function statusResponse(encoding: OtlpEncoding, status: OtlpStatus, message: string, headers: Record<string, string> = {}): Response {
  const value = create(StatusSchema, { code: GRPC_CODE[status], message });
  return new Response(
    body(encoding, () => toBinary(StatusSchema, value), () => toJson(StatusSchema, value)),
    { status, headers: { ...headers, "content-type": CONTENT_TYPE[encoding] } },
  );
}
