/// <reference types="node" />
/**
 * `npm start` as a newcomer runs it (in a temporary state directory and on a free port): it
 * migrates, serves, seeds the demo dataset through the API and prints a working key; a second
 * start prints the same key without seeding again. Each start is stopped by a SIGTERM to the one
 * process a user or a process manager signals (`npm`, then the start script itself), and nothing
 * it started may outlive it: its process group empties and its port is free.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { freePort, isPortFree } from "../../scripts/lib/local-server";
import { closeLocalD1 } from "../../scripts/lib/local-d1";
import { REPO_ROOT, executeD1 } from "../../scripts/lib/wrangler";

let persistTo: string;
let running: ChildProcess | undefined;

/**
 * The command `npm start` runs (package.json's scripts.start), as a program and its arguments:
 * started directly, it is the process that a SIGTERM to "the start process" reaches.
 */
function startScript(): [string, string[]] {
  const [program, ...args] = (JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as { scripts: { start: string } }).scripts.start.split(" ");
  return [program === "node" ? process.execPath : join(REPO_ROOT, "node_modules", ".bin", program!), args];
}

/** Runs `npm start` (`via: "npm"`) or the command it runs (`"script"`) until it prints its banner. */
async function start(port: number, via: "npm" | "script"): Promise<{ child: ChildProcess; output: () => string }> {
  const [program, args] = via === "npm" ? ["npm", ["start", "--"]] as [string, string[]] : startScript();
  const child = spawn(program, [...args, "--persist-to", persistTo], {
    cwd: REPO_ROOT,
    env: { ...process.env, PORT: String(port), INSPECTOR_PORT: "0" },
    stdio: ["ignore", "pipe", "pipe"],
    // Its own process group, as a terminal's foreground job: what is left of it after a stop is
    // what the start left behind.
    detached: true,
  });
  running = child;
  let text = "";
  child.stdout!.setEncoding("utf8").on("data", (d: string) => (text += d));
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (text += d));
  await new Promise<void>((resolve, reject) => {
    const timer = setInterval(() => {
      if (text.includes("Press Ctrl+C to stop.")) done();
      else if (child.exitCode !== null) done(new Error(`npm start exited with ${child.exitCode}:\n${text}`));
    }, 200);
    // A hang guard, not a speed test: a first start migrates from empty, builds the explorer and
    // seeds through the API while the upkeep follows the writes; at load 13 it took over 150 s,
    // and at load 10-11 (2026-11-29) over 240 s, in its three `wrangler d1 migrations apply`.
    const deadline = setTimeout(() => done(new Error(`no banner within 480 s:\n${text}`)), 480_000);
    function done(error?: Error) {
      clearInterval(timer);
      clearTimeout(deadline);
      if (error) reject(error);
      else resolve();
    }
  });
  return { child, output: () => text };
}

/** The live (not zombie) processes of a process group: `ps`, as on Linux and macOS alike. */
function processesOfGroup(group: number): string[] {
  const table = execFileSync("ps", ["-eo", "pid=,pgid=,stat=,args="], { encoding: "utf8" });
  return table
    .split("\n")
    .map((line) => line.trim().split(/\s+/))
    .filter(([, pgid, stat]) => Number(pgid) === group && !stat!.startsWith("Z"))
    .map((fields) => `${fields[0]} ${fields.slice(3).join(" ")}`);
}

/** Sends `signal` to the started process alone, and resolves with its exit code. */
async function stopWith(child: ChildProcess, signal: NodeJS.Signals): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  child.kill(signal);
  return exited;
}

/** Stopped by `signal` to that process alone, the start leaves nothing behind: group empty, port free. */
async function expectStoppedBy(child: ChildProcess, signal: NodeJS.Signals, port: number): Promise<void> {
  await stopWith(child, signal);
  // wrangler stops its workerd and npm start waits for it: seconds, not the poll's bound.
  await expect.poll(() => processesOfGroup(child.pid!), { timeout: 20_000, interval: 250 }).toEqual([]);
  expect(await isPortFree(port)).toBe(true);
}

function bannerValue(output: string, label: string): string {
  const match = new RegExp(`^\\s+${label}\\s+(?:"[^"]+"\\s+)?(\\S+)`, "m").exec(output);
  expect(match, `${label} in:\n${output}`).not.toBeNull();
  return match![1]!;
}

beforeAll(() => {
  persistTo = mkdtempSync(join(tmpdir(), "trace-store-start-"));
});

afterEach(async () => {
  // Whatever a failed test left of its start goes with it (Ctrl+C, then SIGKILL).
  if (running?.pid !== undefined) {
    for (const signal of ["SIGINT", "SIGKILL"] as const) {
      if (processesOfGroup(running.pid).length === 0) break;
      try {
        process.kill(-running.pid, signal);
      } catch {
        // the group is gone
      }
      await new Promise((r) => setTimeout(r, 2_000));
    }
  }
  running = undefined;
});

