/** Aggregates and rating values as short text: table cells, the ratings panel, the queue page. */
import type { Aggregate, AnnotationType, RatingValue, TreeChoiceNode } from "./annotation-types";

const one = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(1));

/** The number of ratings an aggregate counts. */
export function ratingCount(aggregate: Aggregate): number {
  switch (aggregate.annotation_type) {
    case "like_dislike":
      return aggregate.like_count + aggregate.dislike_count;
    case "star":
      return Object.values(aggregate.counts).reduce((a, b) => a + b, 0);
    case "score":
      return aggregate.buckets.reduce((a, b) => a + b.count, 0);
    case "text":
      return aggregate.count;
    default:
      // A tags rating counts once per tag: the number of ratings is not recoverable, so the
      // panel counts the ratings themselves; this is the number of values given.
      return Object.values(aggregate.counts).reduce((a, b) => a + b, 0);
  }
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

/**
 * One line: "2 likes · 1 dislike", "★ 4.5 (2)", "avg 7 (3)", "good 2 · bad 1", "2 notes". Words
 * and plain glyphs rather than emoji: a machine without an emoji font (a server's headless
 * browser, some Linux desktops) would show empty boxes. `labels` names tree_choice nodes.
 */
export function aggregateText(aggregate: Aggregate, labels?: ReadonlyMap<string, string>): string {
  switch (aggregate.annotation_type) {
    case "like_dislike":
      return `${plural(aggregate.like_count, "like")} · ${plural(aggregate.dislike_count, "dislike")}`;
    case "star":
      return aggregate.average === null ? "no stars" : `★ ${one(aggregate.average)} (${ratingCount(aggregate)})`;
    case "score":
      return aggregate.average === null ? "no scores" : `avg ${one(aggregate.average)} (${ratingCount(aggregate)})`;
    case "text":
      return plural(aggregate.count, "note");
    default:
      return Object.entries(aggregate.counts)
        .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
        .map(([value, n]) => `${labels?.get(value) ?? value} ${n}`)
        .join(" · ");
  }
}

/** A tree_choice node id -> its label path ("Quality › Wrong answer"). */
export function treeLabels(tree: readonly TreeChoiceNode[] | undefined): Map<string, string> {
  const labels = new Map<string, string>();
  const stack: { node: TreeChoiceNode; prefix: string }[] = (tree ?? []).map((node) => ({ node, prefix: "" }));
  while (stack.length > 0) {
    const { node, prefix } = stack.pop()!;
    const label = prefix ? `${prefix} › ${node.label}` : node.label;
    labels.set(node.id, label);
    for (const child of node.children ?? []) stack.push({ node: child, prefix: label });
  }
  return labels;
}

export function starsText(n: number): string {
  return "★".repeat(Math.max(0, Math.min(5, n))) + "☆".repeat(Math.max(0, 5 - n));
}

export function valueText(type: AnnotationType, value: RatingValue, labels?: ReadonlyMap<string, string>): string {
  if (typeof value === "boolean") return value ? "like" : "dislike";
  if (type === "star" && typeof value === "number") return starsText(value);
  if (Array.isArray(value)) return value.join(", ");
  if (typeof value === "string") return labels?.get(value) ?? value;
  return String(value);
}
