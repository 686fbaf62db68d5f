/**
 * The filter builder's model and its two-way mapping to the API's filter tree (docs/search.md):
 * a group is `{"and": [...]}` or `{"or": [...]}`, wrapped in `{"not": ...}` when negated; a leaf is
 * `{"type", "column_id", "operator", "value", "case_sensitive"}`. The mapping is deterministic,
 * so a 422's `loc` (which walks the tree that was sent) leads back to the leaf it names.
 */
import type { ValidationItem } from "../api/client";
import { OPERATORS_BY_TYPE } from "../../../src/search/filter-operators";
import type { FilterJson, FilterLeafJson, FilterType } from "../api/types";
import { FULLY_ANNOTATED, fullyAnnotatedJson, fullyAnnotatedLeaf, isFullyAnnotatedJson } from "../annotations/fully-annotated-leaf";
import type { FilterNode, GroupNode, LeafNode } from "./filter-nodes";

// The node types live in their own module, which the fully_annotated leaf uses too (no import circle).
export type { FilterNode, GroupNode, LeafNode } from "./filter-nodes";

/**
 * The operators each filter type allows: the service's own table (pure data, bundled into the
 * page), so the builder never offers an operator the service would refuse.
 */
export const OPERATORS: Record<FilterType, readonly string[]> = OPERATORS_BY_TYPE;

/** The operator a new condition starts with, where the first of the list is not the likely one. */
const FIRST_OPERATOR: Partial<Record<FilterType, string>> = { date: "gte", collection: "contains" };

export function firstOperator(type: FilterType): string {
  return FIRST_OPERATOR[type] ?? OPERATORS[type][0]!;
}

export const OPERATOR_LABELS: Record<string, string> = {
  eq: "=",
  ne: "≠",
  gt: ">",
  gte: "≥",
  lt: "<",
  lte: "≤",
  between: "between",
  contains: "contains",
  one_of: "is one of",
  not_in: "is none of",
};

/** Operators whose value is a list. */
export const LIST_OPERATORS = new Set(["one_of", "not_in"]);

let counter = 0;
export const newId = () => `f${++counter}`;

export function emptyGroup(op: "and" | "or" = "and", negate = false): GroupNode {
  return { kind: "group", id: newId(), op, negate, children: [] };
}

export function newLeaf(column: string, type: FilterType): LeafNode {
  const operator = firstOperator(type);
  return { kind: "leaf", id: newId(), column, type, operator, value: defaultValue(type, operator), caseSensitive: true };
}

export function defaultValue(type: FilterType, operator: string): unknown {
  if (LIST_OPERATORS.has(operator) || (type === "collection" && operator === "eq")) return [];
  if (operator === "between") return [0, 1];
  if (type === "boolean") return true;
  if (type === "number") return 0;
  return "";
}

function leafToJson(leaf: LeafNode): FilterJson {
  if (leaf.column === FULLY_ANNOTATED) return fullyAnnotatedJson(leaf);
  const json: FilterLeafJson = { type: leaf.type, column_id: leaf.column, operator: leaf.operator, value: leaf.value };
  if (leaf.type === "text" || leaf.type === "collection") json.case_sensitive = leaf.caseSensitive;
  return json;
}

export function nodeToJson(node: FilterNode): FilterJson {
  if (node.kind === "leaf") return leafToJson(node);
  const group: FilterJson = node.op === "and" ? { and: node.children.map(nodeToJson) } : { or: node.children.map(nodeToJson) };
  return node.negate ? { not: group } : group;
}

/** The tree to send, or null when the root group is empty (no filter). */
export function toFilterTree(root: GroupNode): FilterJson | null {
  return root.children.length === 0 && !root.negate ? null : nodeToJson(root);
}

export class FilterParseError extends Error {}

function isObject(value: unknown): value is Record<string, unknown> {
  return !!value && typeof value === "object" && !Array.isArray(value);
}

const FILTER_TYPES: readonly FilterType[] = ["text", "date", "collection", "number", "id", "boolean"];

