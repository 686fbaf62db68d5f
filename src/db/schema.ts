/**
 * The database schema: the single source of truth for tables (migrations are generated from it
 * by `npm run db:generate`). See docs/schema.md for the index design and the query each index
 * serves.
 *
 * Conventions:
 * - ids are UUID strings; timestamps are integers in microseconds since the epoch, so that
 *   ranges and orderings compare integers and every order index stays small.
 * - A record's id is the client's, unique within its project (not across the database: no
 *   tenant can learn about, or pre-empt, another tenant's ids). Inside the database a record is
 *   known by `rid`, its integer row key, which side rows reference.
 * - One `records` table holds sessions, traces and spans (`record_type` says which, `type` the
 *   kind), so that search, counts and deletion are one code path for every kind.
 * - User metadata, tags and metric values are kept twice: as JSON on the record (returned as is,
 *   no join) and as rows in side tables whose indexes carry the run, the record type and the
 *   order columns, so that a filter or a sort on them is an index range scan.
 * - There is no foreign key between records (streaming ingestion may deliver a span before its
 *   trace); ownership (organization, project, run) is enforced by foreign keys and a trigger.
 * - This file is the catalog database (binding DB): organizations, users, keys, projects, runs,
 *   jobs, and where each project's records live (`projects.shard`). The record tables below are
 *   also the schema of every data shard (migrations/shard/, docs/sharding.md), where they sit
 *   beside a copy of `runs` and without foreign keys to the catalog's tables; the catalog keeps
 *   them so that it can serve as a shard itself (a one-database deployment, and projects placed
 *   before sharding). test/shard-schema.test.ts holds the two in step.
 */
import { sql } from "drizzle-orm";
import {
  index,
  integer,
  primaryKey,
  real,
  sqliteTable,
  text,
  uniqueIndex,
} from "drizzle-orm/sqlite-core";

export const organizations = sqliteTable("organizations", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  createdAt: integer("created_at").notNull(),
  /** Retention (days) that new projects of the organization take when their creator names none; null: keep for ever. */
  defaultRetentionDays: integer("default_retention_days"),
});

