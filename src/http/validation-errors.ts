/**
 * Validation failures in the FastAPI / Pydantic v2 shape the contract promises
 * (`{"detail": [{loc, msg, type, input, ctx}]}`), translated from zod issues.
 *
 * Schemas that need a Pydantic code zod has no issue for (bool_parsing, uuid_parsing, ...) raise a
 * custom issue with `params.pydantic = {type, msg, ctx}`; this module passes those through.
 */
import { z } from "zod";

export type Location = "body" | "query" | "path" | "header" | "form";

export interface ValidationErrorItem {
  loc: (string | number)[];
  msg: string;
  type: string;
  input?: unknown;
  ctx?: Record<string, unknown>;
}

export interface PydanticIssueParams {
  type: string;
  msg: string;
  ctx?: Record<string, unknown>;
}

type Issue = z.core.$ZodIssue;

const MISSING = Symbol("missing");

/** The value found at `path` inside `data`, or MISSING. */
function valueAt(data: unknown, path: readonly PropertyKey[]): unknown {
  let current: unknown = data;
  for (const key of path) {
    if (current === null || typeof current !== "object") return MISSING;
    const container = current as Record<PropertyKey, unknown>;
    if (!Object.hasOwn(container, key)) return MISSING;
    current = container[key];
  }
  return current;
}

function quoteList(values: readonly unknown[]): string {
  const quoted = values.map((v) => (typeof v === "string" ? `'${v}'` : String(v)));
  if (quoted.length <= 1) return quoted.join("");
  return `${quoted.slice(0, -1).join(", ")} or ${quoted[quoted.length - 1]}`;
}

function plural(n: number | bigint, word: string): string {
  return `${n} ${word}${Number(n) === 1 ? "" : "s"}`;
}

const INTEGER_TYPE_ERROR = "Input should be a valid integer";
const INTEGER_FORMATS = new Set(["safeint", "int32", "uint32", "int64", "uint64"]);

interface NumberDef {
  type?: string;
  format?: string;
  checks?: { _zod?: { def?: { check?: string; format?: string } } }[];
}

function isIntegerSchema(inst: unknown): boolean {
  const def = (inst as { _zod?: { def?: NumberDef } } | undefined)?._zod?.def;
  if (def?.type !== "number") return false;
  if (INTEGER_FORMATS.has(def.format ?? "")) return true;
  return (def.checks ?? []).some((c) => c._zod?.def?.check === "number_format" && INTEGER_FORMATS.has(c._zod.def.format ?? ""));
}

/*
 * zod reports a non-number sent to an integer field as `expected: "number"`, exactly as for a
 * float field, where Pydantic says int_type / int_parsing. The schema that raised an issue is
 * visible only while zod finalizes it, so this global error map gives integer fields' type errors
 * Pydantic's message, by which `describe` recognises them.
 */
z.config({
  customError: (issue) => (issue.code === "invalid_type" && isIntegerSchema(issue.inst) ? INTEGER_TYPE_ERROR : undefined),
});

const TYPE_BY_EXPECTED: Record<string, [string, string]> = {
  string: ["string_type", "Input should be a valid string"],
  number: ["float_type", "Input should be a valid number"],
  int: ["int_type", "Input should be a valid integer"],
  boolean: ["bool_type", "Input should be a valid boolean"],
  array: ["list_type", "Input should be a valid list"],
  tuple: ["list_type", "Input should be a valid list"],
  object: ["model_attributes_type", "Input should be a valid dictionary or object to extract fields from"],
  record: ["dict_type", "Input should be a valid dictionary"],
  null: ["none_required", "Input should be None"],
};

