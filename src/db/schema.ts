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
    /**
     * Bearer tokens carry the generation they were issued in (claim `gen`); a password reset
     * moves it on, which ends every token issued before (src/auth/token-revocation.ts).
     */
    tokenGeneration: integer("token_generation").notNull().default(0),
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

/**
 * Bearer tokens ended by `POST /v2/logout`, by their id (claim `jti`), kept until they would have
 * expired anyway (`expires_at`, seconds, as the token's `exp`).
 */
export const revokedTokens = sqliteTable(
  "revoked_tokens",
  {
    id: text("id").primaryKey(),
    expiresAt: integer("expires_at").notNull(),
  },
  (t) => [index("revoked_tokens_expiry").on(t.expiresAt)],
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
 * A project's time partitions (catalog only; docs/partitions.md, contract section 13): each on one
 * data shard, numbered `seq` 1, 2, ... in the order they opened; exactly one `open` (new roots go
 * there), the others `closed`. Written when a project is created, when a partition rolls and when
 * one moves: never per record (root counts live on the shards: `shard_partitions`).
 */
export const PARTITION_STATES = ["open", "closed"] as const;

export const projectPartitions = sqliteTable(
  "project_partitions",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id),
    seq: integer("seq").notNull(),
    shard: text("shard").notNull(),
    state: text("state", { enum: PARTITION_STATES }).notNull(),
    openedAt: integer("opened_at").notNull(),
    closedAt: integer("closed_at"),
  },
  (t) => [
    uniqueIndex("project_partitions_project_seq").on(t.projectId, t.seq),
    // At most one open partition per project: two isolates rolling at once cannot both open one.
    uniqueIndex("project_partitions_open").on(t.projectId).where(sql`state = 'open'`),
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
    /**
     * The record's run and family as one small integer (run_families.key): what the search
     * indexes lead with instead of the 36-character run id and the family's name (docs/schema.md,
     * "Storage per record"). Set by the upsert from run_families, never changed (a record keeps
     * its run and family: records_ownership_guard). The default is never used: an explicit NULL
     * (a run without families) fails the NOT NULL constraint.
     */
    familyKey: integer("family_key").notNull().default(0),
    /**
     * Which of `metrics`' cost and token values the service derived rather than the client sent,
     * as bits (src/ingest/derived-metrics.ts): 1 `cost`, 2 `num_input_tokens`, 4
     * `num_output_tokens`, 8 `num_total_tokens`. An llm span's computed cost, a trace's or
     * session's roll-ups. A value the client sends always replaces a derived one, a derived one
     * never replaces the client's (docs/analytics.md).
     */
    derivedMetrics: integer("derived_metrics").notNull().default(0),
    /**
     * The project's partition that holds the record (`project_partitions.seq`, docs/partitions.md):
     * set by the record's first write (its root's partition), never changed. Null: the project's
     * first partition (records written before partitions existed keep null: no rewrite).
     */
    partitionSeq: integer("partition_seq"),
  },
  (t) => [
    // Upserts by the client's id, and lookups by id, always within one project.
    uniqueIndex("records_project_record_id").on(t.projectId, t.id),
    // Native order (created_at desc, id desc) and date ranges within a run's family.
    index("records_family_order").on(t.familyKey, t.createdAt, t.id),
    // Id order within a run's family: search sorted by `id`, and the records without a value of
    // a metric that a metric-sorted search lists last (src/search/compile-search-query.ts).
    index("records_family_id_order").on(t.familyKey, t.id),
    // `type` = <kind> within a run's family, in native order.
    index("records_family_type_order").on(t.familyKey, t.type, t.createdAt, t.id),
    // `model` = <name> (llm spans) in native order.
    index("records_family_model_order")
      .on(t.familyKey, t.model, t.createdAt, t.id)
      .where(sql`model IS NOT NULL`),
    // Session lookup by the client's external id (the SDK's startSession).
    index("records_run_external_id")
      .on(t.runId, t.recordType, t.externalId)
      .where(sql`external_id IS NOT NULL`),
    // Children of a trace (spans, counts, deletion) and of a session (traces, deletion).
    index("records_trace").on(t.traceId, t.recordType),
    index("records_session").on(t.sessionId, t.recordType),
    index("records_parent").on(t.parentId),
    // A partition's records, newest last (docs/partitions.md, "Erasing a partition"): the newest
    // created_at of a partition is one seek, and its erasure walks a range. The first partition's
    // records carry null or 1, so its erasure walks both ranges.
    index("records_project_partition").on(t.projectId, t.partitionSeq, t.createdAt),
  ],
);

