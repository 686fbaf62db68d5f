/**
 * A trace's spans as a tree (by parent_id; top-level spans name the trace as their parent) and
 * each record's place on the trace's time axis: start from created_at, length from the
 * `duration_ns` metric when the record has one.
 */
import type { ApiRecord } from "../api/types";

export interface TreeNode {
  record: ApiRecord;
  depth: number;
  children: TreeNode[];
  /** Milliseconds from the trace's start. */
  start: number;
  /** Milliseconds, or null when the record has no duration_ns. */
  duration: number | null;
}

export interface TraceTimeline {
  root: TreeNode;
  /** Milliseconds from the trace's start to the end of its last record. */
  total: number;
  byId: Map<string, TreeNode>;
  parentOf: Map<string, string>;
}

function startMs(record: ApiRecord): number {
  const ms = Date.parse(String(record.created_at ?? ""));
  return Number.isNaN(ms) ? 0 : ms;
}

export function durationMs(record: ApiRecord): number | null {
  const ns = (record.metrics as Record<string, unknown> | undefined)?.duration_ns;
  return typeof ns === "number" && ns >= 0 ? ns / 1e6 : null;
}

function order(a: TreeNode, b: TreeNode): number {
  return a.start - b.start || Number(a.record.step_number ?? 0) - Number(b.record.step_number ?? 0) || a.record.id.localeCompare(b.record.id);
}

export function buildTimeline(trace: ApiRecord, spans: ApiRecord[]): TraceTimeline {
  const t0 = startMs(trace);
  const node = (record: ApiRecord): TreeNode => ({ record, depth: 0, children: [], start: startMs(record) - t0, duration: durationMs(record) });
  const root = node(trace);
  const byId = new Map<string, TreeNode>([[trace.id, root]]);
  for (const span of spans) byId.set(span.id, node(span));
  const parentOf = new Map<string, string>();
  for (const span of spans) {
    const parentId = typeof span.parent_id === "string" && byId.has(span.parent_id) && span.parent_id !== span.id ? span.parent_id : trace.id;
    byId.get(parentId)!.children.push(byId.get(span.id)!);
    parentOf.set(span.id, parentId);
  }
  let total = root.duration ?? 0;
  const visit = (n: TreeNode, depth: number, seen: Set<string>) => {
    n.depth = depth;
    n.children.sort(order);
    total = Math.max(total, n.start + (n.duration ?? 0));
    for (const child of n.children) {
      // A parent loop in bad data must not hang the page.
      if (seen.has(child.record.id)) continue;
      seen.add(child.record.id);
      visit(child, depth + 1, seen);
    }
  };
  visit(root, 0, new Set([trace.id]));
  return { root, total: Math.max(total, 1), byId, parentOf };
}

/** The rows shown: depth-first, skipping the children of collapsed nodes. */
export function visibleRows(root: TreeNode, collapsed: ReadonlySet<string>): TreeNode[] {
  const rows: TreeNode[] = [];
  const walk = (n: TreeNode) => {
    rows.push(n);
    if (!collapsed.has(n.record.id)) for (const child of n.children) walk(child);
  };
  walk(root);
  return rows;
}
