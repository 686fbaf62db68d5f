/**
 * fast-check values drawn from the JSON Schemas of an OpenAPI 3.1 document: what a client who
 * read `/openapi.json` might send. Values are mostly valid, often at a boundary (a string of
 * exactly `maxLength`, or one character more; a number at its minimum), and sometimes not what
 * the schema says at all (the fuzz test adds its own mutations on top).
 *
 * Ids (`format: uuid`) are drawn from `vocabulary.ids`, so requests name real records of the
 * caller, records of another organization, and ids nobody has; free strings mix
 * `vocabulary.words` (column ids, kinds, values the service stores) with arbitrary text and the
 * strings that break naive code (`__proto__`, `constructor`, NUL, very long text).
 */
import fc from "fast-check";

export type JsonSchema = {
  $ref?: string;
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  format?: string;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  default?: unknown;
};

export interface Vocabulary {
  ids: () => fc.Arbitrary<string>;
  words: readonly string[];
  /**
   * Only values the schema allows (ids from `validIds`, strings and numbers within their
   * bounds, no nasty strings): requests that get past validation to the handler.
   */
  strict?: boolean;
  validIds?: () => fc.Arbitrary<string>;
}

export interface SchemaDocument {
  components?: { schemas?: Record<string, JsonSchema> };
}

/** Strings that have broken services before: prototype keys, control characters, injections. */
export const NASTY_STRINGS = [
  "",
  " ",
  "__proto__",
  "constructor",
  "toString",
  "hasOwnProperty",
  "\u0000",
  "\uffff\ud800",
  "' OR 1=1 --",
  "%",
  "_",
  "\\",
  '"',
  "漢字テキスト",
  "😀".repeat(3),
  "null",
  "NaN",
  "-1",
  "1e309",
];

/** `$ref`s followed on one path before recursive schemas (filter trees, nested spans) stop. */
const MAX_REF_DEPTH = 5;

function resolve(schema: JsonSchema, doc: SchemaDocument): JsonSchema {
  if (!schema.$ref) return schema;
  const name = schema.$ref.replace("#/components/schemas/", "");
  const target = doc.components?.schemas?.[name];
  if (!target) throw new Error(`unresolved ${schema.$ref}`);
  return target;
}

function stringOf(schema: JsonSchema, vocabulary: Vocabulary): fc.Arbitrary<string> {
  if (schema.format === "uuid") return vocabulary.strict && vocabulary.validIds ? vocabulary.validIds() : vocabulary.ids();
  const isoDate = fc.date({ min: new Date("2000-01-01T00:00:00Z"), max: new Date("2100-01-01T00:00:00Z"), noInvalidDate: true }).map((d) => d.toISOString());
  if (schema.format === "date-time" && vocabulary.strict) return isoDate;
  if (schema.format === "date-time") {
    return fc.oneof(
      fc.date({ min: new Date("1970-01-01T00:00:00Z"), max: new Date("2100-01-01T00:00:00Z"), noInvalidDate: true }).map((d) => d.toISOString()),
      fc.constantFrom("2026-01-01", "2026-01-01T00:00:00", "2026-01-01T00:00:00.123456+02:00", "yesterday", "2026-13-45T99:99:99Z", ""),
    );
  }
  const min = schema.minLength ?? 0;
  const max = schema.maxLength;
  if (vocabulary.strict) {
    const fits = vocabulary.words.filter((w) => w.length >= min && (max === undefined || w.length <= max));
    const free = fc.string({ minLength: min, maxLength: Math.max(min, Math.min(max ?? 40, 40)) });
    return fits.length > 0 ? fc.oneof(fc.constantFrom(...fits), free) : free;
  }
  const options: fc.Arbitrary<string>[] = [
    fc.constantFrom(...vocabulary.words),
    fc.string({ minLength: min, maxLength: Math.min(max ?? 40, 40) }),
    fc.constantFrom(...NASTY_STRINGS),
  ];
  if (max !== undefined) options.push(fc.constantFrom("x".repeat(max), "é".repeat(max), "x".repeat(max + 1)));
  if (min > 0) options.push(fc.constant("x".repeat(min - 1)));
  return fc.oneof(...options);
}

function numberOf(schema: JsonSchema, integer: boolean, strict: boolean): fc.Arbitrary<number> {
  const low = schema.minimum ?? (schema.exclusiveMinimum === undefined ? undefined : schema.exclusiveMinimum + 1);
  const high = schema.maximum ?? (schema.exclusiveMaximum === undefined ? undefined : schema.exclusiveMaximum - 1);
  if (strict) return integer ? fc.integer({ min: low ?? 0, max: high ?? 1000 }) : fc.double({ min: low ?? 0, max: high ?? 1000, noNaN: true, noDefaultInfinity: true });
  const bounds = [low, high].filter((b): b is number => b !== undefined).flatMap((b) => [b, b - 1, b + 1]);
  const base = integer ? fc.integer({ min: low ?? -1000, max: high ?? 100_000 }) : fc.double({ min: low ?? -1e6, max: high ?? 1e6, noNaN: true, noDefaultInfinity: true });
  return fc.oneof(base, fc.constantFrom(0, -1, 1, 0.5, 2 ** 53, -(2 ** 63), 1e308, ...bounds));
}

