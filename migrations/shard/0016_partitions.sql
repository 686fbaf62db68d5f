-- The catalog's migration 0024 for data shards: time partitions (issue 32; contract section 13;
-- docs/partitions.md). Each record says which of its project's partitions holds it (null: the
-- first; an added column rewrites no row), and each partition's roots are counted here, by the
-- records' own triggers, never in the catalog.
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
