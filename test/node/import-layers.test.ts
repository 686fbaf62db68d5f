/**
 * The shape of the code (docs/architecture.md): src/'s folders stand in layers, and a file
 * imports only from its own layer or the ones below, never upward; no module imports itself
 * through others (an import circle), in the service, the explorer, the scripts, the benches or
 * the tests. A new folder under src/ fails here until it is given its layer here and its line in
 * docs/architecture.md. Reads the sources only: no server.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
const SRC = join(ROOT, "src");

/**
 * src/'s top-level folders and files, lowest layer first. Within a layer imports go either way
 * (projects, ingest, columns, retention and deletion use one another); across layers only down.
 */
export const LAYERS: readonly (readonly string[])[] = [
  // the worker's bindings and the plumbing every capability uses
  ["env.ts", "db", "http", "limits"],
  // below the records: shard routing and sizes, a project's partitions across the shards, identity,
  // provisioning, prices, the text index, the API page
  ["shards", "partitions", "auth", "admin", "pricing", "text-index", "docs"],
  // the records and what they hang off
  // (redaction masks text inside ingest's write path, and its apply job rewrites ingest's rows)
  ["projects", "columns", "ingest", "retention", "deletion", "redaction"],
  ["annotations"],
  ["search"],
  // capabilities built on search, ingest and deletion
  ["annotation-queues", "analytics", "compat", "delete-by-filter", "export", "otlp", "moves"],
  // alerts watch analytics' figures (metrics/search), read through analytics' own function
  ["alerts"],
  ["maintenance"],
  // derived data's upkeep after writes: it runs the text index's, the metric cells' and maintenance's chunks
  ["upkeep"],
  // online evaluations: scoring after writes reads records through the shard routes, writes metrics like ingest, requests the upkeep
  ["evaluations"],
  // entry points: the routers and the worker's handlers
  ["app.ts", "index.ts"],
];

function sourceFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    // bench/data holds generated data and old checkouts of the service (the storage bench's
    // baselines), git-ignored: not this tree's code.
    const generated = entry.name === "node_modules" || entry.name === "dist" || entry.name.startsWith(".") || path === join(ROOT, "bench", "data");
    if (entry.isDirectory()) return generated ? [] : sourceFiles(path);
    return /\.tsx?$/.test(entry.name) && !entry.name.endsWith(".d.ts") ? [path] : [];
  });
}

/** The files a module imports by relative path (static, re-exported and dynamic imports). */
function relativeImports(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const found: string[] = [];
  for (const match of text.matchAll(/(?:\bfrom|\bimport)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)) {
    const target = resolve(dirname(file), match[1]!);
    const hit = [target, `${target}.ts`, `${target}.tsx`, join(target, "index.ts"), join(target, "index.tsx")].find((c) => existsSync(c) && statSync(c).isFile());
    if (hit) found.push(hit);
  }
  return found;
}

const topOf = (file: string) => relative(SRC, file).split("/")[0]!;
const layerOf = (top: string) => LAYERS.findIndex((layer) => layer.includes(top));
const rel = (file: string) => relative(ROOT, file);

/** Every import circle among the files (strongly connected components of more than one file, or a file importing itself). */
function circles(files: string[]): string[][] {
  const graph = new Map(files.map((f) => [f, relativeImports(f)]));
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let next = 0;
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(rel(w));
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
    }
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return found;
}

describe("the layers of src/", () => {
  const files = sourceFiles(SRC);

  it("give every folder and file at the top of src/ a layer, and docs/architecture.md a line for each", () => {
    const tops = [...new Set(files.map(topOf))].sort();
    expect(tops.filter((top) => layerOf(top) < 0)).toEqual([]);
    const architecture = readFileSync(join(ROOT, "docs", "architecture.md"), "utf8");
    const described = (top: string) => architecture.includes(`src/${top}${top.endsWith(".ts") ? "" : "/"}`);
    expect(tops.filter((top) => !described(top))).toEqual([]);
  });

  it("are never crossed upward, and nothing in src/ imports from outside it", () => {
    const upward: string[] = [];
    for (const file of files) {
      for (const target of relativeImports(file)) {
        if (!target.startsWith(`${SRC}/`)) {
          upward.push(`${rel(file)} -> ${rel(target)} (outside src/)`);
          continue;
        }
        const [from, to] = [topOf(file), topOf(target)];
        if (from !== to && layerOf(to) > layerOf(from)) upward.push(`${rel(file)} -> ${rel(target)}`);
      }
    }
    expect(upward).toEqual([]);
  });
});

describe("import circles", () => {
  it.each(["src", "ui/src", "scripts", "bench", "test"])("none in %s", (dir) => {
    expect(circles(sourceFiles(join(ROOT, dir)))).toEqual([]);
  });
});
