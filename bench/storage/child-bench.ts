/**
 * Runs a bench of a source tree (this checkout or the baseline's) as a child process in that
 * tree, and reads back what it wrote: its dataset's SQLite file, its markdown report's table.
 * Each tree's bench runs its own code, so the "before" figures come from the "before" SQL.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";

export interface ChildOptions {
  /** The source tree (its bench/run.ts runs with it as the working directory). */
  tree: string;
  args: string[];
  /** Where the child writes its reports (honoured by trees whose bench/lib/paths.ts reads BENCH_RESULTS_DIR). */
  resultsDir: string;
}

export function runChildBench({ tree, args, resultsDir }: ChildOptions): void {
  const tsx = path.join(tree, "node_modules", ".bin", "tsx");
  console.log(`\n[storage] ${path.relative(process.cwd(), tree) || "."}: bench ${args.join(" ")}`);
  const result = spawnSync(tsx, ["bench/run.ts", ...args], { cwd: tree, stdio: "inherit", env: { ...process.env, BENCH_RESULTS_DIR: resultsDir } });
  if (result.status !== 0) throw new Error(`bench ${args.join(" ")} failed in ${tree} (exit ${result.status})`);
}

/** The cached dataset of `records` records and `seed` that the tree's bench generated. */
export function datasetFileOf(tree: string, records: number, seed: number): string {
  const cache = path.join(tree, "bench", "data", "datasets");
  const prefix = `${records}-seed${seed}-`;
  const dirs = (existsSync(cache) ? readdirSync(cache) : [])
    .filter((name) => name.startsWith(prefix) && !name.includes(".building-") && existsSync(path.join(cache, name, "manifest.json")))
    .map((name) => path.join(cache, name))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  const dir = dirs[0];
  if (!dir) throw new Error(`no ${records}-record dataset in ${cache}`);
  const d1 = path.join(dir, "v3", "d1", "miniflare-D1DatabaseObject");
  const files = readdirSync(d1).filter((name) => name.endsWith(".sqlite") && name !== "metadata.sqlite");
  if (files.length !== 1) throw new Error(`expected one D1 database in ${d1}, found ${files.length}`);
  return path.join(d1, files[0]!);
}

/** The report `name`.md the child wrote at or after `since` (wherever its version of the bench puts it). */
export function childReport(tree: string, resultsDir: string, name: string, since: number): string {
  const candidates = [path.join(resultsDir, `${name}.md`), path.join(tree, "bench", "data", "quick-results", `${name}.md`), path.join(tree, "bench", "results", `${name}.md`)];
  const fresh = candidates.filter((file) => existsSync(file) && statSync(file).mtimeMs >= since);
  if (fresh.length === 0) throw new Error(`the ${name} bench in ${tree} wrote no report`);
  return readFileSync(fresh[0]!, "utf8");
}

/** The rows of the first markdown table whose header has `firstHeader` as its first cell, by header name. */
export function markdownRows(markdown: string, firstHeader: string): Record<string, string>[] {
  const lines = markdown.split("\n");
  const cells = (line: string) => line.trim().replace(/^\|/, "").replace(/\|$/, "").split(/(?<!\\)\|/).map((c) => c.trim());
  const start = lines.findIndex((line) => line.startsWith("|") && cells(line)[0] === firstHeader);
  if (start < 0) throw new Error(`no table headed "${firstHeader}"`);
  const headers = cells(lines[start]!);
  const rows: Record<string, string>[] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith("|")) break;
    const values = cells(line);
    rows.push(Object.fromEntries(headers.map((h, i) => [h, values[i] ?? ""])));
  }
  return rows;
}

/** "1,234" or "12.5" → number. */
export function parseFigure(text: string): number {
  return Number(text.replace(/,/g, "").replace(/×$/, ""));
}
