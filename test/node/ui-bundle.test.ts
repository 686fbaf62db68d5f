/// <reference types="node" />
/**
 * The trace explorer's build (scripts/lib/build-ui.ts) as a browser receives it: every script the
 * page loads, its entry and every chunk that entry imports (at once, or lazily like the dashboard),
 * gzipped, stays under the 150 KB budget, and the page names nothing outside the worker's
 * own origin (it must work offline and in locked-down networks).
 */
import { existsSync, readFileSync } from "node:fs";
import { join, posix } from "node:path";
import { gzipSync } from "node:zlib";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureUiBuilt, JS_BUDGET_GZIP_BYTES, UI_DIST } from "../../scripts/lib/build-ui";

let html: string;

beforeAll(async () => {
  await ensureUiBuilt();
  html = readFileSync(join(UI_DIST, "index.html"), "utf8");
}, 60_000);

/** The chunks a script imports: statically (`from"./x.js"`) and lazily (`import("./x.js")`). */
function importsOf(code: string): { eager: string[]; lazy: string[] } {
  const eager = [...code.matchAll(/(?:\bfrom\s*|\bimport\s*)"(\.\/[^"]+\.js)"/g)].map((m) => m[1]!);
  const lazy = [...code.matchAll(/\bimport\s*\(\s*"(\.\/[^"]+\.js)"\s*\)/g)].map((m) => m[1]!);
  return { eager, lazy };
}

describe("explorer bundle", () => {
  it(`loads at most ${JS_BUDGET_GZIP_BYTES / 1024} KB of JavaScript, gzipped, lazy chunks included`, () => {
    const entries = [...html.matchAll(/<script[^>]*src="([^"]+)"/g)].map((m) => m[1]!);
    expect(entries.length).toBeGreaterThan(0);
    // Every script reachable from the page, following imports; the first load is what the entry
    // pulls in without a dynamic import.
    const seen = new Map<string, { gzip: number; eager: boolean }>();
    const visit = (path: string, eager: boolean) => {
      const known = seen.get(path);
      if (known && (known.eager || !eager)) return;
      const file = join(UI_DIST, path);
      // A chunk the build did not write would fail at run time and hide from this sum.
      expect(existsSync(file), `${path} is imported but not built`).toBe(true);
      const code = readFileSync(file);
      seen.set(path, { gzip: gzipSync(code, { level: 9 }).length, eager });
      const imports = importsOf(code.toString("utf8"));
      for (const next of imports.eager) visit(posix.join(posix.dirname(path), next), eager);
      for (const next of imports.lazy) visit(posix.join(posix.dirname(path), next), false);
    };
    for (const src of entries) visit(src, true);
    const total = [...seen.values()].reduce((sum, s) => sum + s.gzip, 0);
    const firstLoad = [...seen.values()].filter((s) => s.eager).reduce((sum, s) => sum + s.gzip, 0);
    // The dashboard is a lazy chunk: if it came into the first load, the split stopped working.
    expect([...seen].some(([path, s]) => path.includes("dashboard-page") && !s.eager)).toBe(true);
    console.log(
      `[ui] explorer JavaScript: ${(total / 1024).toFixed(1)} KB gzipped in ${seen.size} files, ${(firstLoad / 1024).toFixed(1)} KB on first load (budget ${JS_BUDGET_GZIP_BYTES / 1024} KB)`,
    );
    expect(total).toBeLessThanOrEqual(JS_BUDGET_GZIP_BYTES);
  });

  it("refers only to its own origin", () => {
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
  });
});
