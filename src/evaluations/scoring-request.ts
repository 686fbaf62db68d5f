/**
 * Scoring after writes (contract section 15: ingest never waits for a scorer). The intake routes
 * note the records each request wrote (`writtenRecords`, set by src/ingest/scorable-writes.ts);
 * once the request is answered, this middleware looks up each run's settings (cached per
 * isolate) and, for a run with scorers enabled, sends its record ids to the evaluation queue in
 * messages of at most MAX_IDS_PER_MESSAGE ids. A failure is logged and costs the write nothing.
 */
import type { MiddlewareHandler } from "hono";
import type { Env } from "../env";
import type { AppEnv } from "../http/app-env";
import { runSettings } from "./run-settings";

/** Ids per queue message: well under the queue's 128 KB message limit for ids of 128 characters. */
export const MAX_IDS_PER_MESSAGE = 500;

export async function enqueueScoring(env: Env, written: NonNullable<AppEnv["Variables"]["writtenRecords"]>): Promise<void> {
  for (const w of written) {
    if (w.ids.length === 0 || !(await runSettings(env, w.runId))) continue;
    const messages = [];
    for (let i = 0; i < w.ids.length; i += MAX_IDS_PER_MESSAGE) {
      messages.push({ body: { kind: "score" as const, organizationId: w.organizationId, projectId: w.projectId, runId: w.runId, recordIds: w.ids.slice(i, i + MAX_IDS_PER_MESSAGE) } });
    }
    for (let i = 0; i < messages.length; i += 100) await env.EVALUATION_QUEUE.sendBatch(messages.slice(i, i + 100));
  }
}

export const scoringAfterWrites: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  const written = c.get("writtenRecords");
  if (!written || written.length === 0) return;
  let waitUntil: (work: Promise<unknown>) => void;
  try {
    const ctx = c.executionCtx;
    waitUntil = (work) => ctx.waitUntil(work);
  } catch {
    return;
  }
  waitUntil(enqueueScoring(c.env, written).catch((error) => console.error(`evaluations: could not queue scoring: ${error instanceof Error ? error.message : String(error)}`)));
};
