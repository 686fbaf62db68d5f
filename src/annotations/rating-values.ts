/**
 * A rating's value checked against its template (contract section 8, "Ratings"): what each type
 * accepts, and the number filters and sorts read (`num_value`: like 1 / dislike 0, stars, score).
 * A misfit is a FastAPI-shaped 422 item at `["body","rating","value"]` (or at `annotation_type`
 * when the rating names another type than the template's); `loc` is relative so the bulk route
 * can report it per operation.
 */
import type { ValidationErrorItem } from "../http/validation-errors";
import type { TemplateDefinition } from "./template-store";
import type { TreeChoiceNode } from "./template-schemas";

export const MAX_TEXT_RATING = 10_000;
export const MAX_TAGS_PER_RATING = 100;

export interface RatingInput {
  annotation_type: string;
  value?: unknown;
}

export interface CheckedRating {
  /** The value as stored (JSON). */
  json: string;
  /** Its number for filters and sorts, or null. */
  num: number | null;
}

type Fault = Omit<ValidationErrorItem, "loc"> & { field: "value" | "annotation_type" };

const fault = (type: string, msg: string, input: unknown, ctx?: Record<string, unknown>): Fault => ({ field: "value", type, msg, input, ...(ctx ? { ctx } : {}) });

function treeIds(nodes: readonly TreeChoiceNode[], into: Set<string>): Set<string> {
  for (const node of nodes) {
    into.add(node.id);
    treeIds(node.children ?? [], into);
  }
  return into;
}

const isInteger = (v: unknown): v is number => typeof v === "number" && Number.isInteger(v);

function checkString(value: unknown, allowed: readonly string[] | null, what: string): Fault | undefined {
  if (typeof value !== "string") return fault("string_type", "Input should be a valid string", value);
  if (value.length === 0) return fault("string_too_short", "String should have at least 1 character", value, { min_length: 1 });
  if (value.length > 255) return fault("string_too_long", "String should have at most 255 characters", value, { max_length: 255 });
  if (allowed && !allowed.includes(value)) return fault("value_error", `Value error, '${value}' is not one of the template's ${what}`, value);
  return undefined;
}

function checkValue(template: TemplateDefinition, value: unknown): Fault | CheckedRating {
  const c = template.constraints;
  switch (c.annotation_type) {
    case "like_dislike":
      if (typeof value !== "boolean") return fault("bool_type", "Input should be a valid boolean", value);
      return { json: JSON.stringify(value), num: value ? 1 : 0 };
    case "star":
      if (!isInteger(value)) return fault("int_type", "Input should be a valid integer", value);
      if (value < 1) return fault("greater_than_equal", "Input should be greater than or equal to 1", value, { ge: 1 });
      if (value > 5) return fault("less_than_equal", "Input should be less than or equal to 5", value, { le: 5 });
      return { json: JSON.stringify(value), num: value };
    case "score":
      if (!isInteger(value)) return fault("int_type", "Input should be a valid integer", value);
      if (value < c.min) return fault("greater_than_equal", `Input should be greater than or equal to ${c.min}`, value, { ge: c.min });
      if (value > c.max) return fault("less_than_equal", `Input should be less than or equal to ${c.max}`, value, { le: c.max });
      return { json: JSON.stringify(value), num: value };
    case "tags": {
      if (!Array.isArray(value)) return fault("list_type", "Input should be a valid list", value);
      if (value.length === 0) return fault("too_short", "List should have at least 1 item after validation, not 0", value, { field_type: "List", min_length: 1, actual_length: 0 });
      if (value.length > MAX_TAGS_PER_RATING) return fault("too_long", `List should have at most ${MAX_TAGS_PER_RATING} items after validation, not ${value.length}`, value);
      for (const tag of value) {
        const bad = checkString(tag, c.allow_other ? null : c.tags, "tags");
        if (bad) return bad;
      }
      return { json: JSON.stringify([...new Set(value as string[])]), num: null };
    }
    case "choice": {
      const bad = checkString(value, c.allow_other ? null : c.choices, "choices");
      return bad ?? { json: JSON.stringify(value), num: null };
    }
    case "tree_choice": {
      const bad = checkString(value, [...treeIds(c.choices_tree, new Set())], "choices");
      return bad ?? { json: JSON.stringify(value), num: null };
    }
    case "text":
      if (typeof value !== "string") return fault("string_type", "Input should be a valid string", value);
      if (value.trim().length === 0) return fault("string_too_short", "String should have at least 1 character", value, { min_length: 1 });
      if (value.length > MAX_TEXT_RATING) return fault("string_too_long", `String should have at most ${MAX_TEXT_RATING} characters`, value, { max_length: MAX_TEXT_RATING });
      return { json: JSON.stringify(value), num: null };
  }
}

/** The rating checked against the template, or the 422 item (loc under `prefix`). */
export function checkRating(template: TemplateDefinition, rating: RatingInput, prefix: (string | number)[]): CheckedRating | ValidationErrorItem {
  if (rating.annotation_type !== template.annotationType) {
    return {
      loc: [...prefix, "annotation_type"],
      msg: `Input should be '${template.annotationType}' (the template's annotation type)`,
      type: "literal_error",
      input: rating.annotation_type,
      ctx: { expected: `'${template.annotationType}'` },
    };
  }
  if (!("value" in rating) || rating.value === undefined) {
    return { loc: [...prefix, "value"], msg: "Field required", type: "missing", input: rating };
  }
  const checked = checkValue(template, rating.value);
  if ("field" in checked) {
    const { field, ...item } = checked;
    return { loc: [...prefix, field], ...item };
  }
  return checked;
}

export const isFault = (value: CheckedRating | ValidationErrorItem): value is ValidationErrorItem => "loc" in value;
