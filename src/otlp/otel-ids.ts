/**
 * Our record ids from OpenTelemetry ids (docs/otlp.md "Ids"). Deterministic, so that an exporter
 * retrying a request updates the records it wrote instead of adding new ones:
 *
 * - a trace's id is its 16-byte OTel trace id written as a UUID: `4bf92f3577b34da6a3ce929d0e0e4736`
 *   is trace `4bf92f35-77b3-4da6-a3ce-929d0e0e4736`;
 * - a span's id is the name-based UUID (version 5, SHA-1, RFC 9562) of the 48 lower-case hex
 *   digits of its trace id followed by its span id, in the namespace OTEL_SPAN_NAMESPACE:
 *   Python `uuid.uuid5(uuid.UUID(OTEL_SPAN_NAMESPACE), trace_hex + span_hex)`, JavaScript
 *   `uuid.v5(traceHex + spanHex, OTEL_SPAN_NAMESPACE)`;
 * - a session named by a span's `session.id` (or `gen_ai.conversation.id`) is the version 5 UUID
 *   of `<run id>/<session.id>` in OTEL_SESSION_NAMESPACE: the same name in two log streams is two
 *   sessions, as a session belongs to one run.
 */

/** Namespace of span ids (a fixed, random UUID: never change it, every stored span id depends on it). */
export const OTEL_SPAN_NAMESPACE = "2f0c4c8e-6f1f-4a51-9b0e-5f1d7c3a9e21";
/** Namespace of session ids made from `session.id` values. */
export const OTEL_SESSION_NAMESPACE = "8d3b6a0e-1c7e-4f0a-a5d2-3e9f4b7c6d10";

const HEX_DIGITS = "0123456789abcdef";

export function bytesToHex(bytes: Uint8Array): string {
  let hex = "";
  for (const byte of bytes) hex += HEX_DIGITS[byte >> 4]! + HEX_DIGITS[byte & 15]!;
  return hex;
}

function hexToBytes(hex: string): Uint8Array {
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return bytes;
}

/** 32 hex digits as a UUID string (8-4-4-4-12). */
export function hexToUuid(hex: string): string {
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/** A valid OTel id: the right length and not all zeros (OTel's "invalid" id). */
export function isValidId(bytes: Uint8Array, length: 8 | 16): boolean {
  return bytes.length === length && bytes.some((b) => b !== 0);
}

const encoder = new TextEncoder();

/** RFC 9562 version 5 UUID of `name` (UTF-8) in `namespace`. */
export async function uuidV5(namespace: string, name: string): Promise<string> {
  const ns = hexToBytes(namespace.replace(/-/g, ""));
  const nameBytes = encoder.encode(name);
  const input = new Uint8Array(ns.length + nameBytes.length);
  input.set(ns);
  input.set(nameBytes, ns.length);
  const hash = new Uint8Array(await crypto.subtle.digest("SHA-1", input)).slice(0, 16);
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  return hexToUuid(bytesToHex(hash));
}

export function spanUuid(traceHex: string, spanHex: string): Promise<string> {
  return uuidV5(OTEL_SPAN_NAMESPACE, traceHex + spanHex);
}

export function sessionUuid(runId: string, sessionName: string): Promise<string> {
  return uuidV5(OTEL_SESSION_NAMESPACE, `${runId}/${sessionName}`);
}
