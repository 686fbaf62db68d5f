import { z } from "@hono/zod-openapi";
import { Uuid } from "../http/common-schemas";
import type { RunKind } from "../db/schema";

/** Request fields naming the run: exactly one of them (contract, section 3). */
export const RUN_SELECTOR_FIELDS = {
  log_stream_id: "log_stream",
  experiment_id: "experiment",
  metrics_testing_id: "metrics_testing",
} as const satisfies Record<string, RunKind>;

export type RunSelectorField = keyof typeof RUN_SELECTOR_FIELDS;

export const runSelectorShape = {
  log_stream_id: Uuid.nullish().openapi({ description: "Log stream whose records are meant." }),
  experiment_id: Uuid.nullish().openapi({ description: "Experiment whose records are meant." }),
  metrics_testing_id: Uuid.nullish().openapi({ description: "Metrics testing run whose records are meant." }),
};

export interface RunSelector {
  runId: string;
  kind: RunKind;
}

/**
 * Adds the "exactly one run selector" rule to an object schema. None or several is a 422 whose
 * loc names the body (none) or the second selector given (several).
 */
export function refineRunSelector(
  value: Partial<Record<RunSelectorField, string | null | undefined>>,
  ctx: z.RefinementCtx,
): void {
  const given = (Object.keys(RUN_SELECTOR_FIELDS) as RunSelectorField[]).filter((f) => value[f] != null);
  if (given.length === 1) return;
  const msg =
    given.length === 0
      ? "Value error, exactly one of log_stream_id, experiment_id or metrics_testing_id is required"
      : `Value error, only one of log_stream_id, experiment_id or metrics_testing_id may be given, got ${given.join(", ")}`;
  ctx.addIssue({
    code: "custom",
    message: msg,
    path: given.length === 0 ? [] : [given[1]!],
    params: { pydantic: { type: "value_error", msg, ctx: { error: msg.replace("Value error, ", "") } } },
  });
}

export function runSelectorOf(value: Partial<Record<RunSelectorField, string | null | undefined>>): RunSelector {
  for (const [field, kind] of Object.entries(RUN_SELECTOR_FIELDS) as [RunSelectorField, RunKind][]) {
    const runId = value[field];
    if (runId != null) return { runId, kind };
  }
  throw new Error("run selector missing: refineRunSelector must run first");
}
