/** The aggregate and agreement arithmetic (src/annotations/record-feedback.ts), pure. */
import { describe, expect, it } from "vitest";
import { agreementOf, aggregateOf, scoreBuckets } from "../src/annotations/record-feedback";
import type { TemplateDefinition } from "../src/annotations/template-store";

const template = (constraints: any): TemplateDefinition => ({ id: "t", name: "t", annotationType: constraints.annotation_type, constraints, includeExplanation: false });
const ratings = (...values: unknown[]) => values.map((value, i) => ({ annotatorId: `u${i}`, value, explanation: null }));

describe("aggregates and agreement", () => {
  it("covers [min, max] with at most five buckets of equal width", () => {
    expect(scoreBuckets(0, 1)).toEqual([{ min_inclusive: 0, max_exclusive: 1 }, { min_inclusive: 1, max_exclusive: 2 }]);
    expect(scoreBuckets(0, 100).length).toBe(5);
    expect(scoreBuckets(0, 100).at(-1)).toEqual({ min_inclusive: 84, max_exclusive: 101 });
  });

  it("counts a tie when likes equal dislikes", () => {
    expect(aggregateOf(template({ annotation_type: "like_dislike" }), ratings(true, false))).toMatchObject({ like_count: 1, dislike_count: 1, tie_count: 1 });
    expect(aggregateOf(template({ annotation_type: "like_dislike" }), ratings(true), 2)).toMatchObject({ tie_count: 0, unrated_count: 2 });
  });

  it("agrees fully when every pair matches, never for text or one rating", () => {
    expect(agreementOf(template({ annotation_type: "star" }), ratings(4, 4, 4))).toBe(1);
    expect(agreementOf(template({ annotation_type: "score", min: 0, max: 10 }), ratings(0, 10))).toBe(0);
    expect(agreementOf(template({ annotation_type: "tags", tags: ["a", "b", "c"] }), ratings(["a"], ["a", "b"], ["c"]))).toBeCloseTo((0.5 + 0 + 0) / 3, 10);
    expect(agreementOf(template({ annotation_type: "text" }), ratings("a", "a"))).toBeUndefined();
    expect(agreementOf(template({ annotation_type: "choice", choices: ["x"] }), ratings("x"))).toBeUndefined();
  });
});