export const users = sqliteTable(
  "users",
  {
    id: text("id").primaryKey(),
    organizationId: text("organization_id")
      .notNull()
      .references(() => organizations.id),
    email: text("email").notNull(),
    role: text("role", { enum: ["admin", "member"] }).notNull(),
    /** PBKDF2-SHA256 hash, base64. */
    passwordHash: text("password_hash").notNull(),
    /** Per-user random salt, base64. */
    passwordSalt: text("password_salt").notNull(),
    passwordIterations: integer("password_iterations").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [
    uniqueIndex("users_email").on(t.email),
    index("users_organization").on(t.organizationId),
  ],
);

export const apiKeys = sqliteTable(
  "api_keys",
  {
    id: text("id").primaryKey(),
    userId: text("user_id")
      .notNull()
      .references(() => users.id),
    /** SHA-256 of the key, hex. The key itself is shown once and never stored. */
    keyHash: text("key_hash").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [uniqueIndex("api_keys_hash").on(t.keyHash)],
);

export const projects = sqliteTable(
  "projects",
  {
    id: text("id").primaryKey(),
    organizationId: text("organization_id")
      .notNull()
      .references(() => organizations.id),
    name: text("name").notNull(),
    type: text("type").notNull(),
    createdBy: text("created_by"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
    /**
     * The data shard (a D1 binding name) that holds the project's records, chosen when the
     * project is created (src/shards/placement.ts) and changed only by a move. Null: the catalog
     * database itself (projects created before sharding).
     */
    shard: text("shard"),
    /**
     * Days a record is kept after its created_at (1 to 3650); null: for ever. Searches hide what
     * is older, and the hourly cron erases it (src/retention, docs/retention.md).
     */
    retentionDays: integer("retention_days"),
  },
  (t) => [
    uniqueIndex("projects_organization_name").on(t.organizationId, t.name),
    index("projects_shard").on(t.shard),
    index("projects_retention").on(t.retentionDays).where(sql`retention_days IS NOT NULL`),
  ],
);

/**
 * What the catalog knows of each data shard's size (bytes, as D1 reports it after a query),
 * refreshed from the answers of writes and by the scheduled maintenance: placement and the full
 * shard check read it (src/shards/shard-sizes.ts).
 */
export const shards = sqliteTable("shards", {
  name: text("name").primaryKey(),
  sizeBytes: integer("size_bytes").notNull(),
  updatedAt: integer("updated_at").notNull(),
});

export const RUN_KINDS = ["log_stream", "experiment", "metrics_testing"] as const;
export type RunKind = (typeof RUN_KINDS)[number];

export const runs = sqliteTable(
  "runs",
  {
    id: text("id").primaryKey(),
    organizationId: text("organization_id")
      .notNull()
      .references(() => organizations.id),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id),
    kind: text("kind", { enum: RUN_KINDS }).notNull(),
    name: text("name").notNull(),
    taskType: text("task_type"),
    createdBy: text("created_by"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [uniqueIndex("runs_project_kind_name").on(t.projectId, t.kind, t.name)],
);

export const records = sqliteTable(
  "records",
  {
    /** The row key (SQLite's rowid): side rows reference it. Never shown to clients. */
    rid: integer("rid").primaryKey(),
    /** The client's id: unique within the project (records_project_record_id). */
    id: text("id").notNull(),
    organizationId: text("organization_id")
      .notNull()
      .references(() => organizations.id),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id),
    runId: text("run_id")
      .notNull()
      .references(() => runs.id),
    /** `session`, `trace` or `span`: the searchable families. */
    recordType: text("record_type", { enum: ["session", "trace", "span"] }).notNull(),
    /** The record kind: session, trace, agent, workflow, llm, tool, retriever, control. */
    type: text("type").notNull(),
    name: text("name").notNull(),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at"),
    /** Text as searched: the string itself, or the JSON of a structured value. */
    input: text("input"),
    /** 1 when `input` holds JSON (messages, documents) rather than a plain string. */
    inputIsJson: integer("input_is_json").notNull().default(0),
    output: text("output"),
    outputIsJson: integer("output_is_json").notNull().default(0),
    redactedInput: text("redacted_input"),
    redactedOutput: text("redacted_output"),
    statusCode: integer("status_code"),
    externalId: text("external_id"),
    datasetInput: text("dataset_input"),
    datasetOutput: text("dataset_output"),
    datasetMetadata: text("dataset_metadata"),
    sessionId: text("session_id"),
    traceId: text("trace_id"),
    parentId: text("parent_id"),
    hasChildren: integer("has_children").notNull().default(0),
    isComplete: integer("is_complete").notNull().default(1),
    stepNumber: integer("step_number"),
    errorMessage: text("error_message"),
    progressMessage: text("progress_message"),
    /** JSON object, string to string. */
    userMetadata: text("user_metadata").notNull().default("{}"),
    /** JSON array of strings. */
    tags: text("tags").notNull().default("[]"),
    /** JSON object, metric name to number. */
    metrics: text("metrics").notNull().default("{}"),
    /** JSON object, metric name to the scorer's metadata dictionary. */
    metricInfo: text("metric_info"),
    feedbackRatingInfo: text("feedback_rating_info"),
    model: text("model"),
    temperature: real("temperature"),
    finishReason: text("finish_reason"),
    tools: text("tools"),
    events: text("events"),
    toolCallId: text("tool_call_id"),
    agentType: text("agent_type"),
    controlId: integer("control_id"),
    agentName: text("agent_name"),
    checkStage: text("check_stage"),
    appliesTo: text("applies_to"),
    evaluatorName: text("evaluator_name"),
    selectorPath: text("selector_path"),
    previousSessionId: text("previous_session_id"),
  },
  (t) => [
    // Upserts by the client's id, and lookups by id, always within one project.
    uniqueIndex("records_project_record_id").on(t.projectId, t.id),
    // Native order (created_at desc, id desc) and date ranges within a run.
    index("records_run_order").on(t.runId, t.recordType, t.createdAt, t.id),
    // Id order within a run: search sorted by `id`, and the records without a value of a metric
    // that a metric-sorted search lists last (src/search/compile-search-query.ts).
    index("records_run_id_order").on(t.runId, t.recordType, t.id),
    // `type` = <kind> within a run, in native order.
    index("records_run_type_order").on(t.runId, t.recordType, t.type, t.createdAt, t.id),
    // `model` = <name> (llm spans) in native order.
    index("records_run_model_order")
      .on(t.runId, t.recordType, t.model, t.createdAt, t.id)
      .where(sql`model IS NOT NULL`),
    // Session lookup by the client's external id (the SDK's startSession).
    index("records_run_external_id")
      .on(t.runId, t.recordType, t.externalId)
      .where(sql`external_id IS NOT NULL`),
    // Children of a trace (spans, counts, deletion) and of a session (traces, deletion).
    index("records_trace").on(t.traceId, t.recordType),
    index("records_session").on(t.sessionId, t.recordType),
    index("records_parent").on(t.parentId),
  ],
);

/**
 * Side rows reference their record by `rid` and are WITHOUT ROWID tables keyed by
 * (record_rid, ...) (the migration says so: drizzle's DSL cannot), so every secondary index
 * carries the record's rid and a search joins back to `records` by rowid. They also repeat the
 * record's client id (`record_id`), which the order indexes end with: the native order breaks
 * created_at ties by id.
 */
const recordRid = () =>
  integer("record_rid")
    .notNull()
    .references(() => records.rid, { onDelete: "cascade" });

/** One row per (record, metadata key). Serves metadata filters and deletion by metadata. */
export const recordMetadata = sqliteTable(
  "record_metadata",
  {
    recordRid: recordRid(),
    recordId: text("record_id").notNull(),
    key: text("key").notNull(),
    value: text("value").notNull(),
    organizationId: text("organization_id").notNull(),
    runId: text("run_id").notNull(),
    recordType: text("record_type").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.recordRid, t.key] }),
    // `user_metadata.<key>` = value within a run, already in native order.
    index("record_metadata_run_key_value_order").on(
      t.runId,
      t.recordType,
      t.key,
      t.value,
      t.createdAt,
      t.recordId,
    ),
    // Org-wide deletion by key/value.
    index("record_metadata_org_key_value").on(t.organizationId, t.key, t.value, t.recordType),
  ],
);

