-- The catalog's migration 0026 for data shards: one scorer's result on one record (issue 34).
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
