/**
 * The fast way to produce a run's ingest requests: on a worker thread, from a build of the
 * generator compiled for Node 20.
 *
 * - A worker thread: generating rows (Node) and writing them (sqlite3) then run on the two cores
 *   at once. On the main thread they would take turns, because Node only flushes the pipe to
 *   sqlite3 when its event loop runs, and a pipe holds 64 KB.
 * - A build with object spread lowered to helper calls (esbuild's
 *   `supported: {"object-rest-spread": false}`): in Node 20's V8 an object literal that starts
 *   with a spread and adds many properties (`{...ids, organization_id, ...}`, as the service's
 *   `BatchBuilder.baseRow` builds every row) takes about 100 µs; lowered, the same code runs about
 *   twice as fast and computes the same values. `npm run bench -- verify` uses this path too and
 *   proves the rows are still identical to what the service's ingestion writes.
 *
 * The build is one ES module under bench/data/build (npm packages stay external and resolve from
 * the repository's node_modules); esbuild is the one tsx runs on.
 */
import { mkdirSync } from "node:fs";
import path from "node:path";
import { Worker } from "node:worker_threads";
import { build } from "esbuild";
import { BENCH_DIR, DATA_DIR } from "../lib/paths";
import type { GeneratorJob, GeneratorMessage } from "./generator-worker";
import type { RequestSql } from "./write-run";

let compiled: Promise<string> | undefined;

function compileWorker(): Promise<string> {
  compiled ??= (async () => {
    const outdir = path.join(DATA_DIR, "build");
    mkdirSync(outdir, { recursive: true });
    const outfile = path.join(outdir, `generator-worker-${process.pid}.mjs`);
    await build({
      entryPoints: [path.join(BENCH_DIR, "dataset", "generator-worker.ts")],
      outfile,
      bundle: true,
      packages: "external",
      platform: "node",
      format: "esm",
      target: "node20",
      supported: { "object-rest-spread": false },
      logLevel: "warning",
    });
    return outfile;
  })();
  return compiled;
}

/** The run's requests as shell input, generated on a worker thread. */
export async function* requestsFromWorker(job: GeneratorJob): AsyncGenerator<RequestSql> {
  const worker = new Worker(await compileWorker(), { workerData: job });
  const inbox: GeneratorMessage[] = [];
  let failure: Error | undefined;
  let exited = false;
  let wake: (() => void) | undefined;
  worker.on("message", (message: GeneratorMessage) => {
    inbox.push(message);
    wake?.();
  });
  worker.on("error", (error) => {
    failure = error;
    wake?.();
  });
  worker.on("exit", (code) => {
    exited = true;
    if (code !== 0) failure ??= new Error(`the generator worker exited with ${code}`);
    wake?.();
  });
  try {
    for (;;) {
      const message = inbox.shift();
      if (message?.kind === "done") return;
      if (message) {
        worker.postMessage("taken");
        yield { sql: message.sql, records: message.records };
        continue;
      }
      if (failure) throw failure;
      if (exited) throw new Error("the generator worker stopped before it was done");
      await new Promise<void>((resolve) => (wake = resolve));
    }
  } finally {
    await worker.terminate();
  }
}
