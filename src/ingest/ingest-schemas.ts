import { z } from "@hono/zod-openapi";
import { SPAN_KINDS } from "../columns/standard-columns";
import { Uuid } from "../http/common-schemas";
import { runSelectorShape } from "../projects/run-selector";
import { Metrics, Tags, UserMetadata } from "./capped-fields";

/**
 * Records as the `galileo` SDK sends them. Only what the service stores is typed; unknown keys
 * are ignored (contract, section 1), and structured inputs and outputs are kept as given.
 */
const Timestamp = z.iso.datetime({ offset: true, local: true }).openapi({ format: "date-time" });

/**
 * Free-form input or output: a string, a message, a list of messages or documents, or null.
 * Exported for the streaming updates (src/ingest/streaming-schemas.ts), which accept the same.
 */
export const Content = z
  .union([z.string(), z.array(z.any()), z.record(z.string(), z.any()), z.number(), z.boolean()])
  .nullish()
  .openapi({ description: "A string, or structured content (messages, documents)." });

const recordFields = {
  id: Uuid.nullish().openapi({ description: "Client-chosen id; kept. Generated when absent." }),
  name: z.string().max(4096).nullish(),
  input: Content,
  output: Content,
  redacted_input: Content,
  redacted_output: Content,
  created_at: Timestamp.nullish(),
  updated_at: Timestamp.nullish(),
  user_metadata: UserMetadata.nullish(),
  tags: Tags.nullish(),
  status_code: z.number().int().nullish(),
  metrics: Metrics.nullish(),
  metric_info: z.record(z.string(), z.record(z.string(), z.any())).nullish().openapi({
    description: "Per metric, the scorer's metadata dictionary (returned with include_code_metric_metadata).",
  }),
  external_id: z.string().max(1024).nullish(),
  dataset_input: z.string().nullish(),
  dataset_output: z.string().nullish(),
  dataset_metadata: z.record(z.string(), z.any()).nullish(),
  is_complete: z.boolean().nullish(),
  step_number: z.number().int().nullish(),
  error_message: z.string().nullish(),
  progress_message: z.string().nullish(),
  feedback_rating_info: z.record(z.string(), z.any()).nullish(),
};

const SpanFields = z.object({
    ...recordFields,
    type: z.enum(SPAN_KINDS),
    parent_id: Uuid.nullish(),
    trace_id: Uuid.nullish(),
    model: z.string().nullish(),
    temperature: z.number().nullish(),
    finish_reason: z.string().nullish(),
    tools: z.union([z.string(), z.array(z.any())]).nullish(),
    events: z.array(z.any()).nullish(),
    tool_call_id: z.string().nullish(),
    agent_type: z.string().nullish(),
    control_id: z.number().int().nullish(),
    agent_name: z.string().nullish(),
    check_stage: z.string().nullish(),
    applies_to: z.string().nullish(),
    evaluator_name: z.string().nullish(),
    selector_path: z.string().nullish(),
  });

/** A span and, for workflow and agent spans, the spans nested in it. */
export type IngestSpan = z.infer<typeof SpanFields> & { spans?: IngestSpan[] | null };
type IngestSpanInput = z.input<typeof SpanFields> & { spans?: IngestSpanInput[] | null };

export const SpanSchema: z.ZodType<IngestSpan, IngestSpanInput> = SpanFields.extend({
  spans: z.lazy(() => z.array(SpanSchema)).nullish(),
}).openapi("IngestSpan");

export const TraceSchema = z
  .object({
    ...recordFields,
    type: z.literal("trace").default("trace"),
    session_id: Uuid.nullish(),
    spans: z.array(SpanSchema).nullish(),
  })
  .openapi("IngestTrace");

export type IngestTrace = z.infer<typeof TraceSchema>;

/** The most records one ingest request may carry (traces and spans at any depth). */
export const MAX_RECORDS_PER_REQUEST = 10_000;

/**
 * Enforces MAX_RECORDS_PER_REQUEST over `field` (a list of records with nested `spans`), counting
 * every nested span: the list's own `.max()` only counts its top level. The 422 points at the
 * item in which the limit is crossed, so it echoes that item rather than the whole request.
 */
export function refineRecordCount(field: string) {
  return (value: Record<string, unknown>, ctx: z.RefinementCtx): void => {
    const items = value[field];
    if (!Array.isArray(items)) return;
    let count = 0;
    for (const [index, item] of items.entries()) {
      const pending: unknown[] = [item];
      while (pending.length > 0) {
        const record = pending.pop() as { spans?: unknown } | null | undefined;
        count += 1;
        if (Array.isArray(record?.spans)) pending.push(...record.spans);
      }
      if (count > MAX_RECORDS_PER_REQUEST) {
        const msg = `Value error, a request may carry at most ${MAX_RECORDS_PER_REQUEST} records (${field} and their spans at any depth); send the rest in another request`;
        ctx.addIssue({
          code: "custom",
          message: msg,
          path: [field, index],
          params: { pydantic: { type: "value_error", msg, ctx: { error: msg.replace("Value error, ", "") } } },
        });
        return;
      }
    }
  };
}

export const IngestTracesRequest = z
  .object({
    ...runSelectorShape,
    session_id: Uuid.nullish().openapi({ description: "Session the traces belong to, unless a trace names its own." }),
    traces: z.array(TraceSchema).min(1).max(MAX_RECORDS_PER_REQUEST),
    is_complete: z.boolean().nullish(),
    // Sent by the galileo SDK (always false there); when true the answer lists the trace ids.
    include_trace_ids: z.boolean().nullish().openapi({ description: "Answer with `trace_ids`, the ids of the traces written." }),
  })
  .openapi("IngestTracesRequest");

export const IngestResponse = z
  .object({
    project_id: z.string(),
    project_name: z.string(),
    records_count: z.number().int(),
    traces_count: z.number().int(),
    spans_count: z.number().int(),
    log_stream_id: z.string().nullable(),
    experiment_id: z.string().nullable(),
    metrics_testing_id: z.string().nullable(),
    session_id: z.string().nullable(),
    trace_ids: z.array(z.string()).optional().openapi({ description: "With `include_trace_ids`: the traces written, in request order." }),
  })
  .openapi("IngestResponse");

export const CreateSessionRequest = z
  .object({
    ...runSelectorShape,
    id: Uuid.nullish(),
    name: z.string().max(4096).nullish(),
    previous_session_id: Uuid.nullish(),
    external_id: z.string().max(1024).nullish(),
    user_metadata: UserMetadata.nullish(),
    created_at: Timestamp.nullish(),
  })
  .openapi("CreateSessionRequest");