/** One row per (record, tag). Serves tag (collection) filters in native order. */
export const recordTags = sqliteTable(
  "record_tags",
  {
    recordRid: recordRid(),
    recordId: text("record_id").notNull(),
    tag: text("tag").notNull(),
    runId: text("run_id").notNull(),
    recordType: text("record_type").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.recordRid, t.tag] }),
    index("record_tags_run_tag_order").on(t.runId, t.recordType, t.tag, t.createdAt, t.recordId),
  ],
);

/** One row per (record, metric). Serves metric filters and sorts by metric value. */
export const recordMetrics = sqliteTable(
  "record_metrics",
  {
    recordRid: recordRid(),
    recordId: text("record_id").notNull(),
    name: text("name").notNull(),
    value: real("value").notNull(),
    runId: text("run_id").notNull(),
    recordType: text("record_type").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.recordRid, t.name] }),
    index("record_metrics_run_name_value").on(t.runId, t.recordType, t.name, t.value, t.recordId),
  ],
);

/**
 * Which columns hold a value somewhere in a run, per record type: maintained at ingestion so that
 * the available-columns answer (`is_empty`, the run's metric columns) never scans the run.
 * Rows are not removed by deletion: a column once filled stays listed.
 */
export const runColumns = sqliteTable(
  "run_columns",
  {
    runId: text("run_id")
      .notNull()
      .references(() => runs.id),
    recordType: text("record_type").notNull(),
    columnId: text("column_id").notNull(),
  },
  (t) => [primaryKey({ columns: [t.runId, t.recordType, t.columnId] })],
);

/**
 * Updates (`PATCH /traces/{id}`, `PATCH /spans/{id}`) that arrived before the record they update.
 * Streaming clients send a record and its update concurrently (the `galileo` SDK often delivers a
 * trace's final update before the trace itself); the update is held here, keyed by the run it
 * was sent for, and applied in the same batch that finally writes the record. A null field
 * leaves the record's value alone. Rows whose record never arrives expire (see
 * src/ingest/streaming-patches.ts).
 */
