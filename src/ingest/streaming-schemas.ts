/**
 * Request and answer shapes of streaming ingestion, as the `galileo` SDK speaks it in
 * `mode: "streaming"` (docs/sdk-compatibility.md): spans posted one request at a time under a
 * trace that may not exist yet, and updates (PATCH) of traces and spans once they finish.
 * Fields the SDK sends that the service does not act on (`reliable`, `logging_method`,
 * `client_version`) are ignored like every unknown key.
 */
import { z } from "@hono/zod-openapi";
import { Uuid } from "../http/common-schemas";
import { runSelectorShape } from "../projects/run-selector";
import { Tags } from "./capped-fields";
import { Content, MAX_RECORDS_PER_REQUEST, SpanSchema } from "./ingest-schemas";

export const IngestSpansRequest = z
  .object({
    ...runSelectorShape,
    trace_id: Uuid.openapi({ description: "Trace the spans belong to; it may arrive later." }),
    parent_id: Uuid.openapi({
      description: "Parent of the top-level spans of this request: the trace itself, or a span of it (which may arrive later).",
    }),
    spans: z.array(SpanSchema).min(1).max(MAX_RECORDS_PER_REQUEST),
  })
  .openapi("IngestSpansRequest");

/** Fields both updates share. A field that is absent or null leaves the stored value alone. */
const updateFields = {
  ...runSelectorShape,
  input: Content,
  output: Content,
  status_code: z.number().int().nullish(),
  tags: Tags.nullish().openapi({ description: "Replaces the record's tags." }),
  duration_ns: z.number().nonnegative().nullish().openapi({ description: "Sets `metrics.duration_ns`." }),
};

export const UpdateTraceRequest = z
  .object({
    ...updateFields,
    trace_id: Uuid.nullish().openapi({ description: "Repeats the path's id (the SDK sends it); must match it." }),
    is_complete: z.boolean().nullish().openapi({ description: "Completes the trace; its spans follow." }),
  })
  .openapi("UpdateTraceRequest");

export const UpdateSpanRequest = z
  .object({
    ...updateFields,
    span_id: Uuid.nullish().openapi({ description: "Repeats the path's id (the SDK sends it); must match it." }),
  })
  .openapi("UpdateSpanRequest");

export type UpdateRequest = z.infer<typeof UpdateTraceRequest> | z.infer<typeof UpdateSpanRequest>;

const runEcho = {
  project_id: z.string(),
  project_name: z.string(),
  log_stream_id: z.string().nullable(),
  experiment_id: z.string().nullable(),
  metrics_testing_id: z.string().nullable(),
  session_id: z.string().nullable().openapi({ description: "The trace's session, once the trace is known." }),
};

export const IngestSpansResponse = z
  .object({
    ...runEcho,
    records_count: z.number().int(),
    trace_id: z.string(),
    parent_id: z.string(),
  })
  .openapi("IngestSpansResponse");

const pendingField = z.boolean().openapi({
  description:
    "True when the record has not arrived yet: the update is held and applied when it does (records_count is then 0).",
});

export const UpdateTraceResponse = z
  .object({ ...runEcho, records_count: z.number().int(), trace_id: z.string(), pending: pendingField })
  .openapi("UpdateTraceResponse");

export const UpdateSpanResponse = z
  .object({ ...runEcho, records_count: z.number().int(), span_id: z.string(), pending: pendingField })
  .openapi("UpdateSpanResponse");
