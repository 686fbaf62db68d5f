-- The schema of a data shard (docs/sharding.md): the record tables of the catalog (migrations/,
-- src/db/schema.ts), beside a copy of the `runs` of the projects the shard holds, and without the
-- catalog's foreign keys to organizations and projects, which live in the catalog database only.
-- test/shard-schema.test.ts checks that a shard and the catalog have the same record tables,
-- indexes and triggers: a migration that changes a record table is written in both folders.
--> statement-breakpoint
CREATE TABLE `runs` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`project_id` text NOT NULL,
	`kind` text NOT NULL,
	`name` text NOT NULL,
	`task_type` text,
	`created_by` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE "records" (
	`rid` integer PRIMARY KEY NOT NULL,
	`id` text NOT NULL,
	`organization_id` text NOT NULL,
	`project_id` text NOT NULL,
	`run_id` text NOT NULL,
	`record_type` text NOT NULL,
	`type` text NOT NULL,
	`name` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer,
	`input` text,
	`input_is_json` integer DEFAULT 0 NOT NULL,
	`output` text,
	`output_is_json` integer DEFAULT 0 NOT NULL,
	`redacted_input` text,
	`redacted_output` text,
	`status_code` integer,
	`external_id` text,
	`dataset_input` text,
	`dataset_output` text,
	`dataset_metadata` text,
	`session_id` text,
	`trace_id` text,
	`parent_id` text,
	`has_children` integer DEFAULT 0 NOT NULL,
	`is_complete` integer DEFAULT 1 NOT NULL,
	`step_number` integer,
	`error_message` text,
	`progress_message` text,
	`user_metadata` text DEFAULT '{}' NOT NULL,
	`tags` text DEFAULT '[]' NOT NULL,
	`metrics` text DEFAULT '{}' NOT NULL,
	`metric_info` text,
	`feedback_rating_info` text,
	`model` text,
	`temperature` real,
	`finish_reason` text,
	`tools` text,
	`events` text,
	`tool_call_id` text,
	`agent_type` text,
	`control_id` integer,
	`agent_name` text,
	`check_stage` text,
	`applies_to` text,
	`evaluator_name` text,
	`selector_path` text,
	`previous_session_id` text,
	FOREIGN KEY (`run_id`) REFERENCES `runs`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE "record_metadata" (
	`record_rid` integer NOT NULL,
	`record_id` text NOT NULL,
	`key` text NOT NULL,
	`value` text NOT NULL,
	`organization_id` text NOT NULL,
	`run_id` text NOT NULL,
	`record_type` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`record_rid`, `key`),
	FOREIGN KEY (`record_rid`) REFERENCES "records"(`rid`) ON UPDATE no action ON DELETE cascade
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TABLE "record_tags" (
	`record_rid` integer NOT NULL,
	`record_id` text NOT NULL,
	`tag` text NOT NULL,
	`run_id` text NOT NULL,
	`record_type` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`record_rid`, `tag`),
	FOREIGN KEY (`record_rid`) REFERENCES "records"(`rid`) ON UPDATE no action ON DELETE cascade
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TABLE "record_metrics" (
	`record_rid` integer NOT NULL,
	`record_id` text NOT NULL,
	`name` text NOT NULL,
	`value` real NOT NULL,
	`run_id` text NOT NULL,
	`record_type` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`record_rid`, `name`),
	FOREIGN KEY (`record_rid`) REFERENCES "records"(`rid`) ON UPDATE no action ON DELETE cascade
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TABLE `run_columns` (
	`run_id` text NOT NULL,
	`record_type` text NOT NULL,
	`column_id` text NOT NULL,
	PRIMARY KEY(`run_id`, `record_type`, `column_id`),
	FOREIGN KEY (`run_id`) REFERENCES `runs`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `record_patches` (
	`record_id` text NOT NULL,
	`run_id` text NOT NULL,
	`organization_id` text NOT NULL,
	`project_id` text NOT NULL,
	`record_type` text NOT NULL,
	`input` text,
	`input_is_json` integer,
	`output` text,
	`output_is_json` integer,
	`status_code` integer,
	`tags` text,
	`is_complete` integer,
	`duration_ns` real,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`record_id`, `run_id`),
	FOREIGN KEY (`run_id`) REFERENCES `runs`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `record_tombstones` (
	`project_id` text NOT NULL,
	`record_id` text NOT NULL,
	`deleted_at` integer NOT NULL,
	PRIMARY KEY(`project_id`, `record_id`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TABLE `shard_projects` (
	`project_id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`state` text NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `shard_jobs` (
	`job_id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`status` text NOT NULL,
	`sessions_deleted` integer DEFAULT 0 NOT NULL,
	`traces_deleted` integer DEFAULT 0 NOT NULL,
	`spans_deleted` integer DEFAULT 0 NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `shard_project_changes` (
	`project_id` text NOT NULL,
	`record_id` text NOT NULL,
	PRIMARY KEY(`project_id`, `record_id`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE UNIQUE INDEX `runs_project_kind_name` ON `runs` (`project_id`,`kind`,`name`);
--> statement-breakpoint
CREATE INDEX `records_parent` ON `records` (`parent_id`);
--> statement-breakpoint
CREATE UNIQUE INDEX `records_project_record_id` ON `records` (`project_id`,`id`);
--> statement-breakpoint
CREATE INDEX `records_run_external_id` ON `records` (`run_id`,`record_type`,`external_id`) WHERE external_id IS NOT NULL;
--> statement-breakpoint
CREATE INDEX `records_run_id_order` ON `records` (`run_id`,`record_type`,`id`);
--> statement-breakpoint
CREATE INDEX `records_run_model_order` ON `records` (`run_id`,`record_type`,`model`,`created_at`,`id`) WHERE model IS NOT NULL;
--> statement-breakpoint
CREATE INDEX `records_run_order` ON `records` (`run_id`,`record_type`,`created_at`,`id`);
--> statement-breakpoint
CREATE INDEX `records_run_type_order` ON `records` (`run_id`,`record_type`,`type`,`created_at`,`id`);
--> statement-breakpoint
CREATE INDEX `records_session` ON `records` (`session_id`,`record_type`);
--> statement-breakpoint
CREATE INDEX `records_trace` ON `records` (`trace_id`,`record_type`);
--> statement-breakpoint
CREATE INDEX `record_metadata_org_key_value` ON `record_metadata` (`organization_id`,`key`,`value`,`record_type`);
--> statement-breakpoint
CREATE INDEX `record_metadata_run_key_value_order` ON `record_metadata` (`run_id`,`record_type`,`key`,`value`,`created_at`,`record_id`);
--> statement-breakpoint
CREATE INDEX `record_tags_run_tag_order` ON `record_tags` (`run_id`,`record_type`,`tag`,`created_at`,`record_id`);
--> statement-breakpoint
CREATE INDEX `record_metrics_run_name_value` ON `record_metrics` (`run_id`,`record_type`,`name`,`value`,`record_id`);
--> statement-breakpoint
CREATE INDEX `record_patches_created` ON `record_patches` (`created_at`);
--> statement-breakpoint
CREATE INDEX `record_patches_run` ON `record_patches` (`run_id`);
--> statement-breakpoint
CREATE INDEX `record_tombstones_deleted` ON `record_tombstones` (`deleted_at`);
--> statement-breakpoint
CREATE TRIGGER `records_ownership_guard`
BEFORE UPDATE OF `organization_id`, `project_id`, `run_id`, `record_type` ON `records`
WHEN OLD.`organization_id` IS NOT NEW.`organization_id`
  OR OLD.`project_id` IS NOT NEW.`project_id`
  OR OLD.`run_id` IS NOT NEW.`run_id`
  OR OLD.`record_type` IS NOT NEW.`record_type`
BEGIN
  SELECT RAISE(ABORT, 'record_ownership_conflict');
END;
--> statement-breakpoint
CREATE TRIGGER `run_columns_metric_name_limit`
AFTER INSERT ON `run_columns`
WHEN NEW.`column_id` >= 'metrics/' AND NEW.`column_id` < 'metrics0'
  AND (SELECT count(DISTINCT `column_id`) FROM `run_columns`
       WHERE `run_id` = NEW.`run_id` AND `column_id` >= 'metrics/' AND `column_id` < 'metrics0') > 1000
BEGIN
  SELECT RAISE(ABORT, 'run_metric_name_limit');
END;
--> statement-breakpoint
CREATE TRIGGER `records_project_on_shard_insert`
BEFORE INSERT ON `records`
WHEN NOT EXISTS (SELECT 1 FROM `shard_projects` WHERE `project_id` = NEW.`project_id` AND `state` IN ('active', 'exporting', 'importing'))
BEGIN
  SELECT RAISE(ABORT, 'project_not_on_shard');
END;
--> statement-breakpoint
CREATE TRIGGER `records_project_on_shard_update`
BEFORE UPDATE OF `id`, `organization_id`, `project_id`, `run_id`, `record_type`, `type`, `name`, `created_at`, `updated_at`,
  `input`, `input_is_json`, `output`, `output_is_json`, `redacted_input`, `redacted_output`, `status_code`, `external_id`,
  `dataset_input`, `dataset_output`, `dataset_metadata`, `session_id`, `trace_id`, `parent_id`, `is_complete`, `step_number`,
  `error_message`, `progress_message`, `user_metadata`, `tags`, `metrics`, `metric_info`, `feedback_rating_info`, `model`,
  `temperature`, `finish_reason`, `tools`, `events`, `tool_call_id`, `agent_type`, `control_id`, `agent_name`, `check_stage`,
  `applies_to`, `evaluator_name`, `selector_path`, `previous_session_id` ON `records`
WHEN NOT EXISTS (SELECT 1 FROM `shard_projects` WHERE `project_id` = NEW.`project_id` AND `state` IN ('active', 'exporting', 'importing'))
BEGIN
  SELECT RAISE(ABORT, 'project_not_on_shard');
END;
--> statement-breakpoint
CREATE TRIGGER `records_changes_while_exporting_insert`
AFTER INSERT ON `records`
WHEN (SELECT `state` FROM `shard_projects` WHERE `project_id` = NEW.`project_id`) = 'exporting'
BEGIN
  INSERT OR IGNORE INTO `shard_project_changes` (`project_id`, `record_id`) VALUES (NEW.`project_id`, NEW.`id`);
END;
--> statement-breakpoint
CREATE TRIGGER `records_changes_while_exporting_update`
AFTER UPDATE ON `records`
WHEN (SELECT `state` FROM `shard_projects` WHERE `project_id` = NEW.`project_id`) = 'exporting'
BEGIN
  INSERT OR IGNORE INTO `shard_project_changes` (`project_id`, `record_id`) VALUES (NEW.`project_id`, NEW.`id`);
END;
--> statement-breakpoint
CREATE TRIGGER `records_changes_while_exporting_delete`
AFTER DELETE ON `records`
WHEN (SELECT `state` FROM `shard_projects` WHERE `project_id` = OLD.`project_id`) = 'exporting'
BEGIN
  INSERT OR IGNORE INTO `shard_project_changes` (`project_id`, `record_id`) VALUES (OLD.`project_id`, OLD.`id`);
END;
