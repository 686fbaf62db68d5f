/// <reference types="node" />
/**
 * `npm start`: the local service, ready to use.
 *
 * 0. builds the trace explorer into ui/dist if its sources changed since the last build;
 * 1. applies the migrations the local D1 databases lack, as `wrangler d1 migrations apply --local`
 *    would, in this process (scripts/lib/local-migrations.ts: one workerd for the three);
 * 2. makes .dev.vars from .dev.vars.example with a random TOKEN_SECRET if it is missing;
 * 3. starts `wrangler dev` on http://127.0.0.1:${PORT:-8787};
 * 4. once /healthcheck answers, seeds the demo dataset through the real API, once (later starts
 *    print the same API key from .wrangler/state/demo-credentials.json);
 * 5. runs wrangler.toml's cron schedule (scripts/lib/local-cron.ts: `wrangler dev` fires none), so
 *    the upkeep of derived data, retention, moves and export removal run as deployed, and a
 *    database with a backlog starts catching up at once;
 * 6. keeps serving in the foreground until it is stopped: SIGINT, SIGTERM or SIGHUP to this process
 *    (or Ctrl+C to its process group), or its parent going away (see stopWhenOrphaned), stops
 *    everything it started: wrangler dev (which stops its workerd) and any wrangler command still
 *    running, then it exits.
 *
 * package.json runs it as `node --import tsx scripts/start.ts`, one process: under the `tsx`
 * command a SIGTERM to tsx alone was relayed to start.ts, and when start.ts had not acknowledged it
 * within tsx's 30 ms (a busy machine) tsx SIGKILLed it, leaving wrangler dev serving, orphaned.
 *
 * `--persist-to DIR` keeps the database (and the demo credentials) in DIR instead of .wrangler/state.
 * `INSPECTOR_PORT` sets wrangler's inspector port (default 9229 when free; 0: one the system picks,
 * which the tests use so that servers started side by side never both take 9229).
 */
import type { ChildProcess } from "node:child_process";
import { constants } from "node:os";
import { parseArgs } from "node:util";
import { ensureUiBuilt } from "./lib/build-ui";
import { ensureDevVars } from "./lib/dev-vars";
import { configuredCrons, startLocalCron } from "./lib/local-cron";
import { LOOPBACK, isPortFree, startDevServer, waitUntilHealthy } from "./lib/local-server";
import { closeLocalD1 } from "./lib/local-d1";
import { applyLocalMigrations } from "./lib/local-migrations";
import { type DemoCredentials, apiKeyWorks, demoStatePath, readDemoState, seedDemo, writeDemoState } from "./lib/seed-demo";
import { type D1Target, WranglerError, stopRunningWranglers } from "./lib/wrangler";

const STOP_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
let server: ChildProcess | undefined;

const serving = () => server !== undefined && server.exitCode === null && server.signalCode === null;

/**
 * Stops what this process started. With wrangler dev running, the signal is passed on and its
 * exit ends this process (with its status); before that (building, migrating), at once.
 */
function stop(signal: NodeJS.Signals): void {
  stopRunningWranglers(signal);
  if (serving()) server!.kill(signal);
  else process.exit(128 + (constants.signals[signal] ?? 0));
}
for (const signal of STOP_SIGNALS) process.on(signal, () => stop(signal));
// Whatever ends this process (an error, process.exit), nothing it started outlives it.
process.on("exit", () => {
  stopRunningWranglers("SIGTERM");
  if (serving()) server!.kill("SIGTERM");
});

/**
 * Stops as on SIGTERM when the process that started this one goes away. \`npm start\` runs it under
 * \`sh -c\`, and npm passes a SIGTERM on to that shell alone, which dies without passing it further
 * (dash does not exec the command): this process would go on serving, orphaned.
 */
function stopWhenOrphaned(): void {
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid !== parent) {
      clearInterval(timer);
      stop("SIGTERM");
    }
  }, 500);
  timer.unref();
}
stopWhenOrphaned();

function say(line: string): void {
  process.stdout.write(`[start] ${line}\n`);
}

function fail(message: string): never {
  process.stderr.write(`[start] error: ${message}\n`);
  process.exit(1);
}

function portFromEnv(): number {
  const raw = process.env.PORT ?? "8787";
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 1 || port > 65535) fail(`PORT must be a port number, got ${JSON.stringify(raw)}`);
  return port;
}

