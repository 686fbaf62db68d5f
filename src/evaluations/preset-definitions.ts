/**
 * The built-in presets (contract section 15) and the params each takes, validated when a
 * version is created so that scoring never meets a bad definition: a regex must compile on the
 * linear-time engine the redaction's custom patterns use (no catastrophic backtracking), a JSON
 * schema must build a validator.
 */
import { z } from "@hono/zod-openapi";
import { Validator } from "@cfworker/json-schema";
import { DETECTOR_NAMES } from "../redaction/detectors";
import { customPatternFault } from "../redaction/custom-patterns";

export const PRESET_NAMES = ["regex", "contains", "is_json", "json_schema", "length", "similarity", "latency_under", "cost_under", "pii", "refusal"] as const;
export type PresetName = (typeof PRESET_NAMES)[number];

const Field = z.enum(["input", "output"]).default("output");

/** A JSON schema the json_schema preset validates against: at most this many characters of JSON. */
export const MAX_SCHEMA_CHARS = 20_000;

export const PRESET_PARAMS = {
  regex: z.strictObject({ pattern: z.string().min(1).max(500), field: Field, flags: z.string().max(4).default("") }),
  contains: z.strictObject({
    values: z.array(z.string().min(1).max(1000)).min(1).max(100),
    mode: z.enum(["any", "all", "none"]).default("any"),
    case_sensitive: z.boolean().default(false),
    field: Field,
  }),
  is_json: z.strictObject({ field: Field }),
  json_schema: z.strictObject({ schema: z.union([z.record(z.string(), z.unknown()), z.boolean()]), field: Field }),
  length: z
    .strictObject({ unit: z.enum(["chars", "words"]).default("chars"), min: z.number().int().min(0).optional(), max: z.number().int().min(0).optional(), field: Field })
    .refine((p) => p.min === undefined || p.max === undefined || p.min <= p.max, { message: "min must not be greater than max", path: ["max"] }),
  similarity: z.strictObject({
    reference: z
      .string()
      .regex(/^(dataset_output|metadata\..{1,200})$/, 'Value error, reference is "dataset_output" or "metadata.<key>"'),
    method: z.enum(["exact", "levenshtein", "jaccard"]).default("exact"),
    field: Field,
  }),
  latency_under: z.strictObject({ ms: z.number().positive().max(86_400_000) }),
  cost_under: z.strictObject({ usd: z.number().min(0).max(1_000_000) }),
  pii: z.strictObject({ detectors: z.array(z.enum(DETECTOR_NAMES)).min(1).max(DETECTOR_NAMES.length).default([...DETECTOR_NAMES]), field: Field }),
  refusal: z.strictObject({ phrases: z.array(z.string().min(1).max(200)).min(1).max(100).optional(), field: Field }),
} satisfies Record<PresetName, z.ZodTypeAny>;

export type PresetParams = { [K in PresetName]: z.output<(typeof PRESET_PARAMS)[K]> };
export type PresetDefinition = { [K in PresetName]: { preset: K; params: PresetParams[K] } }[PresetName];

/** The output type of each preset's values: 1/0, or a count (`length` without bounds). */
export function presetOutputType(definition: PresetDefinition): "boolean" | "count" {
  if (definition.preset === "length" && definition.params.min === undefined && definition.params.max === undefined) return "count";
  return "boolean";
}

export interface ParamFault {
  loc: (string | number)[];
  msg: string;
  type: string;
}

/** Parses a preset's params; the faults are 422 items under `body.params`. */
export function parsePresetParams(preset: PresetName, params: unknown): { ok: true; definition: PresetDefinition } | { ok: false; faults: ParamFault[] } {
  const parsed = PRESET_PARAMS[preset].safeParse(params ?? {});
  if (!parsed.success) {
    return {
      ok: false,
      faults: parsed.error.issues.map((issue) => ({ loc: ["body", "params", ...issue.path.map((p) => (typeof p === "number" ? p : String(p)))], msg: issue.message, type: issue.code === "custom" ? "value_error" : String(issue.code) })),
    };
  }
  const definition = { preset, params: parsed.data } as PresetDefinition;
  if (definition.preset === "regex") {
    const fault = customPatternFault({ name: "regex", pattern: definition.params.pattern, flags: definition.params.flags });
    if (fault) return { ok: false, faults: [{ loc: ["body", "params", "pattern"], msg: `Value error, ${fault}`, type: "value_error" }] };
  }
  if (definition.preset === "json_schema") {
    const text = JSON.stringify(definition.params.schema);
    if (text.length > MAX_SCHEMA_CHARS) return { ok: false, faults: [{ loc: ["body", "params", "schema"], msg: `Value error, the schema has ${text.length} characters of JSON; at most ${MAX_SCHEMA_CHARS} are allowed`, type: "value_error" }] };
    try {
      new Validator(definition.params.schema as never, "2020-12", true).validate(null);
    } catch (error) {
      return { ok: false, faults: [{ loc: ["body", "params", "schema"], msg: `Value error, the schema cannot be used (${error instanceof Error ? error.message : String(error)})`, type: "value_error" }] };
    }
  }
  return { ok: true, definition };
}
