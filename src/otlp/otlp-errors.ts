/**
 * Failures of an OTLP export request, with the HTTP status OTLP/HTTP gives them and the
 * google.rpc.Code of the Status body that goes with it. Thrown anywhere in src/otlp and turned
 * into a response by the routes (src/otlp/otlp-routes.ts), in the request's encoding.
 */
export type OtlpStatus = 400 | 401 | 403 | 404 | 413 | 415 | 429 | 500 | 503;

/** google.rpc.Code for each status (the `code` of the Status body). */
export const GRPC_CODE: Record<OtlpStatus, number> = {
  400: 3, // INVALID_ARGUMENT
  401: 16, // UNAUTHENTICATED
  403: 7, // PERMISSION_DENIED
  404: 5, // NOT_FOUND
  413: 8, // RESOURCE_EXHAUSTED
  415: 3, // INVALID_ARGUMENT
  429: 8, // RESOURCE_EXHAUSTED
  500: 13, // INTERNAL
  503: 14, // UNAVAILABLE
};

export class OtlpError extends Error {
  constructor(
    readonly status: OtlpStatus,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = "OtlpError";
  }
}