/**
 * Progress of the roll-up backfill on this database (src/maintenance/backfill-rollups.ts): per
 * family (`trace`, then `session`), the records up to `until_rid` (the last one written before
 * the roll-up triggers existed) are recomputed in rid order; `after_rid` is how far it got.
 */
export const rollupBackfill = sqliteTable("rollup_backfill", {
  family: text("family").primaryKey(),
  afterRid: integer("after_rid").notNull(),
  untilRid: integer("until_rid").notNull(),
});

/**
 * An organization's own prices of a model (USD per 1M tokens), which win over the built-in table
 * (src/pricing). `name` is lower-cased: model names compare without case.
 */
export const modelPriceOverrides = sqliteTable(
  "model_price_overrides",
  {
    organizationId: text("organization_id")
      .notNull()
      .references(() => organizations.id),
    name: text("name").notNull(),
    inputPrice: real("input_price").notNull(),
    outputPrice: real("output_price").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.organizationId, t.name] })],
);

/**
 * The families (session, trace, span) of every run, each with a small integer key that records
 * and side rows carry instead of (run_id, record_type): 36 + 4 to 7 bytes in every search index
 * entry become 1 or 2 (docs/schema.md, "Storage per record"). Rows are made by the
 * `runs_families` trigger when a run row is written, in every database that holds a copy of the
 * run, and are never removed. `key` is an INTEGER PRIMARY KEY, so it never changes (VACUUM
 * renumbers only implicit rowids); it is local to the database: a moved project's records get
 * the target's keys when they are written there through the ingest path.
 */
export const runFamilies = sqliteTable(
  "run_families",
  {
    key: integer("key").primaryKey(),
    runId: text("run_id").notNull(),
    recordType: text("record_type", { enum: ["session", "trace", "span"] }).notNull(),
    /** The run's organization: deletion by metadata finds an organization's families by it. */
    organizationId: text("organization_id").notNull(),
  },
  (t) => [
    uniqueIndex("run_families_run_type").on(t.runId, t.recordType),
    index("run_families_organization_type").on(t.organizationId, t.recordType),
  ],
);

/**
 * Side rows reference their record by `rid` and are WITHOUT ROWID tables keyed by
 * (record_rid, ...) (the migration says so: drizzle's DSL cannot), so every secondary index
 * carries the record's rid and a search joins back to `records` by rowid. They carry the
 * record's family key and repeat its client id (`record_id`) and created_at, which the order
 * indexes end with: the native order breaks created_at ties by id.
 */
const recordRid = () =>
  integer("record_rid")
    .notNull()
    .references(() => records.rid, { onDelete: "cascade" });

/**
 * One row per (record, metadata key). Serves metadata filters and deletion by metadata (which
 * finds an organization's matches through its families: run_families_organization_type).
 */
export const recordMetadata = sqliteTable(
  "record_metadata",
  {
    recordRid: recordRid(),
    recordId: text("record_id").notNull(),
    key: text("key").notNull(),
    value: text("value").notNull(),
    familyKey: integer("family_key").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.recordRid, t.key] }),
    // `user_metadata.<key>` = value within a run's family, already in native order; deletion's
    // matches within each of the organization's families.
    index("record_metadata_family_key_value_order").on(t.familyKey, t.key, t.value, t.createdAt, t.recordId),
  ],
);

/** One row per (record, tag). Serves tag (collection) filters in native order. */
export const recordTags = sqliteTable(
  "record_tags",
  {
    recordRid: recordRid(),
    recordId: text("record_id").notNull(),
    tag: text("tag").notNull(),
    familyKey: integer("family_key").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.recordRid, t.tag] }),
    index("record_tags_family_tag_order").on(t.familyKey, t.tag, t.createdAt, t.recordId),
  ],
);

