/**
 * Request and response bodies of the annotation queue routes (contract section 8, "Queues"),
 * field names as Galileo's server spells them.
 */
import { z } from "@hono/zod-openapi";
import { Uuid } from "../http/common-schemas";
import { AnnotationTemplateCreate, AnnotationTemplateDB } from "../annotations/template-schemas";
import { QUEUE_ROLES } from "./queue-store";

/** Records one add, removal or count may name, and a filter add may reach (contract section 8). */
export const QUEUE_LIMITS = {
  maxRecordsPerAdd: 100_000,
  maxUsersPerRequest: 1000,
  maxQueuesPerPage: 100,
} as const;

export const QueueIdParam = z.object({ queue_id: Uuid.openapi({ param: { name: "queue_id", in: "path" } }) });
export const QueueTemplatePath = QueueIdParam.extend({ template_id: Uuid.openapi({ param: { name: "template_id", in: "path" } }) });
export const QueueRecordPath = QueueIdParam.extend({ record_id: Uuid.openapi({ param: { name: "record_id", in: "path" } }) });
export const QueueUserPath = QueueIdParam.extend({ user_id: Uuid.openapi({ param: { name: "user_id", in: "path" } }) });

const QueueName = z.string().min(1).max(128);

export const AnnotationQueueCreate = z
  .object({
    name: z.object({ value: QueueName, append_suffix_if_duplicate: z.boolean().default(false) }),
    description: z.string().max(10_000).nullish(),
    annotator_emails: z.array(z.string().min(1).max(320)).max(QUEUE_LIMITS.maxUsersPerRequest).nullish(),
  })
  .openapi("AnnotationQueueCreate");

export const AnnotationQueueUpdate = z
  .object({
    name: z.union([QueueName, z.object({ value: QueueName, append_suffix_if_duplicate: z.boolean().default(false) })]).nullish(),
    description: z.string().max(10_000).nullish(),
  })
  .openapi("AnnotationQueueUpdate");

const Permission = z.object({ action: z.string(), allowed: z.boolean() });

export const AnnotationQueueResponse = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
    created_by_user: z.object({ id: z.string(), email: z.string().nullable() }).nullable(),
    num_log_records: z.number().int(),
    num_annotators: z.number().int(),
    num_users: z.number().int(),
    num_templates: z.number().int(),
    num_logs_annotated: z.record(z.string(), z.number().int()),
    progress: z.record(z.string(), z.number()),
    overall_progress: z.number(),
    templates: z.array(AnnotationTemplateDB),
    permissions: z.array(Permission),
  })
  .openapi("AnnotationQueueResponse");

export const QueueQueryRequest = z
  .object({
    name: z.string().max(128).nullish().openapi({ description: "Queues whose name contains this (case-insensitive)." }),
    filters: z
      .array(z.object({ name: z.literal("name"), value: z.string().max(128), operator: z.enum(["contains", "eq"]).default("contains") }))
      .max(10)
      .nullish()
      .openapi({ description: "Galileo's spelling: [{name: 'name', value, operator: 'contains'}]." }),
    starting_token: z.number().int().min(0).nullish(),
    limit: z.number().int().min(1).max(QUEUE_LIMITS.maxQueuesPerPage).nullish(),
  })
  .openapi("AnnotationQueueQuery");

export const QueueQueryResponse = z
  .object({
    annotation_queues: z.array(AnnotationQueueResponse),
    starting_token: z.number().int(),
    limit: z.number().int(),
    paginated: z.boolean(),
    next_starting_token: z.number().int().nullable(),
  })
  .openapi("AnnotationQueueQueryResponse");

export const QueueTemplateCreate = z.object({ template: AnnotationTemplateCreate }).openapi("AnnotationQueueTemplateCreate");
export const QueueTemplateUpdate = z
  .object({ name: z.string().min(1).max(255).optional(), criteria: z.string().max(10_000).nullable().optional() })
  .openapi("AnnotationQueueTemplateUpdate");

const RecordType = z.enum(["trace", "span", "session"]);

export const RecordSelector = z
  .discriminatedUnion("type", [
    z.object({ type: z.literal("record_ids"), record_ids: z.array(Uuid).min(1).max(QUEUE_LIMITS.maxRecordsPerAdd) }),
    z.object({ type: z.literal("filter_tree"), filter_tree: z.unknown(), record_type: RecordType.default("trace") }),
  ])
  .openapi("AnnotationQueueRecordSelector");

export const AddRecordsRequest = z.object({ project_id: Uuid, run_id: Uuid, record_selector: RecordSelector }).openapi("AnnotationQueueAddRecords");
export const RemoveRecordsRequest = z.object({ record_selector: RecordSelector }).openapi("AnnotationQueueRemoveRecords");
export const CountRecordsRequest = z
  .object({ filter_tree: z.unknown().optional(), record_type: RecordType.default("trace") })
  .openapi("AnnotationQueueCountRecords");

export const QueueUserEntry = z
  .object({ user_id: Uuid.optional(), user_email: z.string().min(1).max(320).optional(), role: z.enum(QUEUE_ROLES) })
  .openapi("AnnotationQueueUserCreate");

export const QueueUser = z
  .object({ user_id: z.string(), email: z.string(), role: z.enum(QUEUE_ROLES), created_at: z.string() })
  .openapi("AnnotationQueueUser");