function leafFromJson(json: Record<string, unknown>, typeOf: (column: string) => FilterType | undefined, path: string): LeafNode {
  if (isFullyAnnotatedJson(json)) return fullyAnnotatedLeaf(newId(), json.user_ids);
  const column = typeof json.column_id === "string" ? json.column_id : typeof json.name === "string" ? json.name : undefined;
  if (!column) throw new FilterParseError(`${path}: a leaf needs a column_id`);
  const declared = typeof json.type === "string" && (FILTER_TYPES as readonly string[]).includes(json.type) ? (json.type as FilterType) : undefined;
  // The type is kept as written: the service, not the page, judges whether it fits the column.
  const type = declared ?? typeOf(column) ?? "text";
  const operator = typeof json.operator === "string" ? json.operator : type === "id" || type === "boolean" ? "eq" : String(json.operator ?? "eq");
  return {
    kind: "leaf",
    id: newId(),
    column,
    type,
    operator,
    value: json.value,
    caseSensitive: json.case_sensitive !== false,
  };
}

function fromJson(json: unknown, typeOf: (column: string) => FilterType | undefined, path: string): FilterNode {
  if (!isObject(json)) throw new FilterParseError(`${path}: expected an object`);
  const keys = Object.keys(json);
  if (keys.length === 1 && (keys[0] === "and" || keys[0] === "or")) {
    const op = keys[0];
    const children = json[op];
    if (!Array.isArray(children)) throw new FilterParseError(`${path}.${op}: expected a list`);
    return { kind: "group", id: newId(), op, negate: false, children: children.map((c, i) => fromJson(c, typeOf, `${path}.${op}[${i}]`)) };
  }
  if (keys.length === 1 && keys[0] === "not") {
    const inner = fromJson(json.not, typeOf, `${path}.not`);
    if (inner.kind === "group" && !inner.negate) return { ...inner, negate: true };
    return { kind: "group", id: newId(), op: "and", negate: true, children: [inner] };
  }
  if (keys.length === 1 && keys[0] === "filter") {
    if (!isObject(json.filter)) throw new FilterParseError(`${path}.filter: expected a leaf`);
    return leafFromJson(json.filter, typeOf, `${path}.filter`);
  }
  return leafFromJson(json, typeOf, path);
}

/** The builder's model of a filter tree (the root is always a group). */
export function fromFilterTree(json: FilterJson | null, typeOf: (column: string) => FilterType | undefined): GroupNode {
  if (json === null) return emptyGroup();
  const node = fromJson(json, typeOf, "filter");
  return node.kind === "group" ? node : { ...emptyGroup(), children: [node] };
}

/**
 * The node a 422 points at: its `loc` is ["body", "filter_tree", ...] through the JSON that
 * nodeToJson made from `root`. Returns the deepest node reached and the rest of the path (for a
 * leaf, the faulty field: "value", "operator", "column_id"...).
 */
export function nodeAt(root: GroupNode, loc: ValidationItem["loc"]): { node: FilterNode; field: string | null } | null {
  if (loc[0] !== "body" || loc[1] !== "filter_tree") return null;
  let node: FilterNode = root;
  let i = 2;
  while (i < loc.length) {
    const step = loc[i];
    if (node.kind === "leaf") {
      if (step === "filter") {
        i++;
        continue;
      }
      return { node, field: String(step) };
    }
    if (step === "not" && node.negate) {
      i++;
      continue;
    }
    if ((step === "and" || step === "or") && step === node.op && typeof loc[i + 1] === "number") {
      const child: FilterNode | undefined = node.children[loc[i + 1] as number];
      if (!child) break;
      node = child;
      i += 2;
      continue;
    }
    break;
  }
  return { node, field: null };
}

/** The messages of a 422, by the id of the builder node they point at ("" for the rest). */
export function errorsByNode(root: GroupNode, items: ValidationItem[]): Map<string, string[]> {
  const byNode = new Map<string, string[]>();
  for (const item of items) {
    const found = nodeAt(root, item.loc);
    const key = found ? found.node.id : "";
    const text = found?.field ? `${found.field}: ${item.msg}` : item.msg;
    byNode.set(key, [...(byNode.get(key) ?? []), text]);
  }
  return byNode;
}

/** A copy of the tree with `id` replaced by what `change` returns (null removes it). */
export function updateNode(root: GroupNode, id: string, change: (node: FilterNode) => FilterNode | null): GroupNode {
  const visit = (node: FilterNode): FilterNode | null => {
    if (node.id === id) return change(node);
    if (node.kind === "leaf") return node;
    return { ...node, children: node.children.map(visit).filter((n): n is FilterNode => n !== null) };
  };
  return (visit(root) as GroupNode | null) ?? emptyGroup();
}