afterAll(async () => {
  // The test's own reads of the databases run in this process (scripts/lib/local-d1.ts).
  await closeLocalD1();
  rmSync(persistTo, { recursive: true, force: true });
});

describe("npm start", () => {
  let apiKey: string;
  let projectId: string;
  let logStreamId: string;
  let port: number;

  it("migrates, serves, seeds the demo through the API and prints a working key; a SIGTERM to npm stops it all", { timeout: 600_000 }, async () => {
    port = await freePort();
    const { child, output } = await start(port, "npm");
    const text = output();
    expect(text).toContain("Demo dataset seeded:");
    apiKey = bannerValue(text, "API key");
    projectId = bannerValue(text, "project");
    logStreamId = bannerValue(text, "log stream");
    const base = `http://127.0.0.1:${port}`;

    const projects = await fetch(`${base}/v2/projects`, { headers: { "Service-API-Key": apiKey } });
    expect(projects.status).toBe(200);
    const listed = (await projects.json()) as { id: string; name: string }[];
    expect(listed.map((p) => p.name)).toEqual(["demo", "demo-probes"]);
    expect(listed[0]!.id).toBe(projectId);

    // The two projects live on the two data shards.
    const [placed] = await executeD1("SELECT name, shard FROM projects ORDER BY name", { remote: false, persistTo });
    const shardOf = Object.fromEntries(placed!.results.map((r) => [r.name, r.shard as string]));
    expect(new Set(Object.values(shardOf))).toEqual(new Set(["SHARD_0", "SHARD_1"]));
    const demoShard = shardOf.demo!;

    // Sessions, traces and every span kind, with parents and sessions linked.
    const [kinds] = await executeD1(
      "SELECT type, count(*) AS n, sum(has_children) AS parents FROM records GROUP BY type ORDER BY type",
      { remote: false, persistTo },
      demoShard,
    );
    expect(Object.fromEntries(kinds!.results.map((r) => [r.type, r.n]))).toEqual({
      agent: 6,
      control: 6,
      llm: 10,
      retriever: 3,
      session: 3,
      tool: 3,
      trace: 7,
      workflow: 4,
    });
    expect(kinds!.results.find((r) => r.type === "session")!.parents).toBe(3);

    // Metrics (toxicity among them), tags and metadata made it to the columns answer.
    const columns = await fetch(`${base}/v2/projects/${projectId}/traces/available_columns`, {
      method: "POST",
      headers: { "Service-API-Key": apiKey, "content-type": "application/json" },
      body: JSON.stringify({ log_stream_id: logStreamId }),
    });
    const body = (await columns.json()) as { columns: { id: string; is_empty: boolean }[] };
    const filled = body.columns.filter((c) => !c.is_empty).map((c) => c.id);
    expect(filled).toEqual(expect.arrayContaining(["tags", "status_code", "session_id", "metrics/toxicity", "metrics/cost"]));
    const [metadata] = await executeD1("SELECT count(DISTINCT key) AS n FROM record_metadata", { remote: false, persistTo }, demoShard);
    expect(metadata!.results[0]!.n).toBeGreaterThanOrEqual(4);

    // The key is kept next to the database, git-ignored under the state directory.
    const saved = JSON.parse(readFileSync(join(persistTo, "demo-credentials.json"), "utf8"));
    expect(saved).toMatchObject({ api_key: apiKey, project_id: projectId, log_stream_id: logStreamId, email: "demo@example.com" });

    // npm passes the signal to the shell that runs the script, which dies without passing it on.
    await expectStoppedBy(child, "SIGTERM", port);
  });

  it("a second start prints the same key and seeds nothing; a SIGTERM to the start script alone stops it all", { timeout: 600_000 }, async () => {
    const { child, output } = await start(port, "script");
    const text = output();
    expect(text).toContain("Demo dataset (seeded earlier):");
    expect(text).not.toContain("seeding the demo dataset");
    expect(bannerValue(text, "API key")).toBe(apiKey);
    const counts = await Promise.all(
      ["SHARD_0", "SHARD_1"].map(async (shard) => (await executeD1("SELECT count(*) AS n FROM records", { remote: false, persistTo }, shard))[0]!.results[0]!.n),
    );
    expect(counts.sort()).toEqual([3, 42]);
    // Under the tsx command, tsx relayed it and SIGKILLed start.ts when it was slow to answer.
    await expectStoppedBy(child, "SIGTERM", port);
  });

  it("refuses a port that is taken, before touching the database", async () => {
    const { createServer } = await import("node:net");
    const taken = await freePort();
    const blocker = createServer().listen(taken, "127.0.0.1");
    await new Promise((r) => blocker.once("listening", r));
    try {
      const [program, args] = startScript();
      const child = spawn(program, [...args, "--persist-to", persistTo], {
        cwd: REPO_ROOT,
        env: { ...process.env, PORT: String(taken), INSPECTOR_PORT: "0" },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stderr = "";
      child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
      const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
      expect(code).toBe(1);
      expect(stderr).toContain(`port ${taken} on 127.0.0.1 is in use`);
    } finally {
      blocker.close();
    }
  });
});
