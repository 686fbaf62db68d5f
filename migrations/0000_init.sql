CREATE TABLE `api_keys` (
	`id` text PRIMARY KEY NOT NULL,
	`user_id` text NOT NULL,
	`key_hash` text NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `api_keys_hash` ON `api_keys` (`key_hash`);--> statement-breakpoint
CREATE TABLE `org_jobs` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`job_name` text NOT NULL,
	`status` text NOT NULL,
	`request_data` text NOT NULL,
	`error_message` text,
	`created_by` text NOT NULL,
	`sessions_deleted` integer DEFAULT 0 NOT NULL,
	`traces_deleted` integer DEFAULT 0 NOT NULL,
	`spans_deleted` integer DEFAULT 0 NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`organization_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `org_jobs_organization` ON `org_jobs` (`organization_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `organizations` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `projects` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`name` text NOT NULL,
	`type` text NOT NULL,
	`created_by` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`organization_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `projects_organization_name` ON `projects` (`organization_id`,`name`);--> statement-breakpoint
CREATE TABLE `record_metadata` (
	`record_id` text NOT NULL,
	`key` text NOT NULL,
	`value` text NOT NULL,
	`organization_id` text NOT NULL,
	`run_id` text NOT NULL,
	`record_type` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`record_id`, `key`),
	FOREIGN KEY (`record_id`) REFERENCES `records`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `record_metadata_run_key_value_order` ON `record_metadata` (`run_id`,`record_type`,`key`,`value`,`created_at`,`record_id`);--> statement-breakpoint
CREATE INDEX `record_metadata_org_key_value` ON `record_metadata` (`organization_id`,`key`,`value`,`record_type`);--> statement-breakpoint
CREATE TABLE `record_metrics` (
	`record_id` text NOT NULL,
	`name` text NOT NULL,
	`value` real NOT NULL,
	`run_id` text NOT NULL,
	`record_type` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`record_id`, `name`),
	FOREIGN KEY (`record_id`) REFERENCES `records`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `record_metrics_run_name_value` ON `record_metrics` (`run_id`,`record_type`,`name`,`value`,`record_id`);--> statement-breakpoint
CREATE TABLE `record_tags` (
	`record_id` text NOT NULL,
	`tag` text NOT NULL,
	`run_id` text NOT NULL,
	`record_type` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`record_id`, `tag`),
	FOREIGN KEY (`record_id`) REFERENCES `records`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `record_tags_run_tag_order` ON `record_tags` (`run_id`,`record_type`,`tag`,`created_at`,`record_id`);--> statement-breakpoint
CREATE TABLE `records` (
	`id` text PRIMARY KEY NOT NULL,
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
CREATE INDEX `records_run_order` ON `records` (`run_id`,`record_type`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `records_run_type_order` ON `records` (`run_id`,`record_type`,`type`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `records_run_model_order` ON `records` (`run_id`,`record_type`,`model`,`created_at`,`id`) WHERE model IS NOT NULL;--> statement-breakpoint
CREATE INDEX `records_run_external_id` ON `records` (`run_id`,`record_type`,`external_id`) WHERE external_id IS NOT NULL;--> statement-breakpoint
CREATE INDEX `records_trace` ON `records` (`trace_id`,`record_type`);--> statement-breakpoint
CREATE INDEX `records_session` ON `records` (`session_id`,`record_type`);--> statement-breakpoint
CREATE INDEX `records_parent` ON `records` (`parent_id`);--> statement-breakpoint
CREATE TABLE `run_columns` (
	`run_id` text NOT NULL,
	`record_type` text NOT NULL,
	`column_id` text NOT NULL,
	PRIMARY KEY(`run_id`, `record_type`, `column_id`),
	FOREIGN KEY (`run_id`) REFERENCES `runs`(`id`) ON UPDATE no action ON DELETE no action
);
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
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`organization_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `runs_project_kind_name` ON `runs` (`project_id`,`kind`,`name`);--> statement-breakpoint
CREATE TABLE `users` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`email` text NOT NULL,
	`role` text NOT NULL,
	`password_hash` text NOT NULL,
	`password_salt` text NOT NULL,
	`password_iterations` integer NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`organization_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `users_email` ON `users` (`email`);--> statement-breakpoint
CREATE INDEX `users_organization` ON `users` (`organization_id`);