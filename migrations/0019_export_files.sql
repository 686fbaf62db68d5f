-- Queued exports to R2 (issue 22; docs/export.md "Queued export to R2"): the file of each
-- export_records job (where its upload stands between queue messages, when it stops being served),
-- and the job's progress in records and bytes.
CREATE TABLE `export_files` (
	`job_id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`project_id` text NOT NULL,
	`object_key` text NOT NULL,
	`file_name` text NOT NULL,
	`content_type` text NOT NULL,
	`upload_id` text,
	`parts` text DEFAULT '[]' NOT NULL,
	`cursor` text,
	`step` integer DEFAULT 0 NOT NULL,
	`partial_bytes` integer DEFAULT 0 NOT NULL,
	`oldest_created_at` integer,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`completed_at` integer,
	`erased_at` integer,
	`removed_at` integer,
	FOREIGN KEY (`job_id`) REFERENCES `org_jobs`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `export_files_organization` ON `export_files` (`organization_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `export_files_due` ON `export_files` (`expires_at`) WHERE removed_at IS NULL;--> statement-breakpoint
ALTER TABLE `org_jobs` ADD `records_exported` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `org_jobs` ADD `bytes_written` integer DEFAULT 0 NOT NULL;