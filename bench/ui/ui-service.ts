/**
 * The service the UI bench loads pages from, started as `npm start` starts it for the browser
 * tests (test/node/demo-server.ts): the explorer built into ui/dist, every D1 binding migrated in
 * a persist directory of the bench's own (a copy of a kept migrated state, bench/ui/migrated-state.ts),
 * `wrangler dev` on a free loopback port, the demo dataset seeded through the real API. The
 * worker runs from a frozen bundle (bench/lib/wrangler-dev.ts), so an edit elsewhere on the
 * machine does not restart it mid-run.
 */
import { rmSync } from "node:fs";
import path from "node:path";
import { ensureUiBuilt } from "../../scripts/lib/build-ui";
import { type DemoCredentials, seedDemo } from "../../scripts/lib/seed-demo";
import type { D1Target } from "../../scripts/lib/wrangler";
import { SCRATCH_DIR, SERVICE_CONFIG } from "../lib/paths";
import { type DevServer, withDevServer } from "../lib/wrangler-dev";
import { BENCH_VARS } from "../search/search-bench";
import { copyMigratedState } from "./migrated-state";
import { RENDER_TRACES, renderTimingTraces } from "../../test/node/render-timing-traces";

export interface UiService {
  server: DevServer;
  demo: DemoCredentials;
  /** The run holding RENDER_TRACES traces, the page's table shows the first 100 of them. */
  runId: string;
}

async function post<T>(service: { baseUrl: string; apiKey: string }, route: string, body: unknown): Promise<T> {
  const response = await fetch(`${service.baseUrl}${route}`, {
    method: "POST",
    headers: { "Service-API-Key": service.apiKey, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`POST ${route} answered ${response.status}: ${text.slice(0, 500)}`);
  return JSON.parse(text) as T;
}

/** Runs `body` against a fresh service, and always stops the server and removes its state. */
export async function withUiService<T>(body: (service: UiService) => Promise<T>): Promise<T> {
  const started = performance.now();
  const say = (line: string) => console.log(`  [ui] ${line} (${((performance.now() - started) / 1000).toFixed(0)} s)`);
  await ensureUiBuilt();
  say("explorer built");
  const persistTo = path.join(SCRATCH_DIR, `ui-${process.pid}-${Date.now()}`);
  const target: D1Target = { remote: false, persistTo };
  try {
    const { cached } = await copyMigratedState(persistTo);
    say(cached ? "migrated state copied" : "migrations applied (kept for the next run)");
    return await withDevServer({ name: "ui", config: SERVICE_CONFIG, persistTo, vars: BENCH_VARS, readyPath: "/healthcheck" }, async (server) => {
      say(`wrangler dev up on ${server.baseUrl}`);
      const demo = await seedDemo(server.baseUrl, target);
      const client = { baseUrl: server.baseUrl, apiKey: demo.api_key };
      const run = await post<{ id: string }>(client, `/v2/projects/${demo.project_id}/log_streams`, { name: "render-timing" });
      await post(client, `/v2/projects/${demo.project_id}/traces`, { log_stream_id: run.id, traces: renderTimingTraces() });
      say(`demo seeded, ${RENDER_TRACES} traces written`);
      const result = await body({ server, demo, runId: run.id });
      say("page loads done");
      return result;
    });
  } finally {
    rmSync(persistTo, { recursive: true, force: true });
  }
}
