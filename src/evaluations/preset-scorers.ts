/**
 * The built-in presets, run in the Worker with no network (contract section 15, "Details"). Each
 * answers a value, or why the record cannot be scored (a record without the value the preset
 * needs is not scored; `metric_info` says why). Work per record is bounded: the regex runs on a
 * linear-time engine, Levenshtein compares at most LEVENSHTEIN_MAX_CHARS of each side, the PII
 * detectors are the redaction's (bounded per text by design).
 */
import { Validator } from "@cfworker/json-schema";
import { RE2JS } from "re2js";
import { DETECTORS, type Span } from "../redaction/detectors";
import type { PresetDefinition } from "./preset-definitions";
import { fieldText, metadataOf, metricsOf, type ScorableRecord } from "./scorable-record";

export type PresetOutcome = { value: number } | { skipped: string };

/** Levenshtein is quadratic: each side is cut to this many characters (a decision, docs/evaluations.md). */
export const LEVENSHTEIN_MAX_CHARS = 4_000;

/** What `refusal` looks for when the version names no phrases (case-insensitive, curly apostrophes folded). */
export const DEFAULT_REFUSAL_PHRASES = [
  "i'm sorry, but i can",
  "i am sorry, but i can",
  "i'm sorry, i can't",
  "i cannot help with",
  "i can't help with",
  "i can't assist with",
  "i cannot assist with",
  "i'm unable to",
  "i am unable to",
  "i'm not able to",
  "i am not able to",
  "i won't be able to",
  "i cannot provide",
  "i can't provide",
  "i must decline",
  "as an ai language model",
];

const fold = (text: string) => text.replace(/[\u2018\u2019\u02bc]/g, "'").toLowerCase();

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

export function levenshtein(a: string, b: string): number {
  if (a === b) return 0;
  if (a.length === 0) return b.length;
  if (b.length === 0) return a.length;
  let previous = new Array<number>(b.length + 1);
  let current = new Array<number>(b.length + 1);
  for (let j = 0; j <= b.length; j++) previous[j] = j;
  for (let i = 1; i <= a.length; i++) {
    current[0] = i;
    const ca = a.charCodeAt(i - 1);
    for (let j = 1; j <= b.length; j++) {
      const cost = ca === b.charCodeAt(j - 1) ? 0 : 1;
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
    }
    [previous, current] = [current, previous];
  }
  return previous[b.length]!;
}

const words = (text: string) => text.split(/\s+/).filter((w) => w.length > 0);

export function similarity(method: "exact" | "levenshtein" | "jaccard", a: string, b: string): number {
  if (method === "exact") return a === b ? 1 : 0;
  if (method === "levenshtein") {
    const x = a.slice(0, LEVENSHTEIN_MAX_CHARS);
    const y = b.slice(0, LEVENSHTEIN_MAX_CHARS);
    const longest = Math.max(x.length, y.length);
    return longest === 0 ? 1 : 1 - levenshtein(x, y) / longest;
  }
  const sa = new Set(words(a.toLowerCase()));
  const sb = new Set(words(b.toLowerCase()));
  if (sa.size === 0 && sb.size === 0) return 1;
  let both = 0;
  for (const w of sa) if (sb.has(w)) both++;
  return both / (sa.size + sb.size - both);
}

const validators = new Map<string, Validator>();

function validatorOf(schema: unknown): Validator {
  const key = JSON.stringify(schema);
  let validator = validators.get(key);
  if (!validator) {
    if (validators.size > 200) validators.clear();
    validator = new Validator(schema as never, "2020-12", true);
    validators.set(key, validator);
  }
  return validator;
}

const NO_TEXT = (field: string) => ({ skipped: `the record has no ${field}` });

