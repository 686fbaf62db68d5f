/**
 * The run whose traces page measures the explorer's table render: in the browser test
 * (test/node/ui-browser.test.ts, "renders a 100-row table") and in `npm run bench -- ui`
 * (bench/ui). Text a cell cuts short, tags, metadata and three metrics, so the table has the
 * columns a user sees.
 */

/** Traces in the measured run: more than a page of 100. */
export const RENDER_TRACES = 120;

export function renderTimingTraces(count = RENDER_TRACES) {
  return Array.from({ length: count }, (_, i) => ({
    name: `request ${i}`,
    input: `Question number ${i}: ${"how do I configure the retention of my traces? ".repeat(3)}`,
    output: `Answer ${i}: ${"set the retention in the project settings. ".repeat(3)}`,
    tags: ["load", `bucket-${i % 7}`],
    user_metadata: { customer: `c-${i % 13}` },
    metrics: { duration_ns: 1_000_000 * (i + 1), toxicity: (i % 10) / 10, cost: 0.0001 * i },
  }));
}
