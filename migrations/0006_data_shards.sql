CREATE TABLE `org_job_shards` (
	`job_id` text NOT NULL,
	`shard` text NOT NULL,
	`status` text NOT NULL,
	`sessions_deleted` integer DEFAULT 0 NOT NULL,
	`traces_deleted` integer DEFAULT 0 NOT NULL,
	`spans_deleted` integer DEFAULT 0 NOT NULL,
	`error_message` text,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`job_id`, `shard`),
	FOREIGN KEY (`job_id`) REFERENCES `org_jobs`(`id`) ON UPDATE no action ON DELETE no action
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
CREATE TABLE `shard_projects` (
	`project_id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`state` text NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `shards` (
	`name` text PRIMARY KEY NOT NULL,
	`size_bytes` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE `projects` ADD `shard` text;--> statement-breakpoint
CREATE INDEX `projects_shard` ON `projects` (`shard`);
--> statement-breakpoint
-- The catalog can serve as a data shard (a one-database deployment, and every project created
-- before sharding, whose `shard` is null): it holds the shard-side tables too, and its existing
-- projects and jobs are registered on it.
INSERT INTO `shard_projects` (`project_id`, `organization_id`, `state`, `updated_at`)
SELECT `id`, `organization_id`, 'active', `updated_at` FROM `projects`;
--> statement-breakpoint
INSERT INTO `shard_jobs` (`job_id`, `organization_id`, `status`, `sessions_deleted`, `traces_deleted`, `spans_deleted`, `updated_at`)
SELECT `id`, `organization_id`, `status`, `sessions_deleted`, `traces_deleted`, `spans_deleted`, `updated_at` FROM `org_jobs`;
--> statement-breakpoint
INSERT INTO `org_job_shards` (`job_id`, `shard`, `status`, `sessions_deleted`, `traces_deleted`, `spans_deleted`, `error_message`, `updated_at`)
SELECT `id`, 'DB', `status`, `sessions_deleted`, `traces_deleted`, `spans_deleted`, `error_message`, `updated_at` FROM `org_jobs`;
--> statement-breakpoint
-- Records are written only for a project this database holds for writing. Updates of
-- has_children alone (marking or clearing a parent, which deletion does) are not writes of the
-- record's data and pass.
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
