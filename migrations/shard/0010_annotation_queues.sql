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