/**
 * The metric names of each run family, each with a small integer key that the metric rows carry
 * instead of (family, name). Written by the `record_metrics_*` triggers, never removed (like
 * run_columns). Local to the database, like run_families.
 */
export const metricKeys = sqliteTable(
  "metric_keys",
  {
    key: integer("key").primaryKey(),
    familyKey: integer("family_key").notNull(),
    name: text("name").notNull(),
  },
  (t) => [uniqueIndex("metric_keys_family_name").on(t.familyKey, t.name)],
);

/**
 * One row per (record, metric), in the order a metric filter or sort reads them: a WITHOUT
 * ROWID table keyed by (metric_key, value, record_id) (the migration says so: drizzle's DSL
 * cannot), so the table is its own search index and needs no other. Metrics are by far the most
 * numerous side rows (3.5 per record on the benchmark dataset), which is why they get this
 * layout. Having no key by record, the rows are maintained by triggers on `records`
 * (`record_metrics_on_insert`, `_on_update`, `_on_delete`, migration 0009), which see the old
 * `metrics` JSON and so find the old rows: every write path (ingestion, streaming updates,
 * moves, deletion, expiry) keeps them equal to the JSON. A test on one record's metric reads the
 * JSON it already has in hand instead of this table.
 */
export const recordMetrics = sqliteTable(
  "record_metrics",
  {
    metricKey: integer("metric_key").notNull(),
    value: real("value").notNull(),
    /** The record's client id: ties in value are broken by it (the search order). */
    recordId: text("record_id").notNull(),
    /** The record's row key, by which a search joins back to `records`. */
    recordRid: integer("record_rid").notNull(),
  },
  (t) => [primaryKey({ columns: [t.metricKey, t.value, t.recordId] })],
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
    /** Masked copies of input and output (redaction in shadow mode, src/redaction; migration 0022). */
    redactedInput: text("redacted_input"),
    redactedOutput: text("redacted_output"),
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
 * `records_project_on_shard`). During a move (src/moves) the source is `exporting` (writable,
 * every change logged in `shard_project_changes`), then `frozen` (readable, not writable), then
 * `gone` (neither, while its copy is deleted); the target is `importing` until it is `active`.
 * A worker whose routing cache is stale finds out from here, on the shard itself, and re-routes.
 */
/**
 * A project's partitions on this database (docs/partitions.md): its root count, kept by the
 * triggers `records_partition_roots_*` in the same statement as the records (the catalog is never
 * written per record). Rows are made by the head of every write batch (INSERT OR IGNORE), so a
 * partition the catalog opened is known here by the first write into it.
 */
export const shardPartitions = sqliteTable(
  "shard_partitions",
  {
    projectId: text("project_id").notNull(),
    seq: integer("seq").notNull(),
    partitionId: text("partition_id").notNull(),
    roots: integer("roots").notNull().default(0),
    /**
     * The cut-off (µs) below which the whole partition was found, once it is to be erased as a
     * unit (src/retention/erase-expired-partitions.ts); null: kept. Set here before the catalog
     * drops the partition, so the erasure is resumed from the shard whatever step was cut short.
     */
    erasingBefore: integer("erasing_before"),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.seq] })],
);

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
 * (src/moves). `version` grows with every change of the id, so the move forgets an entry
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

/** The seven annotation types of Galileo's templates (contract section 8). */
export const ANNOTATION_TYPES = ["like_dislike", "star", "score", "tags", "choice", "tree_choice", "text"] as const;
export type AnnotationType = (typeof ANNOTATION_TYPES)[number];

/**
 * A project's annotation templates (docs/annotations.md). Kept on the project's shard, beside
 * the records and ratings, so that a rating is validated and written, a template's usage counted
 * and a search filtered by annotation in one round trip to one database; a move carries them.
 * `constraints` is the template's constraints object as JSON (its `annotation_type` included);
 * only `name` and `criteria` ever change. A template being deleted gets `deleted_at` at once
 * (it disappears from every answer) and its ratings are removed in bounded chunks before the
 * row goes (src/annotations/template-deletion.ts).
 */
