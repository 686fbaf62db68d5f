/// <reference types="node" />
/**
 * The trace explorer's build (scripts/lib/build-ui.ts) as a browser receives it: every script the
 * page loads, gzipped, stays under the 150 KB budget, and the page names nothing outside
 * the worker's own origin (it must work offline and in locked-down networks).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureUiBuilt, JS_BUDGET_GZIP_BYTES, UI_DIST } from "../../scripts/lib/build-ui";

let html: string;

beforeAll(async () => {
  await ensureUiBuilt();
  html = readFileSync(join(UI_DIST, "index.html"), "utf8");
}, 60_000);

describe("explorer bundle", () => {
  it(`loads at most ${JS_BUDGET_GZIP_BYTES / 1024} KB of JavaScript, gzipped`, () => {
    const scripts = [...html.matchAll(/<script[^>]*src="([^"]+)"/g)].map((m) => m[1]!);
    expect(scripts.length).toBeGreaterThan(0);
    let total = 0;
    for (const src of scripts) {
      const code = readFileSync(join(UI_DIST, src));
      // A bundle that imports further chunks would hide them from this sum.
      expect(code.toString("utf8")).not.toMatch(/\bimport\s*\(|^import\s|from"\.\//m);
      total += gzipSync(code, { level: 9 }).length;
    }
    console.log(`[ui] explorer JavaScript: ${(total / 1024).toFixed(1)} KB gzipped (budget ${JS_BUDGET_GZIP_BYTES / 1024} KB)`);
    expect(total).toBeLessThanOrEqual(JS_BUDGET_GZIP_BYTES);
  });

  it("refers only to its own origin", () => {
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
  });
});
