-- Record ids become unique per project instead of across the whole database (issue 9): one
-- tenant can no longer learn whether an id exists in another tenant's data, nor take an id
-- another tenant will send. Records get an integer row key (`rid`), which the side tables now
-- reference; the side tables become WITHOUT ROWID tables keyed by (record_rid, ...), so every
-- secondary index of theirs carries the rid a search joins back with. Deleted records leave
-- tombstones (record_tombstones) so that late arrivals cannot bring them back.
--
-- The tables are rebuilt and copied in place (rid = the old rowid). D1 runs a migration file
-- as one transaction, each statement within D1's 30 s limit: a database of more than a few
-- hundred thousand records must be migrated by moving its projects to a data shard instead
-- (docs/sharding.md).
PRAGMA defer_foreign_keys = on;--> statement-breakpoint
CREATE TABLE `__new_records` (
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
	FOREIGN KEY (`organization_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`run_id`) REFERENCES `runs`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
INSERT INTO `__new_records`("rid", "id", "organization_id", "project_id", "run_id", "record_type", "type", "name", "created_at", "updated_at", "input", "input_is_json", "output", "output_is_json", "redacted_input", "redacted_output", "status_code", "external_id", "dataset_input", "dataset_output", "dataset_metadata", "session_id", "trace_id", "parent_id", "has_children", "is_complete", "step_number", "error_message", "progress_message", "user_metadata", "tags", "metrics", "metric_info", "feedback_rating_info", "model", "temperature", "finish_reason", "tools", "events", "tool_call_id", "agent_type", "control_id", "agent_name", "check_stage", "applies_to", "evaluator_name", "selector_path", "previous_session_id") SELECT rowid, "id", "organization_id", "project_id", "run_id", "record_type", "type", "name", "created_at", "updated_at", "input", "input_is_json", "output", "output_is_json", "redacted_input", "redacted_output", "status_code", "external_id", "dataset_input", "dataset_output", "dataset_metadata", "session_id", "trace_id", "parent_id", "has_children", "is_complete", "step_number", "error_message", "progress_message", "user_metadata", "tags", "metrics", "metric_info", "feedback_rating_info", "model", "temperature", "finish_reason", "tools", "events", "tool_call_id", "agent_type", "control_id", "agent_name", "check_stage", "applies_to", "evaluator_name", "selector_path", "previous_session_id" FROM `records`;
--> statement-breakpoint
CREATE TABLE `__new_record_metadata` (
	`record_rid` integer NOT NULL,
	`record_id` text NOT NULL,
	`key` text NOT NULL,
	`value` text NOT NULL,
	`organization_id` text NOT NULL,
	`run_id` text NOT NULL,
	`record_type` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`record_rid`, `key`),
	FOREIGN KEY (`record_rid`) REFERENCES `__new_records`(`rid`) ON UPDATE no action ON DELETE cascade
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `__new_record_metadata`("record_rid", "record_id", "key", "value", "organization_id", "run_id", "record_type", "created_at") SELECT r.rowid, s."record_id", s."key", s."value", s."organization_id", s."run_id", s."record_type", s."created_at" FROM `record_metadata` AS s JOIN `records` AS r ON r.id = s.record_id;
--> statement-breakpoint
CREATE TABLE `__new_record_tags` (
	`record_rid` integer NOT NULL,
	`record_id` text NOT NULL,
	`tag` text NOT NULL,
	`run_id` text NOT NULL,
	`record_type` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`record_rid`, `tag`),
	FOREIGN KEY (`record_rid`) REFERENCES `__new_records`(`rid`) ON UPDATE no action ON DELETE cascade
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `__new_record_tags`("record_rid", "record_id", "tag", "run_id", "record_type", "created_at") SELECT r.rowid, s."record_id", s."tag", s."run_id", s."record_type", s."created_at" FROM `record_tags` AS s JOIN `records` AS r ON r.id = s.record_id;
--> statement-breakpoint
CREATE TABLE `__new_record_metrics` (
	`record_rid` integer NOT NULL,
	`record_id` text NOT NULL,
	`name` text NOT NULL,
	`value` real NOT NULL,
	`run_id` text NOT NULL,
	`record_type` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`record_rid`, `name`),
	FOREIGN KEY (`record_rid`) REFERENCES `__new_records`(`rid`) ON UPDATE no action ON DELETE cascade
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `__new_record_metrics`("record_rid", "record_id", "name", "value", "run_id", "record_type", "created_at") SELECT r.rowid, s."record_id", s."name", s."value", s."run_id", s."record_type", s."created_at" FROM `record_metrics` AS s JOIN `records` AS r ON r.id = s.record_id;
--> statement-breakpoint
DROP TABLE `record_metadata`;
--> statement-breakpoint
DROP TABLE `record_tags`;
--> statement-breakpoint
DROP TABLE `record_metrics`;
--> statement-breakpoint
DROP TABLE `records`;
--> statement-breakpoint
ALTER TABLE `__new_records` RENAME TO `records`;
--> statement-breakpoint
ALTER TABLE `__new_record_metadata` RENAME TO `record_metadata`;
--> statement-breakpoint
ALTER TABLE `__new_record_tags` RENAME TO `record_tags`;
--> statement-breakpoint
ALTER TABLE `__new_record_metrics` RENAME TO `record_metrics`;
--> statement-breakpoint
CREATE UNIQUE INDEX `records_project_record_id` ON `records` (`project_id`,`id`);
--> statement-breakpoint
CREATE INDEX `records_run_order` ON `records` (`run_id`,`record_type`,`created_at`,`id`);
--> statement-breakpoint
CREATE INDEX `records_run_id_order` ON `records` (`run_id`,`record_type`,`id`);
--> statement-breakpoint
CREATE INDEX `records_run_type_order` ON `records` (`run_id`,`record_type`,`type`,`created_at`,`id`);
--> statement-breakpoint
CREATE INDEX `records_run_model_order` ON `records` (`run_id`,`record_type`,`model`,`created_at`,`id`) WHERE model IS NOT NULL;
--> statement-breakpoint
CREATE INDEX `records_run_external_id` ON `records` (`run_id`,`record_type`,`external_id`) WHERE external_id IS NOT NULL;
--> statement-breakpoint
CREATE INDEX `records_trace` ON `records` (`trace_id`,`record_type`);
--> statement-breakpoint
CREATE INDEX `records_session` ON `records` (`session_id`,`record_type`);
--> statement-breakpoint
CREATE INDEX `records_parent` ON `records` (`parent_id`);
--> statement-breakpoint
CREATE INDEX `record_metadata_run_key_value_order` ON `record_metadata` (`run_id`,`record_type`,`key`,`value`,`created_at`,`record_id`);
--> statement-breakpoint
CREATE INDEX `record_metadata_org_key_value` ON `record_metadata` (`organization_id`,`key`,`value`,`record_type`);
--> statement-breakpoint
CREATE INDEX `record_tags_run_tag_order` ON `record_tags` (`run_id`,`record_type`,`tag`,`created_at`,`record_id`);
--> statement-breakpoint
CREATE INDEX `record_metrics_run_name_value` ON `record_metrics` (`run_id`,`record_type`,`name`,`value`,`record_id`);
--> statement-breakpoint
-- A record id belongs for ever to the run and the family (session, trace or span) that first
-- wrote it in its project: an upsert that would move it aborts the whole batch (a 409).
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
-- A run holds at most 1000 distinct metric names (RECORD_LIMITS.maxMetricNamesPerRun): each is
-- an available column for ever. A batch that would add the 1001st is refused whole (a 422).
CREATE TRIGGER `run_columns_metric_name_limit`
AFTER INSERT ON `run_columns`
WHEN NEW.`column_id` >= 'metrics/' AND NEW.`column_id` < 'metrics0'
  AND (SELECT count(DISTINCT `column_id`) FROM `run_columns`
       WHERE `run_id` = NEW.`run_id` AND `column_id` >= 'metrics/' AND `column_id` < 'metrics0') > 1000
BEGIN
  SELECT RAISE(ABORT, 'run_metric_name_limit');
END;
--> statement-breakpoint
CREATE TABLE `record_tombstones` (
	`project_id` text NOT NULL,
	`record_id` text NOT NULL,
	`deleted_at` integer NOT NULL,
	PRIMARY KEY(`project_id`, `record_id`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE INDEX `record_tombstones_deleted` ON `record_tombstones` (`deleted_at`);
