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
--> statement-breakpoint
-- 3. `POST .../redaction/apply` jobs (org-job `redact`): progress on the job row, the job's own
--    state (the policy it applies, the range, where it stands) beside it.
ALTER TABLE `org_jobs` ADD `records_scanned` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `org_jobs` ADD `records_changed` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE TABLE `redaction_jobs` (
	`job_id` text PRIMARY KEY NOT NULL REFERENCES `org_jobs`(`id`) ON DELETE cascade,
	`project_id` text NOT NULL,
	`start_micros` integer,
	`end_micros` integer,
	`policy` text NOT NULL,
	`phase` text DEFAULT 'records' NOT NULL,
	`cursor` text DEFAULT '' NOT NULL,
	`step` integer DEFAULT 0 NOT NULL
);
