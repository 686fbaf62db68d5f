/**
 * JSON helpers that never recurse: an input or output is whatever an end user of the logged
 * application typed, and text such as `[[[[…]]]]` thousands of levels deep parses fine but
 * overflows the stack of anything that walks it recursively (JSON.stringify included).
 */

/** Levels of arrays and objects in `value` (0 for a scalar). */
export function nestingDepth(value: unknown): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop()!;
    if (current === null || typeof current !== "object") continue;
    deepest = Math.max(deepest, depth + 1);
    for (const child of Object.values(current)) stack.push([child, depth + 1]);
  }
  return deepest;
}

type Step = { text: string } | { value: unknown };

/** Compact JSON text of `value`, as JSON.stringify would write it, at any depth. */
export function jsonText(value: unknown): string {
  const out: string[] = [];
  const stack: Step[] = [{ value }];
  while (stack.length > 0) {
    const step = stack.pop()!;
    if ("text" in step) {
      out.push(step.text);
      continue;
    }
    const current = step.value;
    if (current === null || typeof current !== "object") {
      out.push(JSON.stringify(current) ?? "null");
      continue;
    }
    const array = Array.isArray(current);
    const entries = array ? current.map((v, i) => [String(i), v] as const) : Object.entries(current);
    const steps: Step[] = [{ text: array ? "[" : "{" }];
    entries.forEach(([key, child], i) => {
      if (i > 0) steps.push({ text: "," });
      if (!array) steps.push({ text: `${JSON.stringify(key)}:` });
      steps.push({ value: child });
    });
    steps.push({ text: array ? "]" : "}" });
    for (let i = steps.length - 1; i >= 0; i--) stack.push(steps[i]!);
  }
  return out.join("");
}