function banner(baseUrl: string, demo: DemoCredentials, seededNow: boolean): string {
  const lines = [
    "",
    `Trace store is running at ${baseUrl}  (trace explorer: ${baseUrl}/  API reference: ${baseUrl}/docs)`,
    seededNow ? "Demo dataset seeded:" : "Demo dataset (seeded earlier):",
    `  organization   ${demo.organization_id}`,
    `  admin user     ${demo.email}${demo.password ? `  password: ${demo.password}` : "  (password set by an earlier seed)"}`,
    `  member user    ${demo.member_email ?? "(none: seeded by an older version)"}${demo.member_password ? `  password: ${demo.member_password}` : ""}`,
    `  API key        ${demo.api_key}`,
    `  project        "demo"  ${demo.project_id}`,
    `  log stream     "default"  ${demo.log_stream_id}`,
    "Try:",
    `  curl -s ${baseUrl}/v2/projects -H "Service-API-Key: ${demo.api_key}"`,
    "Press Ctrl+C to stop.",
    "",
  ];
  return lines.join("\n");
}

/** INSPECTOR_PORT, when set: 0 (the system picks) or a port number. */
function inspectorPortFromEnv(): number | undefined {
  const raw = process.env.INSPECTOR_PORT;
  if (raw === undefined || raw === "") return undefined;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65535) fail(`INSPECTOR_PORT must be 0 or a port number, got ${JSON.stringify(raw)}`);
  return port;
}

const { values } = parseArgs({ options: { "persist-to": { type: "string" } }, strict: true });
const persistTo = values["persist-to"];
const target: D1Target = persistTo ? { remote: false, persistTo } : { remote: false };
const port = portFromEnv();
const inspectorPort = inspectorPortFromEnv();
const baseUrl = `http://${LOOPBACK}:${port}`;

if (!(await isPortFree(port))) fail(`port ${port} on ${LOOPBACK} is in use; stop what runs there or choose another: PORT=8788 npm start`);

say("building the trace explorer (ui/)");
await ensureUiBuilt();
try {
  const applied = await applyLocalMigrations(persistTo);
  if (Object.keys(applied).length === 0) say("the local D1 databases have every migration");
  else say(`applied migrations to the local D1 databases (${Object.entries(applied).map(([binding, names]) => `${binding}: ${names.length}`).join(", ")})`);
} catch (error) {
  fail(error instanceof Error ? error.message : String(error));
}
if (ensureDevVars()) say("created .dev.vars with a random TOKEN_SECRET (from .dev.vars.example)");

say(`starting wrangler dev on ${baseUrl}`);
// Alerts: channels may point at local receivers (contract section 16: http and local addresses
// under wrangler dev), and notifications link to this server (docs/alerts.md).
const devServer = startDevServer({ port, persistTo, inspectorPort, stdio: "inherit", vars: { ALERT_DESTINATIONS: "local", JUDGE_DESTINATIONS: "local", PUBLIC_URL: `http://${LOOPBACK}:${port}` } });
server = devServer;
devServer.on("exit", (code, signal) => {
  process.exit(code ?? (signal ? 128 + (constants.signals[signal] ?? 0) : 1));
});
devServer.on("error", (error) => fail(`could not start wrangler: ${error.message}`));

try {
  await waitUntilHealthy(baseUrl, devServer);
  const crons = configuredCrons();
  startLocalCron(baseUrl, crons, say);
  say(`running wrangler.toml's cron schedule (${crons.join(", ")}) against /__scheduled`);
  const statePath = demoStatePath(persistTo);
  const known = readDemoState(statePath);
  if (known && (await apiKeyWorks(baseUrl, known.api_key))) {
    process.stdout.write(banner(baseUrl, known, false));
  } else {
    say(known ? "the saved demo API key no longer works (database reset?): seeding again" : "seeding the demo dataset");
    const demo = await seedDemo(baseUrl, target);
    writeDemoState(statePath, demo);
    process.stdout.write(banner(baseUrl, demo, true));
  }
} catch (error) {
  // The service itself is up: keep serving, but say loudly that the demo is missing.
  const detail = error instanceof WranglerError ? `${error.message}\n${error.output}` : error instanceof Error ? error.message : String(error);
  process.stderr.write(`[start] error: the demo dataset could not be seeded: ${detail}\n`);
  if (!serving()) process.exit(1);
} finally {
  // The seed's catalog writes ran in this process (scripts/lib/local-d1.ts): close its workerd,
  // which would otherwise stay beside wrangler dev's and take over SIGINT and SIGTERM.
  await closeLocalD1();
}