export const annotationTemplates = sqliteTable(
  "annotation_templates",
  {
    id: text("id").primaryKey(),
    organizationId: text("organization_id").notNull(),
    projectId: text("project_id").notNull(),
    name: text("name").notNull(),
    annotationType: text("annotation_type", { enum: ANNOTATION_TYPES }).notNull(),
    constraints: text("constraints").notNull(),
    includeExplanation: integer("include_explanation").notNull().default(0),
    criteria: text("criteria"),
    position: integer("position").notNull(),
    createdBy: text("created_by"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
    deletedAt: integer("deleted_at"),
  },
  (t) => [
    // Names are unique among a project's live templates (a duplicate is a 409).
    uniqueIndex("annotation_templates_project_name").on(t.projectId, t.name).where(sql`deleted_at IS NULL`),
    // The project's templates in position order (lists, columns, moves); deleted ones to purge.
    index("annotation_templates_project_position").on(t.projectId, t.position),
    // Templates whose deletion is still removing ratings (the maintenance finishes them).
    index("annotation_templates_deleted").on(t.deletedAt).where(sql`deleted_at IS NOT NULL`),
  ],
);

/**
 * One rating per (record, template, annotator): a WITHOUT ROWID table keyed by
 * (record_rid, template_id, annotator_id) (the migration says so), so a record's ratings are one
 * range of the key and go with the record by ON DELETE CASCADE in the very statement that deletes
 * it (every deletion path, in its own bounded chunks). `value` is the rating's value as JSON;
 * `num_value` its number where it has one (like 1 / dislike 0, stars, score), which filters and
 * sorts read from the index. The record's family key, id and created_at are repeated, like the
 * metadata rows, so that an annotation filter walks the template's ratings in page order
 * (annotation_ratings_template_order); a trigger keeps `record_created_at` equal to the record's.
 */
export const annotationRatings = sqliteTable(
  "annotation_ratings",
  {
    recordRid: recordRid(),
    templateId: text("template_id").notNull(),
    annotatorId: text("annotator_id").notNull(),
    projectId: text("project_id").notNull(),
    recordId: text("record_id").notNull(),
    familyKey: integer("family_key").notNull(),
    recordCreatedAt: integer("record_created_at").notNull(),
    value: text("value").notNull(),
    numValue: real("num_value"),
    explanation: text("explanation"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.recordRid, t.templateId, t.annotatorId] }),
    // A template's ratings within a run's family in native order (filters drive the page by it;
    // num_value makes the number tests covered); also the chunks of a template's deletion.
    index("annotation_ratings_template_order").on(t.templateId, t.familyKey, t.recordCreatedAt, t.recordId, t.numValue),
  ],
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
    /** Queued exports (src/export): records and bytes written to the file so far. */
    recordsExported: integer("records_exported").notNull().default(0),
    bytesWritten: integer("bytes_written").notNull().default(0),
    /** Redaction jobs (src/redaction/apply-job.ts): records read in the range, and records rewritten. */
    recordsScanned: integer("records_scanned").notNull().default(0),
    recordsChanged: integer("records_changed").notNull().default(0),
    /** Backfills of scorers (src/evaluations/backfill-job.ts): records scored, records no scorer applied to, errors. */
    recordsScored: integer("records_scored").notNull().default(0),
    recordsSkipped: integer("records_skipped").notNull().default(0),
    scoreErrors: integer("score_errors").notNull().default(0),
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
 * project"; src/moves). The row is the whole state of a move: its phase, the step within
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
    /** The partition (project_partitions.id) a partition move moves; null: the whole project. */
    partitionId: text("partition_id"),
  },
  (t) => [
    uniqueIndex("project_moves_open").on(t.projectId).where(sql`phase NOT IN ('completed', 'failed')`),
    index("project_moves_project").on(t.projectId, t.createdAt),
  ],
);

/**
 * The file of a queued export (`POST .../export_records/url`, src/export/export-jobs.ts), one per
 * `export_records` job: where it is in R2, how far the upload is (the multipart upload, its parts,
 * the keyset cursor and the partial part kept between queue messages), and when it stops being
 * served. `expires_at` is also set to the moment an erasure made the file unservable
 * (`erased_at`): the cron removes every file whose `expires_at` has passed.
 */
