-- Moves of projects between databases (docs/sharding.md, "Moving a project"): the change log
-- gets a version per id, and logs held updates and tombstones too; held updates are refused for a
-- project the shard does not hold for writing. The catalog's migration 0008 does the same.
ALTER TABLE `shard_project_changes` ADD `version` integer DEFAULT 0 NOT NULL;
--> statement-breakpoint
-- Moves (docs/sharding.md, "Moving a project"; src/shards/moves). While a project is being moved
-- off this database (state `exporting`, then `frozen`), every change of its records, held
-- updates and tombstones is logged in `shard_project_changes`, its version bumped, so the move
-- copies the id again; deletions go on while the project is frozen, so those are logged too.
DROP TRIGGER `records_changes_while_exporting_insert`;
--> statement-breakpoint
DROP TRIGGER `records_changes_while_exporting_update`;
--> statement-breakpoint
DROP TRIGGER `records_changes_while_exporting_delete`;
--> statement-breakpoint
CREATE TRIGGER `records_changes_while_exporting_insert`
AFTER INSERT ON `records`
WHEN (SELECT `state` FROM `shard_projects` WHERE `project_id` = NEW.`project_id`) IN ('exporting', 'frozen')
BEGIN
  INSERT INTO `shard_project_changes` (`project_id`, `record_id`, `version`) VALUES (NEW.`project_id`, NEW.`id`, 1)
  ON CONFLICT (`project_id`, `record_id`) DO UPDATE SET `version` = `version` + 1;
END;
--> statement-breakpoint
CREATE TRIGGER `records_changes_while_exporting_update`
AFTER UPDATE ON `records`
WHEN (SELECT `state` FROM `shard_projects` WHERE `project_id` = NEW.`project_id`) IN ('exporting', 'frozen')
BEGIN
  INSERT INTO `shard_project_changes` (`project_id`, `record_id`, `version`) VALUES (NEW.`project_id`, NEW.`id`, 1)
  ON CONFLICT (`project_id`, `record_id`) DO UPDATE SET `version` = `version` + 1;
END;
--> statement-breakpoint
CREATE TRIGGER `records_changes_while_exporting_delete`
AFTER DELETE ON `records`
WHEN (SELECT `state` FROM `shard_projects` WHERE `project_id` = OLD.`project_id`) IN ('exporting', 'frozen')
BEGIN
  INSERT INTO `shard_project_changes` (`project_id`, `record_id`, `version`) VALUES (OLD.`project_id`, OLD.`id`, 1)
  ON CONFLICT (`project_id`, `record_id`) DO UPDATE SET `version` = `version` + 1;
END;
--> statement-breakpoint
CREATE TRIGGER `record_patches_changes_while_exporting_insert`
AFTER INSERT ON `record_patches`
WHEN (SELECT `state` FROM `shard_projects` WHERE `project_id` = NEW.`project_id`) IN ('exporting', 'frozen')
BEGIN
  INSERT INTO `shard_project_changes` (`project_id`, `record_id`, `version`) VALUES (NEW.`project_id`, NEW.`record_id`, 1)
  ON CONFLICT (`project_id`, `record_id`) DO UPDATE SET `version` = `version` + 1;
END;
--> statement-breakpoint
CREATE TRIGGER `record_patches_changes_while_exporting_update`
AFTER UPDATE ON `record_patches`
WHEN (SELECT `state` FROM `shard_projects` WHERE `project_id` = NEW.`project_id`) IN ('exporting', 'frozen')
BEGIN
  INSERT INTO `shard_project_changes` (`project_id`, `record_id`, `version`) VALUES (NEW.`project_id`, NEW.`record_id`, 1)
  ON CONFLICT (`project_id`, `record_id`) DO UPDATE SET `version` = `version` + 1;
END;
--> statement-breakpoint
CREATE TRIGGER `record_patches_changes_while_exporting_delete`
AFTER DELETE ON `record_patches`
WHEN (SELECT `state` FROM `shard_projects` WHERE `project_id` = OLD.`project_id`) IN ('exporting', 'frozen')
BEGIN
  INSERT INTO `shard_project_changes` (`project_id`, `record_id`, `version`) VALUES (OLD.`project_id`, OLD.`record_id`, 1)
  ON CONFLICT (`project_id`, `record_id`) DO UPDATE SET `version` = `version` + 1;
END;
--> statement-breakpoint
CREATE TRIGGER `record_tombstones_changes_while_exporting_insert`
AFTER INSERT ON `record_tombstones`
WHEN (SELECT `state` FROM `shard_projects` WHERE `project_id` = NEW.`project_id`) IN ('exporting', 'frozen')
BEGIN
  INSERT INTO `shard_project_changes` (`project_id`, `record_id`, `version`) VALUES (NEW.`project_id`, NEW.`record_id`, 1)
  ON CONFLICT (`project_id`, `record_id`) DO UPDATE SET `version` = `version` + 1;
END;
--> statement-breakpoint
CREATE TRIGGER `record_tombstones_changes_while_exporting_delete`
AFTER DELETE ON `record_tombstones`
WHEN (SELECT `state` FROM `shard_projects` WHERE `project_id` = OLD.`project_id`) IN ('exporting', 'frozen')
BEGIN
  INSERT INTO `shard_project_changes` (`project_id`, `record_id`, `version`) VALUES (OLD.`project_id`, OLD.`record_id`, 1)
  ON CONFLICT (`project_id`, `record_id`) DO UPDATE SET `version` = `version` + 1;
END;
--> statement-breakpoint
-- Held updates, like records, are written only for a project this database holds for writing:
-- an update sent with a stale route to a frozen or given-away copy is refused and re-routed,
-- never held where nobody will read it.
CREATE TRIGGER `record_patches_project_on_shard_insert`
BEFORE INSERT ON `record_patches`
WHEN NOT EXISTS (SELECT 1 FROM `shard_projects` WHERE `project_id` = NEW.`project_id` AND `state` IN ('active', 'exporting', 'importing'))
BEGIN
  SELECT RAISE(ABORT, 'project_not_on_shard');
END;
--> statement-breakpoint
CREATE TRIGGER `record_patches_project_on_shard_update`
BEFORE UPDATE ON `record_patches`
WHEN NOT EXISTS (SELECT 1 FROM `shard_projects` WHERE `project_id` = NEW.`project_id` AND `state` IN ('active', 'exporting', 'importing'))
BEGIN
  SELECT RAISE(ABORT, 'project_not_on_shard');
END;