/** The smallest value `schema` allows: where a recursive schema stops. */
function minimalOf(schema: JsonSchema, doc: SchemaDocument, hops = 0): unknown {
  const resolved = resolve(schema, doc);
  if (resolved.const !== undefined) return resolved.const;
  if (resolved.enum) return resolved.enum[0];
  const alternatives = resolved.anyOf ?? resolved.oneOf ?? resolved.allOf;
  if (alternatives && alternatives.length > 0) return minimalOf(alternatives[0]!, doc, hops + 1);
  const types = Array.isArray(resolved.type) ? resolved.type : [resolved.type];
  if (types.includes("null")) return null;
  if (types.includes("array")) return [];
  if (types.includes("object")) {
    if (hops > 3) return {};
    return Object.fromEntries((resolved.required ?? []).map((name) => [name, minimalOf(resolved.properties?.[name] ?? {}, doc, hops + 1)]));
  }
  if (types.includes("string")) return resolved.format === "uuid" ? "00000000-0000-4000-8000-000000000000" : "x".repeat(resolved.minLength ?? 1);
  if (types.includes("integer") || types.includes("number")) return resolved.minimum ?? 0;
  if (types.includes("boolean")) return false;
  return null;
}

/** A value for `schema`; `depth` counts the `$ref`s followed, to bound recursive schemas. */
export function valueOf(schema: JsonSchema, doc: SchemaDocument, vocabulary: Vocabulary, depth = 0): fc.Arbitrary<unknown> {
  if (schema.$ref) {
    if (depth >= MAX_REF_DEPTH) return fc.constant(minimalOf(schema, doc));
    return fc.constant(null).chain(() => valueOf(resolve(schema, doc), doc, vocabulary, depth + 1));
  }
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives) return fc.oneof(...alternatives.map((s) => valueOf(s, doc, vocabulary, depth)));
  if (schema.allOf && schema.allOf.length > 0) return valueOf(schema.allOf[0]!, doc, vocabulary, depth);
  const types = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
  if (types.length === 0) return fc.jsonValue({ maxDepth: 2 });
  return fc.oneof(...types.map((type) => valueOfType(type, schema, doc, vocabulary, depth)));
}

function valueOfType(type: string, schema: JsonSchema, doc: SchemaDocument, vocabulary: Vocabulary, depth: number): fc.Arbitrary<unknown> {
  switch (type) {
    case "null":
      return fc.constant(null);
    case "boolean":
      return fc.boolean();
    case "integer":
      return numberOf(schema, true, vocabulary.strict ?? false);
    case "number":
      return numberOf(schema, false, vocabulary.strict ?? false);
    case "string":
      return stringOf(schema, vocabulary);
    case "array": {
      const items = schema.items ? valueOf(schema.items, doc, vocabulary, depth) : fc.jsonValue({ maxDepth: 1 });
      const maxLength = Math.min(schema.maxItems ?? 3, 3);
      return fc.array(items, { minLength: Math.min(schema.minItems ?? 0, maxLength), maxLength });
    }
    case "object":
      return objectOf(schema, doc, vocabulary, depth);
    default:
      return fc.jsonValue({ maxDepth: 1 });
  }
}

function objectOf(schema: JsonSchema, doc: SchemaDocument, vocabulary: Vocabulary, depth: number): fc.Arbitrary<Record<string, unknown>> {
  const properties = schema.properties ?? {};
  const record = fc.record(
    Object.fromEntries(Object.entries(properties).map(([name, s]) => [name, valueOf(s, doc, vocabulary, depth)])),
    { requiredKeys: (schema.required ?? []).filter((name) => name in properties) },
  );
  const extra = schema.additionalProperties;
  if (extra === undefined || extra === false) return record;
  // Open maps (metadata, metrics): keys from the vocabulary and the nasty strings.
  const key = vocabulary.strict
    ? fc.constantFrom(...vocabulary.words)
    : fc.oneof(fc.constantFrom(...vocabulary.words), fc.constantFrom(...NASTY_STRINGS), fc.string({ maxLength: 12 }));
  const values = extra === true ? fc.jsonValue({ maxDepth: 1 }) : valueOf(extra, doc, vocabulary, depth);
  return fc.tuple(record, fc.array(fc.tuple(key, values), { maxLength: 4 })).map(([fixed, entries]) => {
    const out: Record<string, unknown> = { ...fixed };
    // defineProperty: a key named __proto__ must be an own key, as JSON.parse makes it.
    for (const [k, v] of entries) Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
    return out;
  });
}