export const exportFiles = sqliteTable(
  "export_files",
  {
    jobId: text("job_id")
      .primaryKey()
      .references(() => orgJobs.id),
    organizationId: text("organization_id").notNull(),
    projectId: text("project_id").notNull(),
    objectKey: text("object_key").notNull(),
    fileName: text("file_name").notNull(),
    contentType: text("content_type").notNull(),
    /** The R2 multipart upload, once the first full part is written (small files are one put). */
    uploadId: text("upload_id"),
    /** JSON: [{partNumber, etag}] of the parts uploaded so far. */
    parts: text("parts").notNull().default("[]"),
    /** JSON: the keyset cursor after the last page written; null before the first. */
    cursor: text("cursor"),
    /** Queue messages that advanced the file: names the partial part's object (`<key>.partial-<step>`). */
    step: integer("step").notNull().default(0),
    /** Bytes written since the last full part, kept in that object between messages. */
    partialBytes: integer("partial_bytes").notNull().default(0),
    /** The oldest created_at exported: an expiry below it leaves the file alone. */
    oldestCreatedAt: integer("oldest_created_at"),
    createdAt: integer("created_at").notNull(),
    expiresAt: integer("expires_at").notNull(),
    completedAt: integer("completed_at"),
    erasedAt: integer("erased_at"),
    /** The file's objects are gone from R2. */
    removedAt: integer("removed_at"),
  },
  (t) => [
    /** An erasure's "the organization's files made before me". */
    index("export_files_organization").on(t.organizationId, t.createdAt),
    /** The cron's "files to remove". */
    index("export_files_due").on(t.expiresAt).where(sql`removed_at IS NULL`),
  ],
);

/** A project's redaction policy (src/redaction; migration 0022): the JSON the API reads and writes. */
export const projectRedaction = sqliteTable("project_redaction", {
  projectId: text("project_id")
    .primaryKey()
    .references(() => projects.id, { onDelete: "cascade" }),
  policy: text("policy").notNull(),
  updatedAt: integer("updated_at").notNull(),
});

/** The state of a `redact` org-job (src/redaction/apply-job.ts; migration 0022). */
export const redactionJobs = sqliteTable("redaction_jobs", {
  jobId: text("job_id")
    .primaryKey()
    .references(() => orgJobs.id, { onDelete: "cascade" }),
  projectId: text("project_id").notNull(),
  startMicros: integer("start_micros"),
  endMicros: integer("end_micros"),
  /** The policy as it was when the job was asked for (JSON): every chunk applies that one. */
  policy: text("policy").notNull(),
  /** `records`, then `patches` (held streaming updates), then done. */
  phase: text("phase").notNull().default("records"),
  /** The last record id (or held update's record id) done in the phase. */
  cursor: text("cursor").notNull().default(""),
  /** Chunks done: each chunk's save is a compare-and-set on it, so a redelivered message does nothing. */
  step: integer("step").notNull().default(0),
});

