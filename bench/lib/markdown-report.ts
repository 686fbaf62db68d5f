/** Markdown tables for the console and bench/results/<name>.md, with the conditions of the run. */
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { devProxyRetryCount } from "./http-timing";
import { DATA_DIR, REPO_ROOT, RESULTS_DIR } from "./paths";

export function markdownTable(headers: string[], rows: string[][], align: ("l" | "r")[] = []): string {
  const separator = headers.map((_, i) => (align[i] === "r" ? "---:" : "---"));
  const line = (cells: string[]) => `| ${cells.map((c) => c.replace(/\|/g, "\\|")).join(" | ")} |`;
  return [line(headers), line(separator), ...rows.map(line)].join("\n");
}

function packageVersion(name: string): string {
  try {
    return (JSON.parse(readFileSync(path.join(REPO_ROOT, "node_modules", name, "package.json"), "utf8")) as { version: string }).version;
  } catch {
    return "unknown";
  }
}

function wranglerWorkerd(): string {
  const own = packageVersion("wrangler/node_modules/workerd");
  return own === "unknown" ? packageVersion("workerd") : own;
}

function gitCommit(): string {
  const head = spawnSync("git", ["rev-parse", "--short", "HEAD"], { cwd: REPO_ROOT, encoding: "utf8" }).stdout.trim();
  const dirty = spawnSync("git", ["status", "--porcelain", "--untracked-files=no", "src", "migrations"], { cwd: REPO_ROOT, encoding: "utf8" }).stdout.trim();
  return dirty ? `${head} (with uncommitted changes in src/ or migrations/)` : head;
}

/** When, where and with what the figures were measured. */
export function runConditions(startLoad: number[]): string {
  const cpus = os.cpus();
  const sqlite = spawnSync("sqlite3", ["-version"], { encoding: "utf8" }).stdout.trim().split(" ")[0] ?? "unknown";
  const endLoad = os.loadavg();
  return [
    `- date: ${new Date().toISOString()}`,
    `- machine: ${cpus[0]?.model ?? "unknown CPU"}, ${cpus.length} cores, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, ${os.type()} ${os.release()}`,
    `- load average (1 min) at start / end: ${startLoad[0]?.toFixed(2)} / ${endLoad[0]?.toFixed(2)} (other work on the machine inflates every figure)`,
    // The workerd that `wrangler dev` runs is wrangler's own (node_modules/workerd is the test plugin's).
    `- Node ${process.version}, wrangler ${packageVersion("wrangler")}, workerd ${wranglerWorkerd()}, sqlite3 shell ${sqlite}`,
    `- service commit: ${gitCommit()}`,
    `- requests re-sent after \`wrangler dev\`'s proxy dropped a pooled connection (workers-sdk#14641; their time counts from the first attempt): ${devProxyRetryCount()}`,
  ].join("\n");
}

/**
 * Writes bench/results/<name>.md and returns its path. A quick run's results are not figures:
 * they go to bench/data/quick-results (ignored by git) instead.
 */
export function writeResult(name: string, markdown: string, quick: boolean): string {
  const dir = quick ? path.join(DATA_DIR, "quick-results") : RESULTS_DIR;
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${name}.md`);
  writeFileSync(file, markdown.endsWith("\n") ? markdown : `${markdown}\n`);
  return file;
}
