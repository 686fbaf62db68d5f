import { z } from "@hono/zod-openapi";
import { JOB_STATUSES } from "../db/schema";
import { ORG_JOB_NAMES } from "./deletion-jobs";
import { queryBoolean, Uuid } from "../http/common-schemas";

/** The seed's OrgMetadataDeleteRequest. Unknown keys are ignored (contract, section 1). */
export const OrgMetadataDeleteRequest = z
  .object({
    metadata_key: z.string().min(1).max(256).openapi({ description: "The user_metadata key to match.", example: "user_id" }),
    metadata_value: z.string().openapi({ description: "The value it must equal exactly (case-sensitive).", example: "u-1234" }),
  })
  .openapi("OrgMetadataDeleteRequest");

export const DeleteByMetadataQuery = z.object({
  immediate: queryBoolean(false).openapi({
    param: { name: "immediate", in: "query" },
    description: "Delete inside the request up to a fixed budget; the rest, if any, continues as a queued job.",
  }),
  dry_run: queryBoolean(false).openapi({
    param: { name: "dry_run", in: "query" },
    description: "Only count what would be deleted; delete nothing and create no job.",
  }),
});

const Counts = z.object({ sessions: z.number().int(), traces: z.number().int(), spans: z.number().int() });

export const OrgMetadataDeleteResponse = z
  .object({
    job_id: z.string().uuid().nullable().openapi({
      description: "The job that deletes (or finishes deleting) the records; null when nothing matched, on a dry run, and when an immediate deletion finished within the request.",
    }),
    message: z.string(),
    deleted: Counts.optional().openapi({ description: "immediate=true: the records this request deleted." }),
    would_delete: Counts.optional().openapi({ description: "dry_run=true: the records a deletion would remove now." }),
    would_delete_is_exact: z.boolean().optional().openapi({
      description: "dry_run=true: false when the count stopped at its bound (20,000 matching records): the deletion would remove at least `would_delete`.",
    }),
  })
  .openapi("OrgMetadataDeleteResponse");

export const JobIdParam = z.object({
  job_id: Uuid.openapi({ param: { name: "job_id", in: "path" } }),
});

const MetadataRequestData = z
  .object({ metadata_key: z.string(), metadata_value: z.string(), immediate: z.boolean() })
  .openapi("DeleteByMetadataRequestData");

const ExpiryRequestData = z
  .object({
    projects: z.array(
      z.object({
        project_id: z.string(),
        retention_days: z.number().int(),
        cutoff: z.string().openapi({ format: "date-time", description: "Records created before this instant are erased." }),
      }),
    ),
  })
  .openapi("ExpireRetentionRequestData");

const FilterRequestData = z
  .object({
    project_id: z.string(),
    run_id: z.string(),
    root_type: z.enum(["session", "trace", "span"]),
    filters: z.array(z.unknown()),
    filter_tree: z.unknown(),
    immediate: z.boolean(),
  })
  .openapi("DeleteByFilterRequestData");

const ExportRequestData = z
  .object({
    project_id: z.string(),
    run_id: z.string(),
    root_type: z.enum(["session", "trace", "span"]),
    export_format: z.enum(["jsonl", "jsonl_flat", "csv"]),
    filters: z.array(z.unknown()),
    filter_tree: z.unknown(),
  })
  .openapi("ExportRecordsRequestData");

const DeletionProgress = z.object({
  sessions_deleted: z.number().int(),
  traces_deleted: z.number().int(),
  spans_deleted: z.number().int(),
});

const ExportProgress = z.object({
  records_exported: z.number().int().openapi({ description: "Records written to the file so far (roots, and descendants in the JSON formats)." }),
  bytes_written: z.number().int(),
});

const RedactionRequestData = z
  .object({ project_id: z.string(), start_time: z.string().nullable(), end_time: z.string().nullable() })
  .openapi("RedactionRequestData");

const RedactionProgress = z.object({
  records_scanned: z.number().int().openapi({ description: "Records of the range read so far." }),
  records_changed: z.number().int().openapi({ description: "Records the policy rewrote so far." }),
});

const ScoreRequestData = z
  .object({ project_id: z.string(), run_id: z.string(), start_time: z.string(), end_time: z.string(), scorer_ids: z.array(z.string()).nullable() })
  .openapi("ScoreBackfillRequestData");

const ScoreProgress = z.object({
  records_scored: z.number().int().openapi({ description: "Records of the range at least one scorer applied to, so far." }),
  records_skipped: z.number().int().openapi({ description: "Records of the range no scorer applied to (node type, filter, sample)." }),
  errors: z.number().int().openapi({ description: "Results left in error." }),
});

export const OrgJob = z
  .object({
    id: z.string().uuid(),
    organization_id: z.string(),
    job_name: z.string().openapi({
      example: "delete_by_metadata",
      description:
        "`delete_by_metadata` (a deletion request), `delete_by_filter` (a deletion of one run's records matching a filter), `expire_retention` (the hourly retention expiry) `export_records` (a queued export to a file) `redact` (masking stored records with the project's redaction policy) or `score` (a backfill of scorers over a run).",
    }),
    status: z.enum(JOB_STATUSES),
    request_data: z.union([MetadataRequestData, ExpiryRequestData, FilterRequestData, ExportRequestData, RedactionRequestData, ScoreRequestData]).openapi({ description: "What the job was asked: its `job_name` says which shape." }),
    error_message: z.string().nullable(),
    created_by: z.string().openapi({ description: "The user who submitted the job." }),
    created_at: z.string().openapi({ format: "date-time" }),
    updated_at: z.string().openapi({ format: "date-time" }),
    progress: z.union([DeletionProgress, ExportProgress, RedactionProgress, ScoreProgress]).openapi({ description: "Deletions count what they deleted; exports what they wrote." }),
  })
  .openapi("OrgJob");

export const ListOrgJobsQuery = z.object({
  job_name: z.enum(ORG_JOB_NAMES).optional().openapi({ description: "Only jobs of this kind." }),
  status: z.enum(JOB_STATUSES).optional().openapi({ description: "Only jobs in this status." }),
  starting_token: z.coerce.number().int().min(0).max(1_000_000).default(0).openapi({ description: "Zero-based offset of the page's first job." }),
  limit: z.coerce.number().int().min(1).max(1000).default(100).openapi({ description: "Jobs per page (at most 1000)." }),
});

export const OrgJobList = z
  .object({
    jobs: z.array(OrgJob),
    starting_token: z.number().int(),
    limit: z.number().int(),
    paginated: z.boolean().openapi({ description: "True when more jobs follow." }),
    next_starting_token: z.number().int().nullable(),
  })
  .openapi("OrgJobList");