/** Notification channels of an organization (src/alerts; migration 0024). Credentials sealed: src/alerts/sealed-secrets.ts. */
export const notificationChannels = sqliteTable(
  "notification_channels",
  {
    id: text("id").primaryKey(),
    organizationId: text("organization_id")
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    /** `webhook` or `slack`. */
    type: text("type").notNull(),
    /** A webhook's URL; a Slack URL masked (the real one is sealed in url_sealed). */
    url: text("url").notNull(),
    urlSealed: text("url_sealed"),
    secretSealed: text("secret_sealed"),
    enabled: integer("enabled").notNull().default(1),
    disabledReason: text("disabled_reason"),
    consecutiveFailures: integer("consecutive_failures").notNull().default(0),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [index("notification_channels_organization").on(t.organizationId, t.createdAt)],
);

/** Alert rules per project and run, with their state (src/alerts; migration 0024). Minutes are minutes since the epoch. */
export const alertRules = sqliteTable(
  "alert_rules",
  {
    id: text("id").primaryKey(),
    organizationId: text("organization_id").notNull(),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    runId: text("run_id").notNull(),
    runKind: text("run_kind").notNull(),
    name: text("name").notNull(),
    metric: text("metric").notNull(),
    /** metrics/search's filter leaves, JSON. */
    filters: text("filters").notNull(),
    windowMinutes: integer("window_minutes").notNull(),
    comparison: text("comparison").notNull(),
    threshold: real("threshold").notNull(),
    warningThreshold: real("warning_threshold"),
    evaluateEveryMinutes: integer("evaluate_every_minutes").notNull(),
    noData: text("no_data").notNull(),
    renotifyMinutes: integer("renotify_minutes"),
    enabled: integer("enabled").notNull(),
    createdAt: integer("created_at").notNull(),
    createdMinute: integer("created_minute").notNull(),
    updatedAt: integer("updated_at").notNull(),
    state: text("state").notNull().default("ok"),
    stateSince: integer("state_since").notNull(),
    lastValue: real("last_value"),
    lastEvaluatedMinute: integer("last_evaluated_minute"),
    lastNotifiedMinute: integer("last_notified_minute"),
    lastError: text("last_error"),
    /** The next minute the rule is due in: the cron's index, moved forward by each evaluation's conditional transition. */
    nextDueMinute: integer("next_due_minute").notNull(),
  },
  (t) => [index("alert_rules_project").on(t.projectId, t.createdAt), index("alert_rules_due").on(t.nextDueMinute).where(sql`enabled = 1`)],
);

export const alertRuleChannels = sqliteTable(
  "alert_rule_channels",
  {
    ruleId: text("rule_id")
      .notNull()
      .references(() => alertRules.id, { onDelete: "cascade" }),
    channelId: text("channel_id")
      .notNull()
      .references(() => notificationChannels.id, { onDelete: "cascade" }),
  },
  (t) => [primaryKey({ columns: [t.ruleId, t.channelId] }), index("alert_rule_channels_channel").on(t.channelId)],
);

/** A rule's changes of state, one per evaluated minute at most. */
export const alertHistory = sqliteTable(
  "alert_history",
  {
    ruleId: text("rule_id")
      .notNull()
      .references(() => alertRules.id, { onDelete: "cascade" }),
    minute: integer("minute").notNull(),
    state: text("state").notNull(),
    previousState: text("previous_state").notNull(),
    value: real("value"),
    threshold: real("threshold"),
    windowStart: integer("window_start").notNull(),
    windowEnd: integer("window_end").notNull(),
    at: integer("at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.ruleId, t.minute] })],
);

/** Deliveries (the outbox): `id` is the webhook-id, the same on every attempt. */
export const alertDeliveries = sqliteTable(
  "alert_deliveries",
  {
    id: text("id").primaryKey(),
    channelId: text("channel_id")
      .notNull()
      .references(() => notificationChannels.id, { onDelete: "cascade" }),
    ruleId: text("rule_id"),
    minute: integer("minute"),
    type: text("type").notNull(),
    payload: text("payload").notNull(),
    createdAt: integer("created_at").notNull(),
    /** pending, delivered, failed, abandoned. */
    status: text("status").notNull().default("pending"),
    attempts: integer("attempts").notNull().default(0),
    firstAttemptAt: integer("first_attempt_at"),
    lastAttemptAt: integer("last_attempt_at"),
    queuedAt: integer("queued_at"),
  },
  (t) => [
    uniqueIndex("alert_deliveries_once").on(t.ruleId, t.minute, t.channelId).where(sql`rule_id IS NOT NULL`),
    index("alert_deliveries_unqueued").on(t.createdAt).where(sql`queued_at IS NULL`),
    index("alert_deliveries_channel").on(t.channelId),
    index("alert_deliveries_pending").on(t.lastAttemptAt).where(sql`status = 'pending'`),
    index("alert_deliveries_created").on(t.createdAt),
  ],
);

/** Every delivery attempt; the last 100 per channel are kept. */
export const alertDeliveryAttempts = sqliteTable(
  "alert_delivery_attempts",
  {
    seq: integer("seq").primaryKey({ autoIncrement: true }),
    channelId: text("channel_id")
      .notNull()
      .references(() => notificationChannels.id, { onDelete: "cascade" }),
    webhookId: text("webhook_id").notNull(),
    type: text("type").notNull(),
    at: integer("at").notNull(),
    status: integer("status"),
    latencyMs: integer("latency_ms").notNull(),
    error: text("error"),
  },
  (t) => [index("alert_delivery_attempts_channel").on(t.channelId, t.seq)],
);
