-- Redaction at ingest (issue 33; contract section 14; docs/redaction.md).
-- 1. A project's redaction policy, as the JSON the API reads and writes (absent: the default,
--    disabled). Read by every ingest request through a per-isolate cache of a few seconds.
-- 2. Held streaming updates keep the masked copies of their input and output (shadow mode), so
--    an update that waits for its record still brings the record's redacted view along.
CREATE TABLE `project_redaction` (
	`project_id` text PRIMARY KEY NOT NULL REFERENCES `projects`(`id`) ON DELETE cascade,
	`policy` text NOT NULL,
	`updated_at` integer NOT NULL
);--> statement-breakpoint
ALTER TABLE `record_patches` ADD `redacted_input` text;--> statement-breakpoint
ALTER TABLE `record_patches` ADD `redacted_output` text;
