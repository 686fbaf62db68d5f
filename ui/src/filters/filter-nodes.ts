/**
 * The filter builder's tree (ui/src/filters/filter-model.ts maps it to and from the API's filter
 * tree): a leaf is one condition on one column, a group combines its children with and/or and may
 * be negated. Its own module so that the leaves built elsewhere (the fully_annotated leaf,
 * ui/src/annotations/fully-annotated-leaf.ts) need not import the model that imports them.
 */
import type { FilterType } from "../api/types";

export interface LeafNode {
  kind: "leaf";
  id: string;
  column: string;
  type: FilterType;
  operator: string;
  value: unknown;
  caseSensitive: boolean;
}

export interface GroupNode {
  kind: "group";
  id: string;
  op: "and" | "or";
  negate: boolean;
  children: FilterNode[];
}

export type FilterNode = LeafNode | GroupNode;
