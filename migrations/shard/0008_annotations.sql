-- Annotations and feedback (issue 20; docs/annotations.md): a project's annotation templates and
-- the ratings people give its records, kept beside the records (the catalog's migration 0012 does
-- the same, word for word). Ratings are keyed by their record and go with it by ON DELETE CASCADE
-- in every deletion path's own chunks; templates are removed by their own bounded chunks.
CREATE TABLE `annotation_ratings` (
	`record_rid` integer NOT NULL,
	`template_id` text NOT NULL,
	`annotator_id` text NOT NULL,
	`project_id` text NOT NULL,
	`record_id` text NOT NULL,
	`family_key` integer NOT NULL,
	`record_created_at` integer NOT NULL,
	`value` text NOT NULL,
	`num_value` real,
	`explanation` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`record_rid`, `template_id`, `annotator_id`),
	FOREIGN KEY (`record_rid`) REFERENCES `records`(`rid`) ON UPDATE no action ON DELETE cascade
) WITHOUT ROWID;
--> statement-breakpoint
CREATE INDEX `annotation_ratings_template_order` ON `annotation_ratings` (`template_id`,`family_key`,`record_created_at`,`record_id`,`num_value`);
--> statement-breakpoint
CREATE TABLE `annotation_templates` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`project_id` text NOT NULL,
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
CREATE UNIQUE INDEX `annotation_templates_project_name` ON `annotation_templates` (`project_id`,`name`) WHERE deleted_at IS NULL;
--> statement-breakpoint
CREATE INDEX `annotation_templates_project_position` ON `annotation_templates` (`project_id`,`position`);
--> statement-breakpoint
CREATE INDEX `annotation_templates_deleted` ON `annotation_templates` (`deleted_at`) WHERE deleted_at IS NOT NULL;

--> statement-breakpoint
-- A shard takes template and rating writes only for a project it holds for writing, as it does
-- for records (docs/sharding.md, "Routing"): a stale route's write rolls back and is re-routed.
CREATE TRIGGER `annotation_templates_project_on_shard_insert`
BEFORE INSERT ON `annotation_templates`
WHEN NOT EXISTS (SELECT 1 FROM `shard_projects` WHERE `project_id` = NEW.`project_id` AND `state` IN ('active', 'exporting', 'importing'))
BEGIN
  SELECT RAISE(ABORT, 'project_not_on_shard');
END;
--> statement-breakpoint
CREATE TRIGGER `annotation_templates_project_on_shard_update`
BEFORE UPDATE ON `annotation_templates`
WHEN NOT EXISTS (SELECT 1 FROM `shard_projects` WHERE `project_id` = NEW.`project_id` AND `state` IN ('active', 'exporting', 'importing'))
BEGIN
  SELECT RAISE(ABORT, 'project_not_on_shard');
END;
--> statement-breakpoint
CREATE TRIGGER `annotation_ratings_project_on_shard_insert`
BEFORE INSERT ON `annotation_ratings`
WHEN NOT EXISTS (SELECT 1 FROM `shard_projects` WHERE `project_id` = NEW.`project_id` AND `state` IN ('active', 'exporting', 'importing'))
BEGIN
  SELECT RAISE(ABORT, 'project_not_on_shard');
END;
--> statement-breakpoint
CREATE TRIGGER `annotation_ratings_project_on_shard_update`
BEFORE UPDATE ON `annotation_ratings`
WHEN NOT EXISTS (SELECT 1 FROM `shard_projects` WHERE `project_id` = NEW.`project_id` AND `state` IN ('active', 'exporting', 'importing'))
BEGIN
  SELECT RAISE(ABORT, 'project_not_on_shard');
END;
--> statement-breakpoint
-- The rating rows repeat their record's created_at (the order an annotation filter walks them
-- in): a record whose created_at changes carries its ratings along.
CREATE TRIGGER `annotation_ratings_follow_created_at`
AFTER UPDATE OF `created_at` ON `records`
WHEN OLD.`created_at` IS NOT NEW.`created_at`
BEGIN
  UPDATE `annotation_ratings` SET `record_created_at` = NEW.`created_at` WHERE `record_rid` = NEW.`rid`;
