-- Time partitions (issue 32; contract section 13; docs/partitions.md).
-- 1. The catalog of partitions: each project's partitions, their shard, open or closed. Every
--    existing project becomes one open partition on its shard, from its creation: its rows stay
--    where they are, untouched (a partition is the catalog's row plus the records' tag, null for
--    the first partition). A project created by an older worker while this deploy rolls out gets
--    its partition from the first request that needs it (src/partitions/partition-catalog.ts).
CREATE TABLE `project_partitions` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`seq` integer NOT NULL,
	`shard` text NOT NULL,
	`state` text NOT NULL,
	`opened_at` integer NOT NULL,
	`closed_at` integer,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE no action
);--> statement-breakpoint
CREATE UNIQUE INDEX `project_partitions_project_seq` ON `project_partitions` (`project_id`,`seq`);--> statement-breakpoint
CREATE UNIQUE INDEX `project_partitions_open` ON `project_partitions` (`project_id`) WHERE state = 'open';--> statement-breakpoint
INSERT INTO `project_partitions` (`id`, `project_id`, `seq`, `shard`, `state`, `opened_at`, `closed_at`)
SELECT lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-'
             || substr('89ab', 1 + (abs(random()) % 4), 1) || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6))),
       `id`, 1, coalesce(`shard`, 'DB'), 'open', `created_at`, NULL
FROM `projects`;--> statement-breakpoint
-- 2. What every database holding records has (the catalog serves as a shard too): the same as
--    migrations/shard/0016_partitions.sql.
ALTER TABLE `records` ADD `partition_seq` integer;--> statement-breakpoint
CREATE TABLE `shard_partitions` (
	`project_id` text NOT NULL,
	`seq` integer NOT NULL,
	`partition_id` text NOT NULL,
	`roots` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`project_id`, `seq`)
);--> statement-breakpoint
-- A root (a session, or a trace without one) counted in its partition's row, in the statement
-- that writes it. The row is made by the head of every write batch; before it exists (a partition
-- migrated from before partitions) nothing is counted, and a delete never takes the count below 0.
CREATE TRIGGER `records_partition_roots_insert`
AFTER INSERT ON `records`
WHEN NEW.`record_type` = 'session' OR (NEW.`record_type` = 'trace' AND NEW.`session_id` IS NULL)
BEGIN
  UPDATE `shard_partitions` SET `roots` = `roots` + 1 WHERE `project_id` = NEW.`project_id` AND `seq` = coalesce(NEW.`partition_seq`, 1);
END;--> statement-breakpoint
CREATE TRIGGER `records_partition_roots_delete`
AFTER DELETE ON `records`
WHEN OLD.`record_type` = 'session' OR (OLD.`record_type` = 'trace' AND OLD.`session_id` IS NULL)
BEGIN
  UPDATE `shard_partitions` SET `roots` = max(`roots` - 1, 0) WHERE `project_id` = OLD.`project_id` AND `seq` = coalesce(OLD.`partition_seq`, 1);
END;--> statement-breakpoint
-- A trace that gains a session (or loses it) stops (starts) being a root.
CREATE TRIGGER `records_partition_roots_session`
AFTER UPDATE OF `session_id` ON `records`
WHEN NEW.`record_type` = 'trace' AND ((OLD.`session_id` IS NULL) <> (NEW.`session_id` IS NULL))
BEGIN
  UPDATE `shard_partitions` SET `roots` = max(`roots` + CASE WHEN NEW.`session_id` IS NULL THEN 1 ELSE -1 END, 0)
  WHERE `project_id` = NEW.`project_id` AND `seq` = coalesce(NEW.`partition_seq`, 1);
END;
