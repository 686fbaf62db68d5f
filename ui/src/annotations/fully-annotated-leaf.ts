/**
 * The filter tree's `fully_annotated` leaf (contract section 8): `{type: "fully_annotated",
 * user_ids?}` matches a record rated with every template of the project by each of `user_ids`
 * (absent: by anyone). It names no column, so the filter builder keeps it as a leaf on a
 * pseudo-column whose value is the list of user ids.
 */
import type { LeafNode } from "../filters/filter-nodes";

export const FULLY_ANNOTATED = "fully_annotated";

export interface FullyAnnotatedJson {
  type: "fully_annotated";
  user_ids?: string[];
}

export function isFullyAnnotatedJson(json: Record<string, unknown>): boolean {
  return json.type === FULLY_ANNOTATED;
}

export function fullyAnnotatedLeaf(id: string, userIds: unknown): LeafNode {
  const ids = Array.isArray(userIds) ? userIds.filter((u): u is string => typeof u === "string") : [];
  // "id" only so that the builder offers no case-sensitivity switch; the type sent is fully_annotated.
  return { kind: "leaf", id, column: FULLY_ANNOTATED, type: "id", operator: "eq", value: ids, caseSensitive: true };
}

export function fullyAnnotatedJson(leaf: LeafNode): FullyAnnotatedJson {
  const ids = Array.isArray(leaf.value) ? (leaf.value as string[]) : [];
  return ids.length > 0 ? { type: "fully_annotated", user_ids: ids } : { type: "fully_annotated" };
}
