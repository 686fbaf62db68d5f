-- Annotation queues (issue 20, contract section 8 "Queues"; docs/annotations.md). The queue, its
-- users (roles) and its templates are organization-wide and live here in the catalog; the queue's
-- entries live on each record's shard (below, the same as the shard's migration 0010, word for
-- word, since the catalog serves as a shard too).
CREATE TABLE `annotation_queues` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`name` text NOT NULL,
	`description` text,
	`created_by` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`next_seq` integer DEFAULT 0 NOT NULL,
	`deleted_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `annotation_queues_organization_name` ON `annotation_queues` (`organization_id`,`name`) WHERE deleted_at IS NULL;
--> statement-breakpoint
CREATE INDEX `annotation_queues_organization_created` ON `annotation_queues` (`organization_id`,`created_at`);
--> statement-breakpoint
CREATE INDEX `annotation_queues_deleted` ON `annotation_queues` (`deleted_at`) WHERE deleted_at IS NOT NULL;
--> statement-breakpoint
CREATE TABLE `annotation_queue_users` (
	`queue_id` text NOT NULL,
	`user_id` text NOT NULL,
	`role` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`queue_id`, `user_id`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE INDEX `annotation_queue_users_user` ON `annotation_queue_users` (`user_id`);
--> statement-breakpoint
CREATE TABLE `annotation_queue_templates` (
	`id` text PRIMARY KEY NOT NULL,
	`queue_id` text NOT NULL,
	`name` text NOT NULL,
	`annotation_type` text NOT NULL,
	`constraints` text NOT NULL,
	`include_explanation` integer DEFAULT 0 NOT NULL,
	`criteria` text,
	`position` integer NOT NULL,
	`created_by` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`deleted_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `annotation_queue_templates_queue_name` ON `annotation_queue_templates` (`queue_id`,`name`) WHERE deleted_at IS NULL;
--> statement-breakpoint
CREATE INDEX `annotation_queue_templates_queue_position` ON `annotation_queue_templates` (`queue_id`,`position`);
--> statement-breakpoint
CREATE INDEX `annotation_queue_templates_deleted` ON `annotation_queue_templates` (`deleted_at`) WHERE deleted_at IS NOT NULL;
--> statement-breakpoint
-- The projects a queue holds records of: a queue's search, progress and deletion reach exactly
-- their shards (found through each project's route, so a moved project is followed).
CREATE TABLE `annotation_queue_projects` (
	`queue_id` text NOT NULL,
	`project_id` text NOT NULL,
	`added_at` integer NOT NULL,
	PRIMARY KEY(`queue_id`, `project_id`)
) WITHOUT ROWID;
--> statement-breakpoint
-- Queue entries (docs/annotations.md, "Annotation queues"): a queue is organization-wide (its row,
-- users and templates are in the catalog), but each of its records is listed on the record's own
-- shard, beside the record, so an entry goes with its record by ON DELETE CASCADE in the very
-- statement (and chunk) of every deletion path, and a move carries it with the record. `seq` is
-- handed out by the catalog's queue row (annotation_queues.next_seq), so "as added" order holds
-- across shards: a queue's search merges its shards' entries by seq.
CREATE TABLE `annotation_queue_entries` (
	`record_rid` integer NOT NULL,
	`queue_id` text NOT NULL,
	`seq` integer NOT NULL,
	`project_id` text NOT NULL,
	`record_id` text NOT NULL,
	`added_at` integer NOT NULL,
	PRIMARY KEY(`record_rid`, `queue_id`),
	FOREIGN KEY (`record_rid`) REFERENCES `records`(`rid`) ON UPDATE no action ON DELETE cascade
) WITHOUT ROWID;
--> statement-breakpoint
CREATE INDEX `annotation_queue_entries_order` ON `annotation_queue_entries` (`queue_id`,`project_id`,`seq`);
--> statement-breakpoint
CREATE UNIQUE INDEX `annotation_queue_entries_record_id` ON `annotation_queue_entries` (`queue_id`,`record_id`);
--> statement-breakpoint
-- As for ratings: a shard takes entries only for a project it holds for writing.
CREATE TRIGGER `annotation_queue_entries_project_on_shard_insert`
BEFORE INSERT ON `annotation_queue_entries`
WHEN NOT EXISTS (SELECT 1 FROM `shard_projects` WHERE `project_id` = NEW.`project_id` AND `state` IN ('active', 'exporting', 'importing'))
BEGIN
  SELECT RAISE(ABORT, 'project_not_on_shard');
END;
--> statement-breakpoint
-- Moves: an entry added or removed while its project is exporting or frozen logs its record's id,
-- so the move copies the record again with its entries.
CREATE TRIGGER `annotation_queue_entries_changes_while_exporting_insert`
AFTER INSERT ON `annotation_queue_entries`
WHEN (SELECT `state` FROM `shard_projects` WHERE `project_id` = NEW.`project_id`) IN ('exporting', 'frozen')
BEGIN
  INSERT INTO `shard_project_changes` (`project_id`, `record_id`, `version`) VALUES (NEW.`project_id`, NEW.`record_id`, 1)
  ON CONFLICT (`project_id`, `record_id`) DO UPDATE SET `version` = `version` + 1;
END;
--> statement-breakpoint
CREATE TRIGGER `annotation_queue_entries_changes_while_exporting_delete`
AFTER DELETE ON `annotation_queue_entries`
WHEN (SELECT `state` FROM `shard_projects` WHERE `project_id` = OLD.`project_id`) IN ('exporting', 'frozen')
BEGIN
  INSERT INTO `shard_project_changes` (`project_id`, `record_id`, `version`) VALUES (OLD.`project_id`, OLD.`record_id`, 1)
  ON CONFLICT (`project_id`, `record_id`) DO UPDATE SET `version` = `version` + 1;
END;
