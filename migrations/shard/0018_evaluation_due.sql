-- The catalog's migration 0027 for data shards.
-- When a pending scorer result is due (issue 34, docs/evaluations.md "Deferred results"): a
-- result left `pending` (the scorer's daily budget spent, the integration's pace, a judge to
-- retry) says when it is to be scored again; a delayed queue message normally does it, and the
-- minutely cron picks up those whose message never came (src/evaluations/due-results.ts).
-- Null for final results. Existing pending rows are due at once: an added column rewrites no
-- row, and the update touches only pending ones.
ALTER TABLE `evaluation_results` ADD `due_at` integer;--> statement-breakpoint
UPDATE `evaluation_results` SET `due_at` = `updated_at` WHERE `status` = 'pending';--> statement-breakpoint
-- The cron's sweep: pending results by due time, nothing else in the index.
CREATE INDEX `evaluation_results_due` ON `evaluation_results` (`due_at`) WHERE `status` = 'pending';
