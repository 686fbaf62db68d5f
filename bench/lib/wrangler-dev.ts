/**
 * `wrangler dev` servers for the bench: each on a free loopback port (HTTP and inspector), with
 * the bench's own persist directory, in its own process group, stopped by its process id.
 * A bench that fails or is interrupted still stops every server it started.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { createWriteStream, existsSync, mkdirSync, rmSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { DATA_DIR, REPO_ROOT } from "./paths";

export interface DevServer {
  name: string;
  baseUrl: string;
  pid: number;
  /** The inspector's port (wrangler's proxy to the worker's isolate: bench/lib/inspector-heap.ts). */
  inspectorPort: number;
  logFile: string;
  stop(): Promise<void>;
}

const running = new Set<DevServer>();

const WRANGLER = path.join(REPO_ROOT, "node_modules", ".bin", "wrangler");
const bundles = new Map<string, string>();
const bundleRoot = path.join(DATA_DIR, "bundles", String(process.pid));

/**
 * The worker of a wrangler config, bundled once per bench process (`wrangler deploy --dry-run
 * --outdir`). Servers run the bundle with --no-bundle: `wrangler dev` would otherwise rebuild
 * and restart the worker, mid-measurement, whenever anyone edits a source file, and the figures
 * of one run would not all come from the same code.
 */
function bundled(config: string): string {
  const hit = bundles.get(config);
  if (hit) return hit;
  const outdir = path.join(bundleRoot, `${path.basename(path.dirname(config))}-${bundles.size}`);
  const result = spawnSync(WRANGLER, ["deploy", "--dry-run", "--outdir", outdir, "--config", config], {
    cwd: REPO_ROOT,
    encoding: "utf8",
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1", CI: "true" },
  });
  const entry = path.join(outdir, "index.js");
  if (result.status !== 0 || !existsSync(entry)) throw new Error(`bundling ${config} failed:\n${result.stdout}\n${result.stderr}`);
  bundles.set(config, entry);
  return entry;
}

/** A port the kernel just handed out on 127.0.0.1 (free at that instant). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once("exit", () => resolve()));
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal); // the group we created: wrangler and its workerd
  } catch {
    // already gone
  }
}

export interface StartOptions {
  /** A label for logs. */
  name: string;
  /** The wrangler configuration file of the worker. */
  config: string;
  /** The persist directory holding the D1 database the worker binds. */
  persistTo: string;
  vars?: Record<string, string>;
  /** Path probed until the worker answers (any HTTP status counts as up). */
  readyPath?: string;
  readyTimeoutMs?: number;
  /** Loopback port to listen on (default: one the kernel hands out), and the inspector's next to it. */
  port?: number;
  /** Serve GET /__scheduled (wrangler dev --test-scheduled): runs the worker's cron handler. */
  testScheduled?: boolean;
}

export async function startDevServer(options: StartOptions): Promise<DevServer> {
  // --test-scheduled works on a worker wrangler bundles itself (it adds the route then).
  const entry = process.env.BENCH_UNFROZEN || options.testScheduled ? undefined : bundled(options.config);
  const port = options.port ?? (await freePort());
  const inspectorPort = options.port === undefined ? await freePort() : options.port + 1;
  const logDir = path.join(DATA_DIR, "logs");
  mkdirSync(logDir, { recursive: true });
  const logFile = path.join(logDir, `${options.name}-${port}.log`);
  const log = createWriteStream(logFile);
  const args = [
    "dev",
    ...(entry ? [entry, "--no-bundle"] : []),
    "--config", options.config,
    "--ip", "127.0.0.1",
    "--port", String(port),
    "--inspector-port", String(inspectorPort),
    "--persist-to", options.persistTo,
    "--show-interactive-dev-session=false",
    "--log-level", process.env.BENCH_WRANGLER_LOG_LEVEL ?? "warn",
    ...(options.testScheduled ? ["--test-scheduled"] : []),
  ];
  for (const [key, value] of Object.entries(options.vars ?? {})) args.push("--var", `${key}:${value}`);
  const child = spawn(WRANGLER, args, {
    cwd: REPO_ROOT,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1", FORCE_COLOR: "0" },
  });
  child.stdout?.pipe(log);
  child.stderr?.pipe(log);
  const pid = child.pid;
  if (pid === undefined) throw new Error(`wrangler dev for ${options.name} did not start`);
  const baseUrl = `http://127.0.0.1:${port}`;
  const server: DevServer = {
    name: options.name,
    baseUrl,
    pid,
    inspectorPort,
    logFile,
    async stop() {
      if (!running.has(server)) return;
      running.delete(server);
      signalGroup(pid, "SIGTERM");
      const killed = await Promise.race([exited(child).then(() => true), sleep(10_000).then(() => false)]);
      if (!killed) {
        signalGroup(pid, "SIGKILL");
        await exited(child);
      }
      // workerd may outlive wrangler for a moment: make sure the whole group is gone.
      signalGroup(pid, "SIGKILL");
    },
  };
  running.add(server);
  const deadline = Date.now() + (options.readyTimeoutMs ?? 90_000);
  while (Date.now() < deadline) {
    if (child.exitCode !== null) {
      running.delete(server);
      throw new Error(`wrangler dev for ${options.name} exited with ${child.exitCode}; see ${logFile}`);
    }
    try {
      await fetch(`${baseUrl}${options.readyPath ?? "/"}`, { signal: AbortSignal.timeout(2_000) });
      return server;
    } catch {
      await sleep(250);
    }
  }
  await server.stop();
  throw new Error(`wrangler dev for ${options.name} was not ready in time; see ${logFile}`);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Stops every server still running (on failure or interruption). */
export async function stopAllDevServers(): Promise<void> {
  await Promise.all([...running].map((server) => server.stop()));
}

/** Runs `body` with a server and always stops it. */
export async function withDevServer<T>(options: StartOptions, body: (server: DevServer) => Promise<T>): Promise<T> {
  const server = await startDevServer(options);
  try {
    return await body(server);
  } finally {
    await server.stop();
  }
}

let handlersInstalled = false;

/** Stops the servers when the bench is interrupted, then exits. */
export function installCleanupHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.once(signal, () => {
      console.error(`\n${signal}: stopping servers`);
      void stopAllDevServers().finally(() => process.exit(130));
    });
  }
  process.on("exit", () => {
    // Last resort (synchronous): no server may outlive the bench.
    for (const server of running) signalGroup(server.pid, "SIGKILL");
    rmSync(bundleRoot, { recursive: true, force: true });
  });
}