/** Runs a preset on a record. */
export function runPreset(definition: PresetDefinition, record: ScorableRecord): PresetOutcome {
  switch (definition.preset) {
    case "latency_under": {
      const duration = metricsOf(record).duration_ns;
      if (typeof duration !== "number") return { skipped: "the record has no duration_ns" };
      return { value: duration < definition.params.ms * 1e6 ? 1 : 0 };
    }
    case "cost_under": {
      const cost = metricsOf(record).cost;
      if (typeof cost !== "number") return { skipped: "the record has no cost" };
      return { value: cost < definition.params.usd ? 1 : 0 };
    }
    default:
      break;
  }
  const field = definition.params.field;
  const text = fieldText(record, field);
  if (text === null) return NO_TEXT(field);
  switch (definition.preset) {
    case "regex": {
      // Any match counts, an empty one too (`a*` on "b"): the pattern matched.
      return { value: regexOf(definition.params.pattern, definition.params.flags).matcher(text).find() ? 1 : 0 };
    }
    case "contains": {
      const haystack = definition.params.case_sensitive ? text : text.toLowerCase();
      const hits = definition.params.values.map((v) => haystack.includes(definition.params.case_sensitive ? v : v.toLowerCase()));
      const mode = definition.params.mode;
      const value = mode === "any" ? hits.some(Boolean) : mode === "all" ? hits.every(Boolean) : !hits.some(Boolean);
      return { value: value ? 1 : 0 };
    }
    case "is_json":
      return { value: parseJson(text).ok ? 1 : 0 };
    case "json_schema": {
      const parsed = parseJson(text);
      if (!parsed.ok) return { value: 0 };
      return { value: validatorOf(definition.params.schema).validate(parsed.value).valid ? 1 : 0 };
    }
    case "length": {
      const count = definition.params.unit === "words" ? words(text).length : [...text].length;
      const { min, max } = definition.params;
      if (min === undefined && max === undefined) return { value: count };
      return { value: (min === undefined || count >= min) && (max === undefined || count <= max) ? 1 : 0 };
    }
    case "similarity": {
      const reference = definition.params.reference;
      let other: string | null;
      if (reference === "dataset_output") {
        other = record.dataset_output === null ? null : structuredTextOrRaw(record.dataset_output);
      } else {
        const value = metadataOf(record)[reference.slice("metadata.".length)];
        other = typeof value === "string" ? value : value === undefined || value === null ? null : String(value);
      }
      if (other === null) return { skipped: `the record has no ${reference} to compare with` };
      return { value: similarity(definition.params.method, text, other) };
    }
    case "pii": {
      const wanted = new Set(definition.params.detectors);
      const out: Span[] = [];
      for (const detector of DETECTORS) {
        if (!wanted.has(detector.name) || !detector.mayMatch(text)) continue;
        detector.find(text, out);
        if (out.length > 0) return { value: 1 };
      }
      return { value: 0 };
    }
    case "refusal": {
      const folded = fold(text);
      const phrases = (definition.params.phrases ?? DEFAULT_REFUSAL_PHRASES).map(fold);
      return { value: phrases.some((p) => folded.includes(p)) ? 1 : 0 };
    }
  }
}

/** A dataset output is stored as sent: a JSON string is compared as its text. */
function structuredTextOrRaw(stored: string): string {
  const parsed = parseJson(stored);
  return parsed.ok && typeof parsed.value === "string" ? parsed.value : stored;
}

const regexes = new Map<string, RE2JS>();

/** The version's regex on RE2 (linear time), as the redaction's custom patterns compile theirs; cached per isolate. */
function regexOf(pattern: string, flags: string): RE2JS {
  const key = `${flags}/${pattern}`;
  let re = regexes.get(key);
  if (!re) {
    if (regexes.size > 500) regexes.clear();
    let re2Flags = 0;
    if (flags.includes("i")) re2Flags |= RE2JS.CASE_INSENSITIVE;
    if (flags.includes("m")) re2Flags |= RE2JS.MULTILINE;
    if (flags.includes("s")) re2Flags |= RE2JS.DOTALL;
    re = RE2JS.compile(RE2JS.translateRegExp(pattern), re2Flags);
    regexes.set(key, re);
  }
  return re;
}
