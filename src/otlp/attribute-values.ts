/**
 * OTLP attribute values (AnyValue) as plain values: strings, numbers, booleans, arrays and
 * objects (from kvlists). int64 values are numbers when they are exact as a double, decimal
 * strings otherwise; bytes are base64. Nesting deeper than OTLP_LIMITS.maxValueDepth is cut
 * (rendered as null): a value is data to show, and rendering it must stay bounded.
 */
import type { AnyValue, KeyValue } from "./generated/opentelemetry/proto/common/v1/common_pb";
import { nestsDeeperThan } from "../http/json-shape";
import { OTLP_LIMITS } from "./otlp-limits";

export type Plain = string | number | boolean | null | Plain[] | { [key: string]: Plain };

function bytesToBase64(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

export function plainValue(value: AnyValue | undefined, depth = 0): Plain {
  const v = value?.value;
  if (!v || v.case === undefined) return null;
  switch (v.case) {
    case "stringValue":
      return v.value;
    case "boolValue":
      return v.value;
    case "intValue":
      return BigInt(Number(v.value)) === v.value ? Number(v.value) : v.value.toString();
    case "doubleValue":
      return v.value;
    case "bytesValue":
      return bytesToBase64(v.value);
    case "arrayValue":
      return depth >= OTLP_LIMITS.maxValueDepth ? null : v.value.values.map((item) => plainValue(item, depth + 1));
    case "kvlistValue": {
      if (depth >= OTLP_LIMITS.maxValueDepth) return null;
      const out: Record<string, Plain> = {};
      for (const kv of v.value.values) out[kv.key] = plainValue(kv.value, depth + 1);
      return out;
    }
    default:
      // String-table references (`string_value_strindex`) are only meaningful in profiles.
      return null;
  }
}

/** A span's (or resource's) attributes by key; a repeated key keeps its last value. */
export function attributeMap(attributes: KeyValue[]): Map<string, Plain> {
  const map = new Map<string, Plain>();
  for (const kv of attributes) map.set(kv.key, plainValue(kv.value));
  return map;
}

/** A value as the text stored in user_metadata: strings as they are, the rest as JSON. */
export function valueText(value: Plain): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** A finite number from a number or a numeric string, else undefined. */
export function numberOf(value: Plain | undefined): number | undefined {
  if (typeof value === "number") return Number.isFinite(value) ? value : undefined;
  if (typeof value === "string" && value.trim() !== "") {
    const n = Number(value);
    return Number.isFinite(n) ? n : undefined;
  }
  return undefined;
}

/** A non-empty string from a string (or a number), else undefined. */
export function stringOf(value: Plain | undefined): string | undefined {
  if (typeof value === "string") return value === "" ? undefined : value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return undefined;
}

/**
 * Deepest JSON text read as a structure (message lists, tool schemas): deeper text stays text, so
 * that nothing built from it recurses without bound (docs/otlp.md "Mapping").
 */
export const MAX_TEXT_JSON_DEPTH = 64;

/** A value that may be structured or JSON text of a structure (semantic conventions allow both). */
export function structured(value: Plain | undefined): Plain | undefined {
  if (typeof value !== "string") return value ?? undefined;
  const text = value.trim();
  if (!(text.startsWith("{") || text.startsWith("["))) return value;
  if (nestsDeeperThan(text, MAX_TEXT_JSON_DEPTH)) return value;
  try {
    return JSON.parse(text) as Plain;
  } catch {
    return value;
  }
}