/** One zod issue in Pydantic's words, without its location. */
function describe(issue: Issue, input: unknown): Omit<ValidationErrorItem, "loc" | "input"> {
  switch (issue.code) {
    case "invalid_type": {
      if (input === MISSING || input === undefined) return { type: "missing", msg: "Field required" };
      if (issue.expected === "int" || issue.message === INTEGER_TYPE_ERROR) {
        if (typeof input === "string") {
          return { type: "int_parsing", msg: "Input should be a valid integer, unable to parse string as an integer" };
        }
        if (typeof input === "number") {
          return { type: "int_from_float", msg: "Input should be a valid integer, got a number with a fractional part" };
        }
        return { type: "int_type", msg: INTEGER_TYPE_ERROR };
      }
      if (issue.expected === "number" && typeof input === "string") {
        return { type: "float_parsing", msg: "Input should be a valid number, unable to parse string as a number" };
      }
      // Pydantic tries to read strings and numbers as booleans ("yes", 0) before giving up.
      if (issue.expected === "boolean" && (typeof input === "string" || typeof input === "number")) {
        return { type: "bool_parsing", msg: "Input should be a valid boolean, unable to interpret input" };
      }
      const known = TYPE_BY_EXPECTED[issue.expected];
      if (known) return { type: known[0], msg: known[1] };
      return { type: `${issue.expected}_type`, msg: `Input should be a valid ${issue.expected}` };
    }
    case "too_small": {
      const min = issue.minimum;
      if (issue.origin === "string") {
        return { type: "string_too_short", msg: `String should have at least ${plural(min, "character")}`, ctx: { min_length: Number(min) } };
      }
      if (issue.origin === "array" || issue.origin === "set") {
        const got = Array.isArray(input) ? input.length : 0;
        return { type: "too_short", msg: `List should have at least ${plural(min, "item")} after validation, not ${got}`, ctx: { field_type: "List", min_length: Number(min), actual_length: got } };
      }
      return issue.inclusive
        ? { type: "greater_than_equal", msg: `Input should be greater than or equal to ${min}`, ctx: { ge: Number(min) } }
        : { type: "greater_than", msg: `Input should be greater than ${min}`, ctx: { gt: Number(min) } };
    }
    case "too_big": {
      const max = issue.maximum;
      if (issue.origin === "string") {
        return { type: "string_too_long", msg: `String should have at most ${plural(max, "character")}`, ctx: { max_length: Number(max) } };
      }
      if (issue.origin === "array" || issue.origin === "set") {
        const got = Array.isArray(input) ? input.length : 0;
        return { type: "too_long", msg: `List should have at most ${plural(max, "item")} after validation, not ${got}`, ctx: { field_type: "List", max_length: Number(max), actual_length: got } };
      }
      return issue.inclusive
        ? { type: "less_than_equal", msg: `Input should be less than or equal to ${max}`, ctx: { le: Number(max) } }
        : { type: "less_than", msg: `Input should be less than ${max}`, ctx: { lt: Number(max) } };
    }
    case "invalid_format": {
      if (issue.format === "uuid" || issue.format === "guid") {
        return { type: "uuid_parsing", msg: "Input should be a valid UUID", ctx: { error: "invalid UUID format" } };
      }
      if (issue.format === "datetime" || issue.format === "date") {
        return { type: "datetime_from_date_parsing", msg: "Input should be a valid datetime", ctx: { error: "invalid datetime format" } };
      }
      return { type: "string_pattern_mismatch", msg: `String should match the ${issue.format} format`, ctx: { pattern: issue.pattern ?? issue.format } };
    }
    case "invalid_value": {
      const expected = quoteList(issue.values);
      return { type: "literal_error", msg: `Input should be ${expected}`, ctx: { expected } };
    }
    case "invalid_union": {
      if (issue.discriminator !== undefined) {
        // zod reports the tag's own path when the tag is there but unknown; the object's otherwise.
        const tag = issue.path[issue.path.length - 1] === issue.discriminator ? input : valueAt(input, [issue.discriminator]);
        const expectedTags = quoteList((issue as { options?: unknown[] }).options ?? []);
        if (tag === MISSING || tag === undefined) {
          return { type: "union_tag_not_found", msg: `Unable to extract tag using discriminator '${issue.discriminator}'`, ctx: { discriminator: `'${issue.discriminator}'` } };
        }
        return {
          type: "union_tag_invalid",
          msg: `Input tag '${String(tag)}' found using '${issue.discriminator}' does not match any of the expected tags: ${expectedTags}`,
          ctx: { discriminator: `'${issue.discriminator}'`, tag: String(tag), expected_tags: expectedTags },
        };
      }
      return { type: "union_type", msg: "Input does not match any of the allowed shapes" };
    }
    case "unrecognized_keys":
      return { type: "extra_forbidden", msg: `Extra inputs are not permitted: ${issue.keys.join(", ")}` };
    case "not_multiple_of":
      return { type: "multiple_of", msg: `Input should be a multiple of ${issue.divisor}`, ctx: { multiple_of: issue.divisor } };
    case "custom": {
      const pydantic = (issue.params as { pydantic?: PydanticIssueParams } | undefined)?.pydantic;
      if (pydantic) return { type: pydantic.type, msg: pydantic.msg, ...(pydantic.ctx ? { ctx: pydantic.ctx } : {}) };
      return { type: "value_error", msg: `Value error, ${issue.message}` };
    }
    default:
      return { type: "value_error", msg: issue.message };
  }
}

/**
 * Issues of a union with no discriminator are nested per branch; report the branch that got
 * furthest (deepest path) so the client sees the real fault, not "matches no shape".
 */
function flatten(issues: readonly Issue[]): Issue[] {
  const out: Issue[] = [];
  for (const issue of issues) {
    if (issue.code === "invalid_union" && issue.discriminator === undefined && issue.errors.length > 0) {
      const best = [...issue.errors].sort((a, b) => depth(b) - depth(a))[0] ?? [];
      const nested = flatten(best.map((i) => ({ ...i, path: [...issue.path, ...i.path] }) as Issue));
      out.push(...(nested.length > 0 ? nested : [issue]));
    } else {
      out.push(issue);
    }
  }
  return out;
}

function depth(branch: readonly Issue[]): number {
  return Math.max(0, ...branch.map((i) => i.path.length));
}

export function toValidationErrors(location: Location, issues: readonly Issue[], data: unknown): ValidationErrorItem[] {
  return flatten(issues).map((issue) => {
    const path = issue.path.map((p) => (typeof p === "number" ? p : String(p)));
    const input = valueAt(data, issue.path);
    const described = describe(issue, input);
    const item: ValidationErrorItem = { loc: [location, ...path], msg: described.msg, type: described.type };
    if (input !== MISSING) {
      item.input = input;
    } else if (described.type === "missing") {
      // Pydantic reports the object in which the field is missing.
      const parent = valueAt(data, issue.path.slice(0, -1));
      item.input = parent === MISSING ? null : parent;
    }
    if (described.ctx) item.ctx = described.ctx;
    return item;
  });
}