export const recordPatches = sqliteTable(
  "record_patches",
  {
    recordId: text("record_id").notNull(),
    runId: text("run_id")
      .notNull()
      .references(() => runs.id),
    organizationId: text("organization_id")
      .notNull()
      .references(() => organizations.id),
    projectId: text("project_id").notNull(),
    /** `trace` or `span`: the update applies only to a record of that family. */
    recordType: text("record_type").notNull(),
    input: text("input"),
    inputIsJson: integer("input_is_json"),
    output: text("output"),
    outputIsJson: integer("output_is_json"),
    statusCode: integer("status_code"),
    /** JSON array of strings: replaces the record's tags. */
    tags: text("tags"),
    isComplete: integer("is_complete"),
    durationNs: real("duration_ns"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.recordId, t.runId] }),
    // The updates a run holds: every ingest batch looks them up (usually there are none), so the
    // lookup costs one probe rather than one per record written.
    index("record_patches_run").on(t.runId),
    // Expiry of updates whose record never arrived, oldest first.
    index("record_patches_created").on(t.createdAt),
  ],
);

/**
 * Ids of records erased by a deletion job, kept for TOMBSTONE_MICROS (src/ingest/tombstones.ts):
 * a record, span or update that arrives later naming one of them (as its own id, its trace,
 * its session or its parent) is not stored, so an erasure cannot be undone by a client's
 * retry or a streaming straggler. Purged on schedule.
 */
export const recordTombstones = sqliteTable(
  "record_tombstones",
  {
    projectId: text("project_id").notNull(),
    recordId: text("record_id").notNull(),
    deletedAt: integer("deleted_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.recordId] }), index("record_tombstones_deleted").on(t.deletedAt)],
);

export const JOB_STATUSES = ["queued", "running", "completed", "failed"] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

/**
 * The projects whose records a database holds, and in what state (every data shard has this
 * table, and so does the catalog, which can serve as a shard). Records of a project may only be
 * written while it is `active`, `exporting` or `importing` here (trigger
 * `records_project_on_shard`). During a move (src/shards/moves) the source is `exporting` (writable,
 * every change logged in `shard_project_changes`), then `frozen` (readable, not writable), then
 * `gone` (neither, while its copy is deleted); the target is `importing` until it is `active`.
 * A worker whose routing cache is stale finds out from here, on the shard itself, and re-routes.
 */
export const SHARD_PROJECT_STATES = ["active", "exporting", "frozen", "gone", "importing"] as const;
export type ShardProjectState = (typeof SHARD_PROJECT_STATES)[number];

export const shardProjects = sqliteTable("shard_projects", {
  projectId: text("project_id").primaryKey(),
  organizationId: text("organization_id").notNull(),
  state: text("state", { enum: SHARD_PROJECT_STATES }).notNull(),
  updatedAt: integer("updated_at").notNull(),
});

/**
 * Ids of a project's records (and of their held updates and tombstones) changed while the project
 * is being moved off this database (states `exporting` and `frozen`), written by triggers on
 * `records`, `record_patches` and `record_tombstones`: the move copies them again
 * (src/shards/moves). `version` grows with every change of the id, so the move forgets an entry
 * only if it did not change again after the move read it.
 */
export const shardProjectChanges = sqliteTable(
  "shard_project_changes",
  {
    projectId: text("project_id").notNull(),
    recordId: text("record_id").notNull(),
    version: integer("version").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.recordId] })],
);

/**
 * One organization job's part on one database (a shard, or the catalog serving as one): its
 * status and exact progress, updated in the same batch as the records it deletes.
 */
export const shardJobs = sqliteTable("shard_jobs", {
  jobId: text("job_id").primaryKey(),
  organizationId: text("organization_id").notNull(),
  status: text("status", { enum: ["queued", "running", "completed", "failed"] }).notNull(),
  sessionsDeleted: integer("sessions_deleted").notNull().default(0),
  tracesDeleted: integer("traces_deleted").notNull().default(0),
  spansDeleted: integer("spans_deleted").notNull().default(0),
  updatedAt: integer("updated_at").notNull(),
});

