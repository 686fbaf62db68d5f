-- The catalog's migration 0029 for data shards.
-- Scoring intake markers (issue 34: no evaluator stuck without saying why; docs/evaluations.md
-- "Deferred results"): a write of records to a run with scorers leaves, in the same batch as the
-- records, one row per queue message it will send (at most 500 ids), due a grace after the
-- write. The consumer deletes the row once the message is handled; the minutely cron sends again
-- the rows still there past due (the send after the write failed or never ran, or the message
-- was dropped after its retries), so a record written is scored or says why. A new table: safe
-- on a database that holds data.
CREATE TABLE `evaluation_intake` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`project_id` text NOT NULL,
	`run_id` text NOT NULL,
	`record_ids` text NOT NULL,
	`due_at` integer NOT NULL,
	`sends` integer DEFAULT 0 NOT NULL
);--> statement-breakpoint
-- The cron's sweep: markers by due time.
CREATE INDEX `evaluation_intake_due` ON `evaluation_intake` (`due_at`);
