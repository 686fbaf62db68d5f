/**
 * The filter leaf types and the operators each accepts (contract, section 4): data read by request
 * validation, the OpenAPI description and docs/search.md alike.
 */
import type { FilterType } from "../columns/standard-columns";

export const LEAF_TYPES = ["id", "date", "number", "boolean", "collection", "text", "fully_annotated"] as const;
export type LeafType = (typeof LEAF_TYPES)[number];

export type Operator = "eq" | "ne" | "gt" | "gte" | "lt" | "lte" | "between" | "contains" | "one_of" | "not_in";

export const OPERATORS_BY_TYPE: Record<FilterType, readonly Operator[]> = {
  id: ["eq", "ne", "one_of", "not_in", "contains"],
  date: ["eq", "ne", "gt", "gte", "lt", "lte"],
  number: ["eq", "ne", "gt", "gte", "lt", "lte", "between"],
  boolean: ["eq", "ne"],
  collection: ["eq", "contains", "one_of", "not_in"],
  text: ["eq", "ne", "contains", "one_of", "not_in"],
};

/** The operator of a leaf that names none (the interface's id and boolean filters default to eq). */
export const DEFAULT_OPERATOR: Partial<Record<FilterType, Operator>> = { id: "eq", boolean: "eq" };

/** Leaf types that honour `case_sensitive` (default true). */
export const CASE_SENSITIVE_TYPES: ReadonlySet<FilterType> = new Set(["text", "collection"]);

export function isLeafType(value: unknown): value is LeafType {
  return typeof value === "string" && (LEAF_TYPES as readonly string[]).includes(value);
}
