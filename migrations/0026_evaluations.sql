-- Online evaluations (issue 34; contract section 15; docs/evaluations.md).
-- 1. Judge models: an organization's OpenAI-compatible endpoints (`custom`) and OpenAI itself
--    (`openai`). `key_sealed` is the API key, AES-GCM sealed with a key derived from the
--    EVALUATION_SECRET (or TOKEN_SECRET) Worker secret: never returned, never logged.
CREATE TABLE `judge_integrations` (
	`organization_id` text NOT NULL REFERENCES `organizations`(`id`) ON DELETE cascade,
	`name` text NOT NULL,
	`endpoint` text NOT NULL,
	`api_key_header` text NOT NULL,
	`key_sealed` text NOT NULL,
	`models` text NOT NULL,
	`default_model` text,
	`max_concurrency` integer NOT NULL,
	`requests_per_minute` integer NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`organization_id`, `name`)
);--> statement-breakpoint
-- 2. Scorers of an organization, unique by name, and their versions (a preset with its params,
--    or an LLM judge's prompt). `version_id` is the version new records are scored with.
CREATE TABLE `scorers` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL REFERENCES `organizations`(`id`) ON DELETE cascade,
	`name` text NOT NULL,
	`scorer_type` text NOT NULL,
	`description` text,
	`tags` text NOT NULL,
	`output_type` text NOT NULL,
	`scoreable_node_types` text NOT NULL,
	`daily_budget` integer NOT NULL,
	`version_id` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);--> statement-breakpoint
CREATE UNIQUE INDEX `scorers_organization_name` ON `scorers` (`organization_id`,`name`);--> statement-breakpoint
CREATE TABLE `scorer_versions` (
	`id` text PRIMARY KEY NOT NULL,
	`scorer_id` text NOT NULL REFERENCES `scorers`(`id`) ON DELETE cascade,
	`version` integer NOT NULL,
	`kind` text NOT NULL,
	`definition` text NOT NULL,
	`created_at` integer NOT NULL
);--> statement-breakpoint
CREATE UNIQUE INDEX `scorer_versions_scorer_version` ON `scorer_versions` (`scorer_id`,`version`);--> statement-breakpoint
-- 3. Where scorers run: a run's metric_settings (its scorers with their filters and node types,
--    and its segment filters), as the PATCH gave them.
CREATE TABLE `evaluation_settings` (
	`run_id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`project_id` text NOT NULL REFERENCES `projects`(`id`) ON DELETE cascade,
	`settings` text NOT NULL,
	`updated_at` integer NOT NULL
);--> statement-breakpoint
-- 4. Judge calls per scorer and UTC day (the daily budget), and per integration and minute (the
--    requests-per-minute pacing): conditional increments, so two isolates never overspend.
CREATE TABLE `scorer_daily_calls` (
	`scorer_id` text NOT NULL,
	`day` integer NOT NULL,
	`calls` integer NOT NULL,
	PRIMARY KEY(`scorer_id`, `day`)
) WITHOUT ROWID;--> statement-breakpoint
CREATE TABLE `judge_minute_calls` (
	`organization_id` text NOT NULL,
	`integration` text NOT NULL,
	`minute` integer NOT NULL,
	`calls` integer NOT NULL,
	PRIMARY KEY(`organization_id`, `integration`, `minute`)
) WITHOUT ROWID;--> statement-breakpoint
-- One scorer's result on one record (contract section 15), on the database that holds the
-- record: the row is what makes a result exactly-once under redelivery (the write is an upsert
-- that never replaces a final result of the same scorer version) and what `GET /v2/scorers/{id}`
-- counts by status. The record's `metrics.<name>` and `metric_info.<name>` are copied from it
-- in the same batch. `reason` says why a record is left pending or in error.
CREATE TABLE `evaluation_results` (
	`project_id` text NOT NULL,
	`record_id` text NOT NULL,
	`scorer_id` text NOT NULL,
	`version_id` text NOT NULL,
	`run_id` text NOT NULL,
	`status` text NOT NULL,
	`value` real,
	`info` text NOT NULL,
	`reason` text,
	`attempts` integer DEFAULT 0 NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`project_id`, `record_id`, `scorer_id`)
) WITHOUT ROWID;--> statement-breakpoint
-- GET on a scorer: its counts by status and its last error, without reading its results.
CREATE INDEX `evaluation_results_scorer_status` ON `evaluation_results` (`scorer_id`,`status`,`updated_at`);
--> statement-breakpoint
-- 5. Backfills (`job_name: "score"`): the org-job's exact progress, and the job's own state (the
--    run, the range by created_at, the scorers, and how far it got: family, created_at, id).
ALTER TABLE `org_jobs` ADD `records_scored` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `org_jobs` ADD `records_skipped` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `org_jobs` ADD `score_errors` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE TABLE `evaluation_backfills` (
	`job_id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`project_id` text NOT NULL,
	`run_id` text NOT NULL,
	`start_time` integer NOT NULL,
	`end_time` integer NOT NULL,
	`scorer_ids` text,
	`family` integer DEFAULT 0 NOT NULL,
	`after_created_at` integer,
	`after_id` text,
	`step` integer DEFAULT 0 NOT NULL
);
