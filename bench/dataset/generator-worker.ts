/**
 * The generator's worker thread (compiled by fast-generator.ts): builds the run's ingest
 * requests as shell input and posts them one by one, at most MAX_IN_FLIGHT ahead of what the main
 * thread has taken, so the main thread stays free to feed sqlite3 and memory stays bounded.
 */
import { parentPort, workerData } from "node:worker_threads";
import { planRun } from "./synthetic-traces";
import { type RunScope, requestsSql } from "./write-run";

export interface GeneratorJob {
  records: number;
  seed: number;
  scope: RunScope;
}

export type GeneratorMessage = { kind: "request"; sql: string; records: number } | { kind: "done" };

const MAX_IN_FLIGHT = 8;

async function generate(port: NonNullable<typeof parentPort>, job: GeneratorJob): Promise<void> {
  let credits = MAX_IN_FLIGHT;
  let wake: (() => void) | undefined;
  port.on("message", () => {
    credits += 1;
    wake?.();
  });
  for (const request of requestsSql(planRun(job.records, job.seed), job.seed, job.scope)) {
    while (credits === 0) await new Promise<void>((resolve) => (wake = resolve));
    credits -= 1;
    port.postMessage({ kind: "request", ...request } satisfies GeneratorMessage);
  }
  port.postMessage({ kind: "done" } satisfies GeneratorMessage);
  port.close();
}

if (parentPort) await generate(parentPort, workerData as GeneratorJob);