END;
--> statement-breakpoint
-- Moves (docs/sharding.md, "Moving a project"): a rating changed while its project is exporting
-- or frozen logs its record's id, so the move copies the record again with its ratings; a
-- template changed logs `annotation_template:<id>`, which the move copies as a template.
CREATE TRIGGER `annotation_ratings_changes_while_exporting_insert`
AFTER INSERT ON `annotation_ratings`
WHEN (SELECT `state` FROM `shard_projects` WHERE `project_id` = NEW.`project_id`) IN ('exporting', 'frozen')
BEGIN
  INSERT INTO `shard_project_changes` (`project_id`, `record_id`, `version`) VALUES (NEW.`project_id`, NEW.`record_id`, 1)
  ON CONFLICT (`project_id`, `record_id`) DO UPDATE SET `version` = `version` + 1;
END;
--> statement-breakpoint
CREATE TRIGGER `annotation_ratings_changes_while_exporting_update`
AFTER UPDATE ON `annotation_ratings`
WHEN (SELECT `state` FROM `shard_projects` WHERE `project_id` = NEW.`project_id`) IN ('exporting', 'frozen')
BEGIN
  INSERT INTO `shard_project_changes` (`project_id`, `record_id`, `version`) VALUES (NEW.`project_id`, NEW.`record_id`, 1)
  ON CONFLICT (`project_id`, `record_id`) DO UPDATE SET `version` = `version` + 1;
END;
--> statement-breakpoint
CREATE TRIGGER `annotation_ratings_changes_while_exporting_delete`
AFTER DELETE ON `annotation_ratings`
WHEN (SELECT `state` FROM `shard_projects` WHERE `project_id` = OLD.`project_id`) IN ('exporting', 'frozen')
BEGIN
  INSERT INTO `shard_project_changes` (`project_id`, `record_id`, `version`) VALUES (OLD.`project_id`, OLD.`record_id`, 1)
  ON CONFLICT (`project_id`, `record_id`) DO UPDATE SET `version` = `version` + 1;
END;
--> statement-breakpoint
CREATE TRIGGER `annotation_templates_changes_while_exporting_insert`
AFTER INSERT ON `annotation_templates`
WHEN (SELECT `state` FROM `shard_projects` WHERE `project_id` = NEW.`project_id`) IN ('exporting', 'frozen')
BEGIN
  INSERT INTO `shard_project_changes` (`project_id`, `record_id`, `version`) VALUES (NEW.`project_id`, 'annotation_template:' || NEW.`id`, 1)
  ON CONFLICT (`project_id`, `record_id`) DO UPDATE SET `version` = `version` + 1;
END;
--> statement-breakpoint
CREATE TRIGGER `annotation_templates_changes_while_exporting_update`
AFTER UPDATE ON `annotation_templates`
WHEN (SELECT `state` FROM `shard_projects` WHERE `project_id` = NEW.`project_id`) IN ('exporting', 'frozen')
BEGIN
  INSERT INTO `shard_project_changes` (`project_id`, `record_id`, `version`) VALUES (NEW.`project_id`, 'annotation_template:' || NEW.`id`, 1)
  ON CONFLICT (`project_id`, `record_id`) DO UPDATE SET `version` = `version` + 1;
END;
--> statement-breakpoint
CREATE TRIGGER `annotation_templates_changes_while_exporting_delete`
AFTER DELETE ON `annotation_templates`
WHEN (SELECT `state` FROM `shard_projects` WHERE `project_id` = OLD.`project_id`) IN ('exporting', 'frozen')
BEGIN
  INSERT INTO `shard_project_changes` (`project_id`, `record_id`, `version`) VALUES (OLD.`project_id`, 'annotation_template:' || OLD.`id`, 1)
  ON CONFLICT (`project_id`, `record_id`) DO UPDATE SET `version` = `version` + 1;
END;
