/// <reference types="node" />
/**
 * `npm start` as a newcomer runs it (in a temporary state directory and on a free port): it
 * migrates, serves, seeds the demo dataset through the API and prints a working key; a second
 * start prints the same key without seeding again; SIGTERM stops wrangler with it.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { freePort, isPortFree } from "../../scripts/lib/local-server";
import { REPO_ROOT, executeD1 } from "../../scripts/lib/wrangler";

let persistTo: string;
let running: ChildProcess | undefined;

/** Runs `tsx scripts/start.ts` (what `npm start` runs) until it prints its banner. */
async function start(port: number): Promise<{ child: ChildProcess; output: () => string }> {
  const child = spawn(join(REPO_ROOT, "node_modules", ".bin", "tsx"), ["scripts/start.ts", "--persist-to", persistTo], {
    cwd: REPO_ROOT,
    env: { ...process.env, PORT: String(port), INSPECTOR_PORT: "0" },
    stdio: ["ignore", "pipe", "pipe"],
    // Its own process group, as a terminal's foreground job: stop() presses Ctrl+C.
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
    // seeds through the API while the upkeep follows the writes; at load 13 it took over 150 s.
    const deadline = setTimeout(() => done(new Error(`no banner within 240 s:\n${text}`)), 240_000);
    function done(error?: Error) {
      clearInterval(timer);
      clearTimeout(deadline);
      if (error) reject(error);
      else resolve();
    }
  });
  return { child, output: () => text };
}

async function stop(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return child.exitCode;
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  // Ctrl+C: SIGINT to the whole foreground group (tsx, start.ts, wrangler, workerd). A SIGTERM to
  // tsx alone left wrangler dev serving after npm start had exited (seen 2026-11-28; open).
  process.kill(-child.pid!, "SIGINT");
  return exited;
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
  if (running) await stop(running);
  running = undefined;
});

afterAll(() => {
  rmSync(persistTo, { recursive: true, force: true });
});

describe("npm start", () => {
  let apiKey: string;
  let projectId: string;
  let logStreamId: string;
  let port: number;

  it("migrates, serves, seeds the demo through the API and prints a working key", async () => {
    port = await freePort();
    const { child, output } = await start(port);
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

    expect(await stop(child)).not.toBeNull();
    // wrangler and workerd stop beside npm start, not before it: the port is free within seconds.
    await expect.poll(() => isPortFree(port), { timeout: 15_000 }).toBe(true);
  });

  it("a second start prints the same key and seeds nothing", async () => {
    const { output } = await start(port);
    const text = output();
    expect(text).toContain("Demo dataset (seeded earlier):");
    expect(text).not.toContain("seeding the demo dataset");
    expect(bannerValue(text, "API key")).toBe(apiKey);
    const counts = await Promise.all(
      ["SHARD_0", "SHARD_1"].map(async (shard) => (await executeD1("SELECT count(*) AS n FROM records", { remote: false, persistTo }, shard))[0]!.results[0]!.n),
    );
    expect(counts.sort()).toEqual([3, 42]);
  });

  it("refuses a port that is taken, before touching the database", async () => {
    const { createServer } = await import("node:net");
    const taken = await freePort();
    const blocker = createServer().listen(taken, "127.0.0.1");
    await new Promise((r) => blocker.once("listening", r));
    try {
      const child = spawn(join(REPO_ROOT, "node_modules", ".bin", "tsx"), ["scripts/start.ts", "--persist-to", persistTo], {
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