/** Organization-wide jobs (deletion by metadata). */
export const orgJobs = sqliteTable(
  "org_jobs",
  {
    id: text("id").primaryKey(),
    organizationId: text("organization_id")
      .notNull()
      .references(() => organizations.id),
    jobName: text("job_name").notNull(),
    status: text("status", { enum: JOB_STATUSES }).notNull(),
    /** JSON: {metadata_key, metadata_value, immediate}. */
    requestData: text("request_data").notNull(),
    errorMessage: text("error_message"),
    createdBy: text("created_by").notNull(),
    sessionsDeleted: integer("sessions_deleted").notNull().default(0),
    tracesDeleted: integer("traces_deleted").notNull().default(0),
    spansDeleted: integer("spans_deleted").notNull().default(0),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [
    index("org_jobs_organization").on(t.organizationId, t.createdAt),
    /** The cron's "does this organization still have an expiry running?" (src/retention/schedule-expiry.ts). */
    index("org_jobs_active").on(t.jobName, t.organizationId).where(sql`status IN ('queued', 'running')`),
  ],
);

/**
 * An organization job's parts, one per shard that holds projects of the organization: the
 * catalog's copy of each shard's status and progress (the shard's own `shard_jobs` row is the
 * exact one; the consumer copies it here after each message). The job is completed when every
 * part is, failed when one fails for good.
 */
export const orgJobShards = sqliteTable(
  "org_job_shards",
  {
    jobId: text("job_id")
      .notNull()
      .references(() => orgJobs.id),
    shard: text("shard").notNull(),
    status: text("status", { enum: JOB_STATUSES }).notNull(),
    sessionsDeleted: integer("sessions_deleted").notNull().default(0),
    tracesDeleted: integer("traces_deleted").notNull().default(0),
    spansDeleted: integer("spans_deleted").notNull().default(0),
    errorMessage: text("error_message"),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.jobId, t.shard] })],
);

export const MOVE_PHASES = ["queued", "copying", "catching_up", "frozen", "cleanup", "completed", "failed"] as const;
export type MovePhase = (typeof MOVE_PHASES)[number];

/**
 * Moves of a project's records from one database to another (docs/sharding.md, "Moving a
 * project"; src/shards/moves). The row is the whole state of a move: its phase, the step within
 * the phase and that step's keyset cursor, its progress. Queue messages only say "advance move
 * X" (with `message_seq`, so that a stale duplicate does nothing). One open move per project.
 */
export const projectMoves = sqliteTable(
  "project_moves",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id),
    organizationId: text("organization_id").notNull(),
    /** Binding names of the databases the records move from and to. */
    source: text("source").notNull(),
    target: text("target").notNull(),
    phase: text("phase", { enum: MOVE_PHASES }).notNull(),
    /** `running`, or `paused` after repeated failures (running the admin command again resumes it). */
    status: text("status", { enum: ["running", "paused"] }).notNull().default("running"),
    /** The step within the phase (runs, records, patches, tombstones, drain, verify, switch, ...). */
    step: text("step"),
    /** The step's keyset cursor (the last key done), "" at its start. */
    cursor: text("cursor").notNull().default(""),
    /** Records of the project on the source when the move started. */
    recordsTotal: integer("records_total"),
    recordsCopied: integer("records_copied").notNull().default(0),
    changesReplayed: integer("changes_replayed").notNull().default(0),
    oldRecordsDeleted: integer("old_records_deleted").notNull().default(0),
    /** JSON: what the verification counted on both sides ({sessions, traces, spans, runs, ...}). */
    verified: text("verified"),
    errorMessage: text("error_message"),
    messageSeq: integer("message_seq").notNull().default(0),
    createdAt: integer("created_at").notNull(),
    /** Last progress (microseconds); 0 asks the scheduled watchdog for a message at once. */
    updatedAt: integer("updated_at").notNull(),
    switchedAt: integer("switched_at"),
    finishedAt: integer("finished_at"),
  },
  (t) => [
    uniqueIndex("project_moves_open").on(t.projectId).where(sql`phase NOT IN ('completed', 'failed')`),
    index("project_moves_project").on(t.projectId, t.createdAt),
  ],
);
