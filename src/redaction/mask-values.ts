/**
 * Masking structured values: message lists, documents, metadata maps. Every string value at any
 * depth is masked (a message's `content`, a document's `content` and `metadata` values, tool-call
 * arguments); keys are never masked. A string that itself holds JSON (an object or array, as
 * tool arguments often are) is parsed, walked and written back, so a detector sees the value and
 * not its escaped form (`\n4111...` would otherwise hide the card behind the escape's `n`).
 */
import { maskText, type Matcher } from "./mask-text";

/** Nested JSON strings are unwrapped this deep; deeper ones are masked as plain text. */
const MAX_NESTED_JSON = 4;

export function maskString(text: string, matchers: readonly Matcher[], depth = 0): string {
  const first = text.charCodeAt(0);
  // `{` or `[` (after optional whitespace): maybe JSON text.
  if (depth < MAX_NESTED_JSON && (first === 123 || first === 91 || (first <= 32 && /^\s*[[{]/.test(text)))) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (parsed !== null && typeof parsed === "object") {
      const masked = maskValue(parsed, matchers, depth + 1);
      return masked === parsed ? text : JSON.stringify(masked);
    }
  }
  return maskText(text, matchers);
}

/** The value with every string masked; the same object when nothing changed. */
export function maskValue(value: unknown, matchers: readonly Matcher[], depth = 0): unknown {
  if (typeof value === "string") return maskString(value, matchers, depth);
  if (Array.isArray(value)) {
    let copy: unknown[] | null = null;
    for (let i = 0; i < value.length; i++) {
      const masked = maskValue(value[i], matchers, depth);
      if (masked !== value[i]) (copy ??= [...value])[i] = masked;
    }
    return copy ?? value;
  }
  if (value !== null && typeof value === "object") {
    let copy: Record<string, unknown> | null = null;
    for (const [key, inner] of Object.entries(value)) {
      const masked = maskValue(inner, matchers, depth);
      if (masked !== inner) (copy ??= { ...(value as Record<string, unknown>) })[key] = masked;
    }
    return copy ?? value;
  }
  return value;
}

/** A stored text column: JSON text (is_json) walked as JSON, plain text masked as text. */
export function maskStored(text: string | null, isJson: boolean, matchers: readonly Matcher[]): string | null {
  if (text === null || text === "") return text;
  if (!isJson) return maskString(text, matchers);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return maskText(text, matchers);
  }
  const masked = maskValue(parsed, matchers, 1);
  return masked === parsed ? text : JSON.stringify(masked);
}
